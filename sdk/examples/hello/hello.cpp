// hello: the smallest useful plugin. It declares one configuration key, one event type and one
// metric; one route needs no credential, and one needs a key and publishes `hello.greeted` (which
// `GET /api/events/stream/?types=hello.greeted` selects). When the identities plugin is enabled,
// hello adds its part to every identity (identity_part.h), when the dashboard is, a page of
// greetings; its svcctl commands are in cli.cpp.
// svcd loads it from plugins.dir; nothing outside this folder changes to add it.
#include "identity_part.h"

#include <svc/sdk/dashboard.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/util.h>

namespace hello {

class HelloPlugin : public svc::sdk::Plugin {
 public:
  HelloPlugin() {
    info_.name = "hello";
    info_.version = "1.0.0";
    info_.description = "Says hello: an example of a third-party plugin.";
    info_.config = {{"hello.greeting", "Hello", "the word hello says", false}};
    // Every event type the plugin publishes is declared: the kernel knows no others.
    info_.events = {{"hello.greeted", "Someone was greeted; object: the greeting.", {}}};
    // Used when the identities and dashboard plugins are enabled; hello requires neither.
    info_.uses_services = {svc::sdk::kIdentityExtensionsService.name,
                           svc::sdk::kDashboardPagesService.name};
  }

  const svc::sdk::PluginInfo& info() const override { return info_; }

  void configure(svc::sdk::PluginContext& context) override {
    context_ = &context;
    greeting_ = context.config().getString("hello.greeting");
    // Served on the operator's GET /metrics; a plugin's names begin with svc_<plugin>_.
    greeted_ = context.metrics().counter("svc_hello_greetings_total", "greetings published");
    // A plugin reads only its own keys and those others declare shared: say which it sees
    // (public.base_url, data.dir, server.host, server.port, hello.*; never admin.token or db.url).
    std::vector<std::string> visible;
    listKeys(context.config(), "", visible);
    std::string list;
    for (const auto& key : visible) list += (list.empty() ? "" : " ") + key;
    context.logger().information("hello configured; it sees " + list);
  }

  std::vector<svc::sdk::Migration> migrations() const override {
    return {svc::sdk::Migration::portable(
        1, "greetings chosen for identities",
        {"CREATE TABLE hello_greetings (identity_uuid CHAR(36) NOT NULL PRIMARY KEY, "
         "greeting VARCHAR(160) NOT NULL)"})};
  }

  void registerRoutes(svc::sdk::RouteRegistry& routes) override {
    svc::sdk::Route route;
    route.method = "GET";
    route.pattern = "/api/hello/";
    route.auth = svc::sdk::AuthNeed::kNone;
    route.summary = "Greets whoever asks.";
    route.handler = [this](svc::sdk::Request& request) {
      Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
      body->set("message", greeting_ + ", " + request.queryParam("name").value_or("world") + "!");
      return svc::sdk::Response::json(200, body);
    };
    routes.add(route);

    svc::sdk::Route greet;
    greet.method = "POST";
    greet.pattern = "/api/hello/greetings/";
    greet.auth = svc::sdk::AuthNeed::kAnyKey;
    greet.summary = "Greets {\"name\"} and publishes hello.greeted to the caller's account.";
    greet.handler = [this](svc::sdk::Request& request) {
      // Fields are read through the SDK: a wrong type is 400 naming the field.
      const std::string name = request.stringField("name").value_or("world");
      if (name.empty() || name.size() > 100 || svc::sdk::hasControlCharacter(name)) {
        throw svc::sdk::HttpError::invalid("name", "1-100 bytes, no control characters");
      }
      Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
      body->set("message", greeting_ + ", " + name + "!");
      context_->events().publish("hello.greeted", request.principal.account_id,
                                 request.identity ? request.identity->uuid : "", body, nullptr);
      greeted_->increment();
      return svc::sdk::Response::json(201, body);
    };
    routes.add(greet);
  }

  void registerServices(svc::sdk::ServiceRegistry&) override {}
  // A service of a plugin hello does not require is looked up in start() (see services.h).
  void start() override {
    if (auto identities = context_->services().find(svc::sdk::kIdentityExtensionsService)) {
      identities->add(std::make_shared<HelloIdentityPart>(*context_, greeting_));
    }
    // A page in the dashboard's navigation: each identity's greeting (svc/sdk/dashboard.h).
    if (auto pages = context_->services().find(svc::sdk::kDashboardPagesService)) {
      svc::sdk::DashboardPage page;
      page.path = "/hello";
      page.title = page.nav_label = "Greetings";
      page.script = R"JS(
svc.api('/api/identities/?limit=200').then(function (d) {
  svc.show([svc.table(['Identity', 'Greeting'], d.results.map(function (i) {
    var row = svc.el('tr');
    row.appendChild(svc.el('td', i.name));
    row.appendChild(svc.el('td', i.hello ? i.hello.greeting + ', ' + i.name + '!' : '—'));
    return row;
  }))]);
}).catch(svc.fail);
)JS";
      pages->add(page);
    }
  }
  void stop() override {}

 private:
  static void listKeys(const Poco::Util::AbstractConfiguration& config, const std::string& under,
                       std::vector<std::string>& out) {
    Poco::Util::AbstractConfiguration::Keys children;
    config.keys(under, children);
    if (children.empty() && !under.empty()) out.push_back(under);
    for (const auto& child : children) {
      listKeys(config, under.empty() ? child : under + "." + child, out);
    }
  }

  svc::sdk::PluginInfo info_;
  svc::sdk::PluginContext* context_ = nullptr;
  std::string greeting_;
  std::shared_ptr<svc::sdk::Counter> greeted_;
};

}  // namespace hello

SVC_PLUGIN(hello::HelloPlugin)
