// testkit: a plugin for the kernel's own tests. It offers a fake Authenticator and
// IdentityDirectory with fixed credentials (the auth plugin provides the real ones), and routes
// that exercise every part of the pipeline: parameters, bodies, failures, storage, held responses.
#include <svc/sdk/plugin.h>
#include <svc/sdk/util.h>

#include <Poco/Data/DataException.h>
#include <Poco/Data/Session.h>
#include <Poco/JSON/Array.h>
#include <Poco/NumberParser.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

using namespace Poco::Data::Keywords;

namespace svc::plugins::testkit {

constexpr const char* kAccountA = "aaaaaaaa-0000-4000-8000-000000000000";
constexpr const char* kAccountB = "bbbbbbbb-0000-4000-8000-000000000000";
constexpr const char* kIdentityA1 = "a1a1a1a1-0000-4000-8000-000000000001";
constexpr const char* kIdentityA2 = "a2a2a2a2-0000-4000-8000-000000000002";
constexpr const char* kIdentityB1 = "b1b1b1b1-0000-4000-8000-000000000001";

class FixedAuthenticator : public sdk::Authenticator {
 public:
  std::optional<sdk::Principal> authenticate(const sdk::Credentials& c) override {
    const std::string prefix = "Bearer ";
    if (c.authorization.rfind(prefix, 0) != 0) return std::nullopt;
    std::string token = c.authorization.substr(prefix.size());
    sdk::Principal p;
    if (token == "mgmt-A") {
      p.kind = sdk::PrincipalKind::kManagement;
      p.account_id = kAccountA;
      p.key_id = "key-mgmt-a";
    } else if (token == "mgmt-B") {
      p.kind = sdk::PrincipalKind::kManagement;
      p.account_id = kAccountB;
      p.key_id = "key-mgmt-b";
    } else if (token == "id-A1") {
      p.kind = sdk::PrincipalKind::kIdentity;
      p.account_id = kAccountA;
      p.bound_identity = kIdentityA1;
      p.key_id = "key-id-a1";
    } else if (token == "user-A") {
      p.kind = sdk::PrincipalKind::kUser;
      p.account_id = kAccountA;
      p.user_id = "user-a";
    } else if (token == "expired") {
      throw sdk::HttpError(401, "token_expired", "The access token has expired; refresh it.");
    } else {
      throw sdk::HttpError(401, "authentication_failed", "The credential is not valid.");
    }
    return p;
  }
};

class FixedDirectory : public sdk::IdentityDirectory {
 public:
  std::optional<sdk::IdentityRef> find(const std::string& account,
                                       const std::string& identity) override {
    if (account == kAccountA && identity == kIdentityA1) return sdk::IdentityRef{identity, "A1"};
    if (account == kAccountA && identity == kIdentityA2) return sdk::IdentityRef{identity, "A2"};
    if (account == kAccountB && identity == kIdentityB1) return sdk::IdentityRef{identity, "B1"};
    return std::nullopt;
  }
};

class TestkitPlugin : public sdk::Plugin {
 public:
  TestkitPlugin() {
    info_.name = "testkit";
    info_.version = "1.2.3";
    info_.description = "Kernel test fixture: fake credentials and pipeline probes.";
    // POST /api/testkit/publish/ publishes {"type": ...} (default test.event); tests publish an
    // undeclared type through it on purpose too.
    info_.events = {{"test.event", "A test event; object: the request's body.", {}},
                    {"test.one", "A test event; object: the request's body.", {}},
                    {"test.two", "A test event; object: the request's body.", {}}};
    info_.offers_services = {sdk::kAuthenticatorService.name, sdk::kIdentityDirectoryService.name};
    info_.config = {{"testkit.greeting", "hello", "what GET /api/testkit/greeting/ says", false},
                    {"testkit.api_secret", "s3cr3t", "a secret, to check redaction", true},
                    {"testkit.start_delay_ms", "0",
                     "start() takes this long (a test signals svcd while it starts)", false}};
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    greeting_ = context.config().getString("testkit.greeting");
    // A plugin's own metrics, which GET /metrics serves beside the kernel's.
    published_ = context.metrics().counter("svc_testkit_published_total",
                                           "events published through /api/testkit/publish/");
    publish_bytes_ = context.metrics().histogram("svc_testkit_publish_body_bytes",
                                                 "bodies of /api/testkit/publish/, in bytes",
                                                 {16, 64, 256}, {{"route", "publish"}});
    context.metrics().gaugeFunction("svc_testkit_seen_events", "events the subscriber has seen",
                                    [this] { return static_cast<double>(seen_.load()); });
    // A test waits for a slow request to be in flight instead of sleeping for it (read on the
    // operator listener, which a public listener's busy workers do not hold up).
    context.metrics().gaugeFunction("svc_testkit_slow_in_flight",
                                    "requests to /api/testkit/slow/ sleeping now",
                                    [this] { return static_cast<double>(slow_.load()); });
  }

