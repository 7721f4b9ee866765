// The test kit's harness: the kernel's own pieces (configuration layers, plugin host, database,
// event log, routers, pipeline) assembled in process, with stub credentials. See testing.h.
#include "held_response.h"

#include <svc/sdk/testing.h>
#include <svc/sdk/util.h>

#include "config.h"
#include "database.h"
#include "event_log.h"
#include "metrics.h"
#include "pipeline.h"
#include "plugin_host.h"
#include "router.h"
#include "services.h"

#include <Poco/File.h>
#include <Poco/Path.h>
#include <Poco/TemporaryFile.h>
#include <Poco/Util/LayeredConfiguration.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>

namespace svc::sdk::testing {

namespace {

constexpr const char* kOperatorToken = "svc-testing-operator";

// Accepts `Bearer svc-testing-<n>` for the principal registered as n.
class StubAuthenticator : public Authenticator {
 public:
  std::string tokenFor(const Principal& principal) {
    std::lock_guard lock(mutex_);
    principals_.push_back(principal);
    return "svc-testing-" + std::to_string(principals_.size() - 1);
  }
  std::optional<Principal> authenticate(const Credentials& c) override {
    auto token = bearerCredential(c.authorization);
    if (!token) return std::nullopt;
    const std::string prefix = "svc-testing-";
    std::lock_guard lock(mutex_);
    if (token->rfind(prefix, 0) == 0) {
      std::size_t n = std::stoul(token->substr(prefix.size()));
      if (n < principals_.size()) return principals_[n];
    }
    throw HttpError(401, "authentication_failed", "The test kit does not know this credential.");
  }

