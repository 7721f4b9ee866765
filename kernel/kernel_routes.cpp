#include "kernel_routes.h"

#include "api_reference.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/String.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

namespace svc::kernel {

namespace {

// Health asks the database at most every half second; requests in between see the last answer,
// so a load balancer checking every second or two sees a lost database (or a Galera node without
// quorum, which SqlDatabase::ping counts as not ready) at its next check.
class DatabaseHealth {
 public:
  explicit DatabaseHealth(SqlDatabase& db) : db_(db) {
    ok_ = db_.ping();
    checked_us_ = sdk::nowMicros();
  }
  bool check() {
    std::int64_t now = sdk::nowMicros(), last = checked_us_.load();
    if (now - last >= 500000 && checked_us_.compare_exchange_strong(last, now)) {
      ok_ = db_.ping();
    }
    return ok_.load();
  }

 private:
  SqlDatabase& db_;
  std::atomic<std::int64_t> checked_us_{0};
  std::atomic<bool> ok_{false};
};

// The event stream (Server-Sent Events): held in the hub, fed by the event log's thread.
sdk::Response eventStream(sdk::Request& r, EventLog& events, EventTypeRegistry& event_types) {
  std::int64_t resume = -1;
  auto last = r.header("last-event-id");
  if (!last || last->empty()) last = r.queryParam("last_event_id");
  if (last && !last->empty()) {
    const bool digits =
        last->size() <= 18 && last->find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
      throw sdk::HttpError::invalid("last_event_id", "must be the id of an event this stream sent");
    }
    resume = std::stoll(*last);
  }
  StreamFilter filter;
  filter.account = r.principal.account_id;
  if (r.principal.kind == sdk::PrincipalKind::kIdentity) {
    filter.identity = r.principal.bound_identity;
  } else if (r.identity) {
    filter.identity = r.identity->uuid;
  }
  if (auto types = r.queryParam("types")) {
    std::size_t at = 0;
    while (at <= types->size()) {
      std::size_t end = types->find(',', at);
      if (end == std::string::npos) end = types->size();
      std::string type = Poco::trim(types->substr(at, end - at));
      if (!type.empty()) {
        // Only what the loaded plugins declare (and the kernel's own).
        if (!event_types.known(type)) {
          throw sdk::HttpError::invalid("types", "unknown event type '" + type.substr(0, 64) +
                                                     "': no enabled plugin declares it");
        }
        filter.types.insert(type);
      }
      at = end + 1;
    }
  }
  // "From now" is fixed before the client sees the stream open: whatever happens after that is
  // delivered, even if the event thread is a moment behind. A resume point past every stored
  // event (from the future) starts at the present too.
  const std::int64_t newest = events.newest();
  if (resume < 0 || resume > newest) resume = newest;
  return sdk::Response::hold([&events, filter, resume](std::shared_ptr<sdk::Stream> s) {
    s->begin(200, "text/event-stream",
             {{"Cache-Control", "no-store"}, {"X-Accel-Buffering", "no"}});
    // The opening frame carries the position the stream starts from: a client that loses the
    // connection before any event reaches it resumes there (Last-Event-ID), missing nothing.
    s->write("retry: 3000\nid: " + std::to_string(resume) + "\n\n");
    events.addStream(std::move(s), filter, resume);
  });
}

sdk::Schema healthSchema() {
  using sdk::Schema;
  return Schema::object("Health")
      .required("status", Schema::oneOf({"ok", "unavailable"}))
      .required("database", Schema::oneOf({"ok", "unreachable"}))
      .required("plugins", Schema::array(Schema::object("PluginVersion")
                                             .required("name", Schema::string())
                                             .required("version", Schema::string())));
}

// The plugins' names and versions as JSON: fixed once svcd runs, so written once.
std::string pluginVersions(PluginHost& host) {
  Poco::JSON::Array list;
  for (const auto& p : host.plugins()) {
    Poco::JSON::Object::Ptr item = new Poco::JSON::Object;
    item->set("name", p->name);
    item->set("version", p->plugin->info().version);
    list.add(item);
  }
  std::ostringstream out;
  list.stringify(out);
  return out.str();
}

Poco::JSON::Array::Ptr array(const std::vector<std::string>& items) {
  Poco::JSON::Array::Ptr a = new Poco::JSON::Array;
  for (const auto& i : items) a->add(i);
  return a;
}

Poco::JSON::Object::Ptr pluginJson(const LoadedPlugin& p) {
  Poco::JSON::Object::Ptr item = new Poco::JSON::Object;
  const auto& info = p.plugin->info();
  item->set("name", p.name);
  item->set("version", info.version);
  item->set("description", info.description);
  item->set("status", statusName(p.status));
  item->set("file", p.file);
  item->set("requires", array(info.requires_plugins));
  Poco::JSON::Array::Ptr event_list = new Poco::JSON::Array;
  for (auto& t : info.events) {
    Poco::JSON::Object::Ptr e = new Poco::JSON::Object;
    e->set("type", t.name);
    e->set("description", t.description);
    event_list->add(e);
  }
  item->set("events", event_list);
  item->set("offers_services", array(info.offers_services));
  item->set("uses_services", array(info.uses_services));
  item->set("routes", array(p.routes));
  Poco::JSON::Array::Ptr endpoints = new Poco::JSON::Array;
  for (auto& r : p.route_info) {
    Poco::JSON::Object::Ptr e = new Poco::JSON::Object;
    e->set("method", r.method);
    e->set("path", r.pattern);
    e->set("auth", r.auth);
    e->set("summary", r.summary);
    endpoints->add(e);
  }
  item->set("endpoints", endpoints);
  return item;
}

sdk::Response advanceClock(sdk::Request& r) {
  if (!r.json || !r.json->has("advance_seconds") || !r.json->get("advance_seconds").isNumeric()) {
    throw sdk::HttpError::invalid("advance_seconds", "a number is required");
  }
  double seconds = r.json->getValue<double>("advance_seconds");
  if (seconds < 0 || seconds > 1e9) throw sdk::HttpError::invalid("advance_seconds", "0 to 1e9");
  sdk::advanceClockForTesting(static_cast<std::int64_t>(seconds * 1e6));
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("now", sdk::isoTimestamp(sdk::nowMicros()));
  return sdk::Response::json(200, body);
}

}  // namespace