  std::vector<sdk::Migration> migrations() const override {
    sdk::Migration notes;
    notes.version = 1;
    notes.description = "notes table";
    notes.sqlite = {
        "CREATE TABLE testkit_notes (id CHAR(36) PRIMARY KEY, text TEXT NOT NULL, "
        "created_us BIGINT NOT NULL)"};
    notes.mysql = {
        "CREATE TABLE testkit_notes (id CHAR(36) PRIMARY KEY, text LONGTEXT NOT NULL, "
        "created_us BIGINT NOT NULL) ENGINE=InnoDB"};
    return {notes};
  }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    using sdk::AuthNeed;
    using sdk::Response;
    auto json = [](Poco::JSON::Object::Ptr o) { return Response::json(200, o); };

    routes.add({"GET", "/api/testkit/greeting/", AuthNeed::kNone, sdk::BodyKind::kJson, 0,
                "the configured greeting", [this, json](sdk::Request&) {
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("greeting", greeting_);
                  return json(o);
                }});
    auto who = [json](sdk::Request& r) {
      Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
      static const char* kinds[] = {"none", "user", "management", "identity"};
      o->set("kind", kinds[static_cast<int>(r.principal.kind)]);
      o->set("account", r.principal.account_id);
      o->set("identity", r.identity ? Poco::Dynamic::Var(r.identity->uuid) : Poco::Dynamic::Var());
      o->set("identity_name",
             r.identity ? Poco::Dynamic::Var(r.identity->name) : Poco::Dynamic::Var());
      return json(o);
    };
    routes.add(
        {"GET", "/api/testkit/whoami/", AuthNeed::kAnyKey, sdk::BodyKind::kJson, 0, "", who});
    routes.add({"GET", "/api/testkit/identity-only/", AuthNeed::kIdentity, sdk::BodyKind::kJson, 0,
                "", who});
    routes.add({"GET", "/api/testkit/account-only/", AuthNeed::kAccount, sdk::BodyKind::kJson, 0,
                "", who});
    routes.add(
        {"GET", "/api/testkit/user-only/", AuthNeed::kUser, sdk::BodyKind::kJson, 0, "", who});

