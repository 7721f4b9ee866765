// Deliberately broken and minimal plugins for the loader's tests, one source built many ways:
//   FIXTURE_NAME      the plugin's name
//   FIXTURE_REQUIRES  a comma list of plugins it requires (string literal), or ""
//   FIXTURE_THROW_IN  1 configure, 2 migrate, 3 start
//   FIXTURE_WRONG_ABI export a handshake for SDK major 999
//   FIXTURE_NEWER_MINOR export a handshake for the next minor version of this SDK
//   FIXTURE_NO_CREATE export only the handshake
//   FIXTURE_ROUTE     register GET /api/<name>/
//   FIXTURE_EVENTS    a comma list of event types it declares (string literal), or ""
//   FIXTURE_HOLDS     hold what the kernel gives, as a real plugin does, before any THROW_IN:
//                     an event subscription from configure, held waits (a thread, another
//                     subscription) and a listener from start; the destructor gives them back
//                     and reads the database, and logs "fixture '<name>' destroyed" (or
//                     "... destroyed while started" when it was never stopped)
#include <svc/sdk/listeners.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/storage.h>
#include <svc/sdk/waits.h>

#include <Poco/Data/Session.h>
#include <Poco/StringTokenizer.h>

#include <memory>

#ifndef FIXTURE_EVENTS
#define FIXTURE_EVENTS ""
#endif

namespace svc::plugins::fixture {

class FixturePlugin : public sdk::Plugin {
 public:
  FixturePlugin() {
    info_.name = FIXTURE_NAME;
    info_.version = "0.0.1";
    info_.description = "loader test fixture";
    Poco::StringTokenizer deps(FIXTURE_REQUIRES, ",", Poco::StringTokenizer::TOK_IGNORE_EMPTY);
    for (const auto& d : deps) info_.requires_plugins.push_back(d);
    Poco::StringTokenizer events(FIXTURE_EVENTS, ",", Poco::StringTokenizer::TOK_IGNORE_EMPTY);
    for (const auto& e : events) info_.events.push_back({e, "a fixture's event", {}});
#ifdef FIXTURE_ROUTE
    info_.paths = {std::string("/api/") + FIXTURE_NAME + "/"};
#endif
  }
#ifdef FIXTURE_HOLDS
  ~FixturePlugin() override {
    if (!context_) return;  // never configured: nothing was given
    if (started_ && !stopped_) {
      context_->logger().error("fixture '%s' destroyed while started", std::string(FIXTURE_NAME));
    }
    waits_.reset();
    context_->events().unsubscribe(subscription_);
    try {
      Poco::Data::Session session = context_->database().session();
      session << "SELECT 1", Poco::Data::Keywords::now;
    } catch (const std::exception& e) {
      context_->logger().error("fixture '%s': the database is gone: %s", std::string(FIXTURE_NAME),
                               std::string(e.what()));
    }
    context_->logger().information("fixture '%s' destroyed", std::string(FIXTURE_NAME));
  }
#endif
  const sdk::PluginInfo& info() const override {
    return info_;
  }
  void configure([[maybe_unused]] sdk::PluginContext& context) override {
#ifdef FIXTURE_HOLDS
    context_ = &context;
    subscription_ = context.events().subscribe([](const sdk::Event&){});
    waits_ = std::make_unique<sdk::HeldWaits>(context.events(),
                                              std::vector<std::string>{"fixture.pinged"});
#endif
#if FIXTURE_THROW_IN == 1
    throw std::runtime_error("configure refused on purpose");
#endif
  }
  std::vector<sdk::Migration> migrations() const override {
#if FIXTURE_THROW_IN == 2
    return {sdk::Migration::portable(1, "creates then fails",
                                     {"CREATE TABLE fixture_half (id INT)", "THIS IS NOT SQL"})};
#else
    return {};
#endif
  }
  void registerRoutes(sdk::RouteRegistry& routes) override {
#ifdef FIXTURE_ROUTE
    routes.add({"GET", std::string("/api/") + FIXTURE_NAME + "/", sdk::AuthNeed::kNone,
                sdk::BodyKind::kJson, 0, "", [](sdk::Request&) {
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("plugin", FIXTURE_NAME);
                  return sdk::Response::json(200, o);
                }});
    // Needs a credential, so it reaches the Authenticator service (or finds it absent).
    routes.add({"GET", std::string("/api/") + FIXTURE_NAME + "/private/", sdk::AuthNeed::kAnyKey,
                sdk::BodyKind::kJson, 0, "",
                [](sdk::Request&) { return sdk::Response::noContent(); }});
#else
    (void)routes;
#endif
  }
  void registerServices(sdk::ServiceRegistry&) override {}
  void start() override {
#ifdef FIXTURE_HOLDS
    waits_->start();
    sdk::ListenerOptions options;
    options.listen = "127.0.0.1:0";
    listener_ = context_->listeners().open(options, protocol_);
#endif
#if FIXTURE_THROW_IN == 3
    throw std::runtime_error("start refused on purpose");
#endif
#ifdef FIXTURE_HOLDS
    started_ = true;
#endif
  }
  void stop() override {
#ifdef FIXTURE_HOLDS
    stopped_ = true;
    listener_->close();
    waits_->stop();
#endif
  }

 private:
  sdk::PluginInfo info_;
#ifdef FIXTURE_HOLDS
  // Closes every connection at once (throwing does): the listener is only there to be held.
  struct Silent : sdk::ConnectionProtocol {
    std::unique_ptr<sdk::ConnectionHandler> open(const std::shared_ptr<sdk::Connection>&) override {
      throw std::runtime_error("the fixture takes no connections");
    }
  };
  sdk::PluginContext* context_ = nullptr;
  std::uint64_t subscription_ = 0;
  std::unique_ptr<sdk::HeldWaits> waits_;
  Silent protocol_;
  std::unique_ptr<sdk::Listener> listener_;
  bool started_ = false;
  bool stopped_ = false;
#endif
};

}  // namespace svc::plugins::fixture

#if defined(FIXTURE_WRONG_ABI) || defined(FIXTURE_NEWER_MINOR)
namespace fixture_export {
const svc::sdk::AbiInfo* abi() {
#if defined(FIXTURE_WRONG_ABI)
  static const svc::sdk::AbiInfo info{999, 0, SVC_SDK_BUILD_SIGNATURE};
#else
  static const svc::sdk::AbiInfo info{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR + 1,
                                      SVC_SDK_BUILD_SIGNATURE};
#endif
  return &info;
}
svc::sdk::Plugin* create() {
  return new svc::plugins::fixture::FixturePlugin();
}
}  // namespace fixture_export
BOOST_DLL_ALIAS(fixture_export::abi, svc_plugin_abi)
BOOST_DLL_ALIAS(fixture_export::create, svc_plugin_create)
#elif defined(FIXTURE_NO_CREATE)
namespace fixture_export {
const svc::sdk::AbiInfo* abi() {
  static const svc::sdk::AbiInfo info{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR,
                                      SVC_SDK_BUILD_SIGNATURE};
  return &info;
}
}  // namespace fixture_export
BOOST_DLL_ALIAS(fixture_export::abi, svc_plugin_abi)
#else
SVC_PLUGIN(svc::plugins::fixture::FixturePlugin)
#endif