 private:
  std::mutex mutex_;
  std::vector<Principal> principals_;
};

class StubDirectory : public IdentityDirectory {
 public:
  void add(const std::string& account, const std::string& uuid, const std::string& name) {
    std::lock_guard lock(mutex_);
    identities_[account + "/" + uuid] = IdentityRef{uuid, name};
  }
  std::optional<IdentityRef> find(const std::string& account, const std::string& uuid) override {
    std::lock_guard lock(mutex_);
    auto it = identities_.find(account + "/" + uuid);
    if (it == identities_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, IdentityRef> identities_;
};

class Recorder : public EventRecorder {
 public:
  void record(const Event& e) {
    std::lock_guard lock(mutex_);
    events_.push_back(e);
    arrived_.notify_all();
  }
  std::vector<Event> all() const override {
    std::lock_guard lock(mutex_);
    return events_;
  }
  std::vector<Event> ofType(const std::string& type) const override {
    std::lock_guard lock(mutex_);
    std::vector<Event> out;
    for (const auto& e : events_) {
      if (e.type == type) out.push_back(e);
    }
    return out;
  }
  std::optional<Event> waitFor(const std::string& type,
                               std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    std::optional<Event> found;
    arrived_.wait_for(lock, timeout, [&] {
      for (; taken_[type] < events_.size(); ++taken_[type]) {
        if (events_[taken_[type]].type == type) {
          found = events_[taken_[type]++];
          return true;
        }
      }
      return false;
    });
    return found;
  }
  void clear() override {
    std::lock_guard lock(mutex_);
    events_.clear();
    taken_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<Event> events_;
  std::map<std::string, std::size_t> taken_;
};

}  // namespace

struct PluginHarness::Impl {
  HarnessOptions options;
  std::string dir;
  Poco::AutoPtr<Poco::Util::LayeredConfiguration> config{new Poco::Util::LayeredConfiguration};
  std::unique_ptr<kernel::ConfigLayers> layers;
  std::unique_ptr<kernel::PluginHost> host;
  std::vector<std::unique_ptr<kernel::LoadedPlugin>> pending;
  std::unique_ptr<kernel::SqlDatabase> db;
  std::unique_ptr<kernel::EventLog> events;
  kernel::ServiceTable services;
  kernel::OwnedServices stubs{services, "testing"};
  kernel::OwnedServices finder{services, "testing"};
  kernel::Router router, operator_router;
  kernel::Metrics metrics;
  kernel::Runtime runtime, operator_runtime;
  std::unique_ptr<kernel::Pipeline> pipeline, operator_pipeline;
  std::shared_ptr<StubAuthenticator> authenticator = std::make_shared<StubAuthenticator>();
  std::shared_ptr<StubDirectory> directory = std::make_shared<StubDirectory>();
  Recorder recorder;
  std::uint64_t subscription = 0;
  bool started = false;
  bool authenticator_stubbed = false;  // no plugin under test offers the Authenticator

  TestResponse serve(kernel::Pipeline& pipeline, const RequestBuilder& rb, const std::string& auth);
};

PluginHarness::PluginHarness(HarnessOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->dir = Poco::TemporaryFile::tempName() + "-svc-testing";
  Poco::File(impl_->dir).createDirectories();
  // exe_dir inside the temporary directory: no installed svcd.properties is read.
  impl_->layers = std::make_unique<kernel::ConfigLayers>(
      *impl_->config, Poco::Path(impl_->dir).append("bin/").toString(),
      std::map<std::string, std::string>{});
  impl_->layers->addSet("data.dir=" + impl_->dir);
  impl_->layers->addSet("db.url=sqlite:" + Poco::Path(impl_->dir).append("svc.db").toString());
  impl_->layers->addSet("admin.token=" + std::string(kOperatorToken));
  // No fsync: a test that checks what survives the machine's crash is none a test kit can run.
  // options.config may set db.sqlite.synchronous=full again.
  impl_->layers->addSet("db.sqlite.synchronous=off");
  for (const auto& [key, value] : impl_->options.config) impl_->layers->addSet(key + "=" + value);
  auto problems = impl_->layers->build();
  if (!problems.empty()) throw std::runtime_error("test kit configuration: " + problems.front());
  impl_->host = std::make_unique<kernel::PluginHost>(*impl_->config, *impl_->layers, impl_->dir);
}

PluginHarness::~PluginHarness() {
  stop();
  impl_->host.reset();
  try {
    Poco::File(impl_->dir).remove(true);
  } catch (const Poco::Exception&) {  // a test that left a file open; the OS cleans /tmp
  }
}

PluginHarness& PluginHarness::load(const std::string& library_path) {
  try {
    impl_->pending.push_back(kernel::loadPluginFile(library_path, ""));
  } catch (const kernel::PluginError& e) {
    throw std::runtime_error(e.what());
  }
  return *this;
}

PluginHarness& PluginHarness::add(std::unique_ptr<Plugin> plugin) {
  impl_->pending.push_back(kernel::adoptPlugin(std::move(plugin)));
  return *this;
}

ServiceRegistry& PluginHarness::stubs() {
  return impl_->stubs;
}

void PluginHarness::addIdentity(const std::string& account, const std::string& uuid,
                                const std::string& name) {
  impl_->directory->add(account, uuid, name);
}

void PluginHarness::start() {
  if (impl_->started) throw std::logic_error("PluginHarness::start() called twice");
  Impl& s = *impl_;
  try {
    s.host->add(std::move(s.pending));
    // The stubs stand in only for what no plugin under test offers itself.
    auto offeredByAPlugin = [&s](const char* name) {
      for (const auto& p : s.host->plugins()) {
        const auto& offers = p->plugin->info().offers_services;
        if (std::find(offers.begin(), offers.end(), name) != offers.end()) return true;
      }
      return false;
    };
    if (s.options.stub_credentials && !offeredByAPlugin(kAuthenticatorService.name)) {
      s.stubs.offer(kAuthenticatorService, s.authenticator);
      s.authenticator_stubbed = true;
    }
    if (s.options.stub_credentials && !offeredByAPlugin(kIdentityDirectoryService.name)) {
      s.stubs.offer(kIdentityDirectoryService, s.directory);
    }
    s.db = std::make_unique<kernel::SqlDatabase>(s.config->getString("db.url"), 8,
                                                 s.config->getString("db.sqlite.synchronous"));
    s.db->migrate("kernel", kernel::eventLogMigrations());
    s.events = std::make_unique<kernel::EventLog>(*s.db, 1);
    s.events->setEventTypes(&s.host->eventTypes());
    s.subscription = s.events->subscribe([&s](const Event& e) { s.recorder.record(e); });
    s.host->prepare(*s.db, *s.events, s.services, s.router, s.operator_router, &s.metrics);
    s.events->start();
    s.host->start();
  } catch (const kernel::PluginError& e) {
    throw std::runtime_error(e.what());
  }
  s.runtime.router = &s.router;
  s.runtime.services = &s.services;
  s.runtime.metrics = &s.metrics;
  s.runtime.limits.max_body_bytes =
      static_cast<std::size_t>(s.config->getInt64("server.max_body_bytes"));
  s.runtime.base_url = s.config->getString("public.base_url", "http://127.0.0.1:8080");
  s.operator_runtime = s.runtime;
  s.operator_runtime.router = &s.operator_router;
  s.operator_runtime.operator_token = kOperatorToken;
  s.pipeline = std::make_unique<kernel::Pipeline>(s.runtime);
  s.operator_pipeline = std::make_unique<kernel::Pipeline>(s.operator_runtime);
  s.started = true;
}

void PluginHarness::stop() {
  if (!impl_->started) return;
  impl_->host->stop();
  if (impl_->events) {
    impl_->events->unsubscribe(impl_->subscription);
    impl_->events->stop();
  }
  impl_->started = false;
}

TestResponse PluginHarness::Impl::serve(kernel::Pipeline& p, const RequestBuilder& rb,
                                        const std::string& authorization) {
  if (!started) throw std::logic_error("call PluginHarness::start() before calling routes");
  Request req;
  req.method = rb.method_;
  req.request_id = newUuid();
  req.client_address = rb.client_address_;
  req.base_url = runtime.base_url;
  req.body = rb.body_;
  for (const auto& [name, value] : rb.headers_) req.headers[name] = value;
  if (!authorization.empty()) req.headers["authorization"] = authorization;
  Response out;
  try {
    kernel::readTarget(rb.target_, req);
    std::string route;
    out = p.dispatch(req, route);
  } catch (const HttpError& e) {
    out = kernel::errorResponse(e, req.request_id);
  }
  if (out.on_hold) out = awaitHeld(out, req.request_id, rb.wait_);
  out.headers.insert(out.headers.begin(), {"X-Request-Id", req.request_id});
  TestResponse answer;
  answer.status = out.status;
  answer.content_type = out.content_type;
  answer.body = out.body;
  answer.headers = out.headers;
  return answer;
}

TestResponse PluginHarness::call(const RequestBuilder& request) {
  std::string authorization;
  if (request.principal_ && impl_->started) {
    // A plugin's own Authenticator would refuse the stub's token with a puzzling 401.
    if (!impl_->authenticator_stubbed) {
      throw std::logic_error(
          "RequestBuilder::as() needs the stub Authenticator, and a plugin under test offers the "
          "Authenticator (or stub_credentials is off): send its credential with "
          "header(\"Authorization\", ...)");
    }
    authorization = "Bearer " + impl_->authenticator->tokenFor(*request.principal_);
  }
  return impl_->serve(*impl_->pipeline, request, authorization);
}

TestResponse PluginHarness::callOperator(const RequestBuilder& request) {
  return impl_->serve(*impl_->operator_pipeline, request, "Bearer " + std::string(kOperatorToken));
}

const Poco::Util::AbstractConfiguration& PluginHarness::configOf(const std::string& plugin) const {
  for (const auto& p : impl_->host->plugins()) {
    if (p->name == plugin && p->context) return p->context->config();
  }
  throw std::invalid_argument("no started plugin named '" + plugin + "'");
}

EventRecorder& PluginHarness::events() {
  return impl_->recorder;
}

Database& PluginHarness::database() {
  if (!impl_->db) throw std::logic_error("the database exists from PluginHarness::start() on");
  return *impl_->db;
}

ServiceRegistry& PluginHarness::services() {
  return impl_->finder;
}

std::string PluginHarness::metrics() const {
  return impl_->metrics.render();
}

std::string PluginHarness::dataDir() const {
  return impl_->dir;
}

EventRecorder::~EventRecorder() = default;

}  // namespace svc::sdk::testing
