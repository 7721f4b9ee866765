// stamps: a third party's part of identities for the integration tests, the way a plugin outside
// this repository adds one (svc/sdk/identity_extensions.h): a `stamp` member and an action,
// `POST /api/identities/{uuid}/stamp/`, which no route of the identities plugin names, so it is
// served by the generic {action} route. Kept in memory: nothing here is about storage.
#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/plugin.h>

#include <Poco/JSON/Object.h>

#include <map>
#include <mutex>

namespace svc::plugins::stamps {

class StampExtension : public sdk::IdentityExtension {
 public:
  const sdk::IdentityCapability& capability() const override { return capability_; }
  void validate(const sdk::Request&) override {}
  Poco::Dynamic::Var provision(Poco::Data::Session&, const sdk::IdentityInfo&,
                               const sdk::Request&) override {
    return {};
  }
  std::map<std::string, Poco::Dynamic::Var> describe(
      const std::vector<std::string>& identity_uuids) override {
    std::lock_guard lock(mutex_);
    std::map<std::string, Poco::Dynamic::Var> out;
    for (const auto& uuid : identity_uuids) {
      if (auto it = counts_.find(uuid); it != counts_.end()) out[uuid] = member(it->second);
    }
    return out;
  }
  // Answers what it was asked, so a test sees the name and the identity the route passed on.
  sdk::Response act(const std::string& action, const sdk::IdentityInfo& identity,
                    sdk::Request&) override {
    int count = 0;
    {
      std::lock_guard lock(mutex_);
      count = ++counts_[identity.uuid];
    }
    Poco::JSON::Object::Ptr o = member(count);
    o->set("action", action);
    o->set("identity", identity.uuid);
    return sdk::Response::json(201, o);
  }

 private:
  static Poco::JSON::Object::Ptr member(int count) {
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("count", count);
    return o;
  }

  const sdk::IdentityCapability capability_{
      "stamp", {}, {"stamp"}, sdk::Schema::object().required("count", sdk::Schema::integer())};
  std::mutex mutex_;
  std::map<std::string, int> counts_;
};

class StampsPlugin : public sdk::Plugin {
 public:
  StampsPlugin() {
    info_.name = "stamps";
    info_.version = "1.0.0";
    info_.description = "Test fixture: a third party's identity part with an action.";
    info_.requires_plugins = {"identities"};
    info_.uses_services = {sdk::kIdentityExtensionsService.name};
  }
  const sdk::PluginInfo& info() const override { return info_; }
  void configure(sdk::PluginContext& context) override {
    context.services()
        .require(sdk::kIdentityExtensionsService)
        ->add(std::make_shared<StampExtension>());
  }
  std::vector<sdk::Migration> migrations() const override { return {}; }
  void registerRoutes(sdk::RouteRegistry&) override {}
  void registerServices(sdk::ServiceRegistry&) override {}
  void start() override {}
  void stop() override {}

 private:
  sdk::PluginInfo info_;
};

}  // namespace svc::plugins::stamps

SVC_PLUGIN(svc::plugins::stamps::StampsPlugin)