    routes.add({"POST", "/api/testkit/echo/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [json](sdk::Request& r) {
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("json", r.json);
                  o->set("bytes", static_cast<int>(r.body.size()));
                  return json(o);
                }});
    routes.add({"POST", "/api/testkit/form/", AuthNeed::kNone, sdk::BodyKind::kJsonOrForm, 0, "",
                [json](sdk::Request& r) {
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  for (auto& [k, v] : r.form) o->set(k, v);
                  o->set("json", r.json);
                  return json(o);
                }});
    routes.add({"POST", "/api/testkit/small/", AuthNeed::kNone, sdk::BodyKind::kAny, 16, "",
                [json](sdk::Request& r) {
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("bytes", static_cast<int>(r.body.size()));
                  return json(o);
                }});
    auto item = [json](sdk::Request& r) {
      Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
      for (auto& [k, v] : r.params) o->set(k, v);
      o->set("route", r.route);
      return json(o);
    };
    routes.add(
        {"GET", "/api/testkit/items/{id}/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "", item});
    routes.add({"DELETE", "/api/testkit/items/{id}/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [](sdk::Request&) { return Response::noContent(); }});
    routes.add(
        {"GET", "/api/testkit/items/special/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "", item});
    routes.add({"GET", "/api/testkit/items/{id}/parts/{part}/", AuthNeed::kNone,
                sdk::BodyKind::kJson, 0, "", item});
    routes.add({"GET", "/api/testkit/boom/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [](sdk::Request&) -> Response { throw std::runtime_error("deliberate failure"); }});
    // What MariaDB says to the victim of a deadlock, as Poco's MySQL connector reports it.
    routes.add(
        {"GET", "/api/testkit/deadlock/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
         [](sdk::Request&) -> Response {
           throw Poco::Data::DataException(
               "[mysql_stmt_execute]: [Comment]: mysql_stmt_execute error [mysql_stmt_error]: "
               "Deadlock found when trying to get lock; try restarting transaction");
         }});
    routes.add({"GET", "/api/testkit/teapot/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [](sdk::Request&) -> Response {
                  throw sdk::HttpError(429, "throttled", "Slow down.")
                      .extra("retry_after_seconds", 7)
                      .header("Retry-After", "7");
                }});
    routes.add({"GET", "/api/testkit/slow/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [this, json](sdk::Request& r) {
                  int ms = Poco::NumberParser::parse(r.queryParam("ms").value_or("500"));
                  ++slow_;
                  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
                  --slow_;
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("slept_ms", ms);
                  return json(o);
                }});

    routes.add({"POST", "/api/testkit/notes/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [this](sdk::Request& r) {
                  std::string id = sdk::newUuid();
                  std::string text = r.json->optValue<std::string>("text", "");
                  Poco::Int64 at = sdk::nowMicros();
                  context_->database().transaction([&](Poco::Data::Session& s) {
                    s << "INSERT INTO testkit_notes (id, text, created_us) VALUES (?, ?, ?)",
                        use(id), use(text), use(at), now;
                  });
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("id", id);
                  return Response::json(201, o);
                }});
    routes.add({"GET", "/api/testkit/notes/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [this, json](sdk::Request&) {
                  Poco::Data::Session s = context_->database().session();
                  std::vector<std::string> ids;
                  s << "SELECT id FROM testkit_notes ORDER BY created_us", into(ids), now;
                  Poco::JSON::Array::Ptr list = new Poco::JSON::Array;
                  for (auto& id : ids) list->add(id);
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("ids", list);
                  return json(o);
                }});

    // Held: answers after ?ms= milliseconds without holding a worker.
    routes.add({"GET", "/api/testkit/hold/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [this](sdk::Request& r) {
                  int ms = Poco::NumberParser::parse(r.queryParam("ms").value_or("1000"));
                  return Response::hold([this, ms](std::shared_ptr<sdk::Stream> stream) {
                    ++held_;
                    stream->onClose([this] { --held_; });
                    std::weak_ptr<sdk::Stream> weak = stream;
                    stream->expireAfter(std::chrono::milliseconds(ms), [weak, ms] {
                      if (auto s = weak.lock()) {
                        Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                        o->set("held_ms", ms);
                        s->respond(Response::json(200, o));
                      }
                    });
                  });
                }});
    // Streamed: ?n= lines, one every ?every= ms, then the end.
    routes.add({"GET", "/api/testkit/ticks/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [](sdk::Request& r) {
                  int n = Poco::NumberParser::parse(r.queryParam("n").value_or("3"));
                  int every = Poco::NumberParser::parse(r.queryParam("every").value_or("50"));
                  return Response::hold([n, every](std::shared_ptr<sdk::Stream> stream) {
                    stream->begin(200, "text/plain", {{"Cache-Control", "no-store"}});
                    auto tick = std::make_shared<std::function<void(int)>>();
                    std::weak_ptr<sdk::Stream> weak = stream;
                    *tick = [weak, n, every, tick](int i) {
                      auto s = weak.lock();
                      if (!s) return;
                      if (i >= n) {
                        s->finish();
                        *tick = nullptr;  // break the cycle
                        return;
                      }
                      s->write("tick " + std::to_string(i) + "\n");
                      s->expireAfter(std::chrono::milliseconds(every), [tick, i] {
                        if (*tick) (*tick)(i + 1);
                      });
                    };
                    (*tick)(0);
                  });
                }});
    routes.add({"GET", "/api/testkit/held-count/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [this, json](sdk::Request&) {
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("held", held_.load());
                  return json(o);
                }});
    // An operator route: served on the admin listener, never on the public one.
    routes.add({"POST", "/admin/testkit/echo/", AuthNeed::kOperator, sdk::BodyKind::kJson, 0, "",
                [json](sdk::Request& r) {
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("operator", true);
                  o->set("json", r.json);
                  return json(o);
                }});
    routes.add({"POST", "/api/testkit/publish/", AuthNeed::kAnyKey, sdk::BodyKind::kJson, 0, "",
                [this](sdk::Request& r) {
                  auto event = context_->events().publish(
                      r.json->optValue<std::string>("type", "test.event"), r.principal.account_id,
                      r.identity ? r.identity->uuid : "", r.json, nullptr);
                  published_->increment();
                  publish_bytes_->observe(static_cast<double>(r.body.size()));
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("sequence", event.sequence);
                  o->set("seen", seen_.load());
                  return Response::json(201, o);
                }});
    routes.add({"GET", "/api/testkit/seen/", AuthNeed::kNone, sdk::BodyKind::kJson, 0, "",
                [this](sdk::Request&) {
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  std::lock_guard lock(seen_mutex_);
                  Poco::JSON::Array::Ptr types = new Poco::JSON::Array;
                  for (auto& t : seen_types_) types->add(t);
                  o->set("types", types);
                  return Response::json(200, o);
                }});
  }

  void registerServices(sdk::ServiceRegistry& services) override {
    services.offer(sdk::kAuthenticatorService, std::make_shared<FixedAuthenticator>());
    services.offer(sdk::kIdentityDirectoryService, std::make_shared<FixedDirectory>());
  }

  void start() override {
    if (const int delay = context_->config().getInt("testkit.start_delay_ms"); delay > 0) {
      context_->logger().information("testkit: starting slowly");
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    }
    subscription_ = context_->events().subscribe([this](const sdk::Event& e) {
      ++seen_;
      std::lock_guard lock(seen_mutex_);
      seen_types_.push_back(e.type);
    });
  }
  void stop() override { context_->events().unsubscribe(subscription_); }

 private:
  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  std::string greeting_;
  std::atomic<int> held_{0};
  std::atomic<int> slow_{0};
  std::atomic<int> seen_{0};
  std::shared_ptr<sdk::Counter> published_;
  std::shared_ptr<sdk::Histogram> publish_bytes_;
  std::mutex seen_mutex_;
  std::vector<std::string> seen_types_;
  std::uint64_t subscription_ = 0;
};

}  // namespace svc::plugins::testkit

SVC_PLUGIN(svc::plugins::testkit::TestkitPlugin)