void addKernelRoutes(Router& router, EventLog& events, EventTypeRegistry& event_types,
                     PluginHost& host, SqlDatabase& db, const ApiInfo& info) {
  // Routes are fixed once svcd serves: the description is made once, on first request, in its
  // three forms.
  struct Description {
    std::once_flag once;
    std::string json, text, html;
  };
  auto description = std::make_shared<Description>();
  auto made = [&router, &event_types, info, description]() -> const Description& {
    std::call_once(description->once, [&] {
      const auto doc = openApiDocument(router, event_types, info);
      std::ostringstream out;
      doc->stringify(out);
      description->json = out.str();
      description->text = textReference(doc);
      description->html = htmlReference(doc);
    });
    return *description;
  };
  auto describeRoute = [&router](const char* pattern, const char* summary, const char* type,
                                 std::function<std::string(const Description&)> pick,
                                 std::function<const Description&()> get) {
    router.add(
        {"GET",
         pattern,
         sdk::AuthNeed::kNone,
         sdk::BodyKind::kJson,
         0,
         summary,
         [type, pick, get](sdk::Request&) { return sdk::Response::text(200, pick(get()), type); },
         std::nullopt,
         std::vector<sdk::Param>{},
         {{200,
           std::string(type).rfind("application/json", 0) == 0
               ? sdk::Schema::any()
               : sdk::Schema::bytes(std::string(type).substr(0, std::string(type).find(';')))}}},
        "kernel");
  };
  describeRoute(
      "/api/schema/", "This API's description: OpenAPI 3.1, every route of every enabled plugin.",
      "application/json", [](const Description& d) { return d.json; }, made);
  describeRoute(
      "/api/schema/reference.txt",
      "The same as plain text, every route with an example call, to read in one go.",
      "text/plain; charset=utf-8", [](const Description& d) { return d.text; }, made);
  describeRoute(
      "/api/docs/", "The same as a web page.", "text/html; charset=utf-8",
      [](const Description& d) { return d.html; }, made);
  using sdk::Schema;
  router.add(
      {"GET",
       "/api/events/stream/",
       sdk::AuthNeed::kAnyKey,
       sdk::BodyKind::kJson,
       0,
       "Live events (Server-Sent Events, each `data` an event as the webhooks section shows), "
       "resumable with Last-Event-ID.",
       [&events, &event_types](sdk::Request& r) { return eventStream(r, events, event_types); },
       std::nullopt,
       std::vector<sdk::Param>{
           {"types", Schema::string().maxLength(4096), false,
            "Comma list of event types to receive (default: all)."},
           {"last_event_id", Schema::string().pattern("^[0-9]{1,18}$", "must be an event's id"),
            false, "Resume after this event (as the Last-Event-ID header does)."}},
       {{200, Schema::bytes("text/event-stream")
                  .describe("Server-Sent Events: `id`, `event` (the type) and `data` lines.")}}},
      "kernel");
  auto health = std::make_shared<DatabaseHealth>(db);
  auto plugins_once = std::make_shared<std::once_flag>();
  auto plugins = std::make_shared<std::string>();
  router.add({"GET",
              "/api/health/",
              sdk::AuthNeed::kNone,
              sdk::BodyKind::kJson,
              0,
              "Liveness, database reachability and the loaded plugins.",
              [&host, health, plugins_once, plugins](sdk::Request&) {
                // The plugin list is fixed once svcd runs; only the database part changes.
                std::call_once(*plugins_once, [&] { *plugins = pluginVersions(host); });
                bool db_ok = health->check();
                return sdk::Response::text(db_ok ? 200 : 503,
                                           std::string("{\"database\":\"") +
                                               (db_ok ? "ok" : "unreachable") +
                                               "\",\"plugins\":" + *plugins + ",\"status\":\"" +
                                               (db_ok ? "ok" : "unavailable") + "\"}",
                                           "application/json");
              },
              std::nullopt,
              std::vector<sdk::Param>{},
              {{200, healthSchema()}, {503, healthSchema()}}},
             "kernel");
}

void addOperatorRoutes(Router& router, Metrics& metrics, PluginHost& host, bool testing_clock) {
  router.add(
      {"GET", "/metrics", sdk::AuthNeed::kOperator, sdk::BodyKind::kJson, 0, "Prometheus metrics.",
       [&metrics](sdk::Request&) {
         return sdk::Response::text(200, metrics.render(), "text/plain; version=0.0.4");
       }},
      "kernel");
  if (testing_clock) {
    router.add({"POST", "/admin/clock/", sdk::AuthNeed::kOperator, sdk::BodyKind::kJson, 0,
                "Tests only: move the clock forward by advance_seconds.", advanceClock},
               "kernel");
  }
  router.add({"GET", "/admin/plugins", sdk::AuthNeed::kOperator, sdk::BodyKind::kJson, 0,
              "Loaded plugins: name, version, status, routes.",
              [&host](sdk::Request&) {
                Poco::JSON::Array::Ptr list = new Poco::JSON::Array;
                for (const auto& p : host.plugins()) list->add(pluginJson(*p));
                Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
                body->set("plugins", list);
                return sdk::Response::json(200, body);
              }},
             "kernel");
}

}  // namespace svc::kernel
