// hello: the smallest useful plugin. It declares one configuration key, one route that needs no
// credential, and one that needs an identity; svcd loads it from plugins.dir.
#include <svc/sdk/plugin.h>

namespace hello {

class HelloPlugin : public svc::sdk::Plugin {
 public:
  HelloPlugin() {
    info_.name = "hello";
    info_.version = "1.0.0";
    info_.description = "Says hello: an example of a third-party plugin.";
    info_.config = {{"hello.greeting", "Hello", "the word hello says", false}};
  }

  const svc::sdk::PluginInfo& info() const override { return info_; }

  void configure(svc::sdk::PluginContext& context) override {
    greeting_ = context.config().getString("hello.greeting");
    context.logger().information("hello configured");
  }

  std::vector<svc::sdk::Migration> migrations() const override { return {}; }

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
  }

  void registerServices(svc::sdk::ServiceRegistry&) override {}
  void start() override {}
  void stop() override {}

 private:
  svc::sdk::PluginInfo info_;
  std::string greeting_;
};

}  // namespace hello

SVC_PLUGIN(hello::HelloPlugin)
