// Deliberately broken and minimal plugins for the loader's tests, one source built many ways:
//   FIXTURE_NAME      the plugin's name
//   FIXTURE_REQUIRES  a comma list of plugins it requires (string literal), or ""
//   FIXTURE_THROW_IN  1 configure, 2 migrate, 3 start
//   FIXTURE_WRONG_ABI export a handshake for SDK major 999
//   FIXTURE_NEWER_MINOR export a handshake for the next minor version of this SDK
//   FIXTURE_NO_CREATE export only the handshake
//   FIXTURE_ROUTE     register GET /api/<name>/
//   FIXTURE_EVENTS    a comma list of event types it declares (string literal), or ""
#include <svc/sdk/plugin.h>

#include <Poco/StringTokenizer.h>

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
  const sdk::PluginInfo& info() const override {
    return info_;
  }
  void configure(sdk::PluginContext&) override {
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
#if FIXTURE_THROW_IN == 3
    throw std::runtime_error("start refused on purpose");
#endif
  }
  void stop() override {}

 private:
  sdk::PluginInfo info_;
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
