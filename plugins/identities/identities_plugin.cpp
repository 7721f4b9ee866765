// identities: the personas agents act as. It owns the identities table, offers the kernel's
// IdentityDirectory (so every identity-scoped route of every plugin is fenced the same way) and
// the identity extension point through which other plugins add their part of an identity (the
// email plugin its inbox, the SMS plugin its number), and serves the identity routes of the
// contract, including the voice-agent settings with their URL checks. It names no other plugin.
#include "dashboard_page.h"
#include "extensions.h"
#include "identity_routes.h"
#include "identity_shapes.h"
#include "identity_store.h"
#include "voice_agent.h"

#include <svc/sdk/dashboard.h>
#include <svc/sdk/plugin.h>

namespace svc::plugins::identities {

class IdentitiesPlugin : public sdk::Plugin {
 public:
  IdentitiesPlugin() {
    info_.name = "identities";
    info_.version = "0.2.0";
    info_.description = "Identities: the personas agents act as, and their voice-agent settings.";
    info_.events = {
        {"identity.created",
         "An identity was created; object: the identity as GET shows it.",
         {},
         extensions_->late(&IdentityShapes::identity)},
        {"identity.updated",
         "An identity was changed; object: the identity as GET shows it.",
         {},
         extensions_->late(&IdentityShapes::identity)},
    };
    info_.paths = {"/api/identities/"};
    info_.offers_services = {sdk::kIdentityDirectoryService.name,
                             sdk::kIdentityExtensionsService.name, sdk::kVoiceAgentService.name};
    info_.uses_services = {sdk::kDashboardPagesService.name};
    info_.config = {
        {kVoiceAllowPrivateUrlsKey, "false",
         "let voice-agent response URLs point at loopback or private addresses", false},
    };
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    store_ = std::make_unique<IdentityStore>(context.database());
    directory_ = std::make_shared<Directory>(*store_);
    voice_ = std::make_shared<VoiceAgents>(context.database(),
                                           context.config().getBool(kVoiceAllowPrivateUrlsKey));
    routes_ =
        std::make_unique<IdentityRoutes>(context, *store_, *directory_, *extensions_, *voice_);
  }

  std::vector<sdk::Migration> migrations() const override { return IdentityStore::migrations(); }
  void registerRoutes(sdk::RouteRegistry& routes) override { routes_->registerIn(routes); }
  void registerServices(sdk::ServiceRegistry& services) override {
    services.offer(sdk::kIdentityDirectoryService, directory_);
    services.offer(sdk::kIdentityExtensionsService, extensions_);
    services.offer(sdk::kVoiceAgentService, voice_);
  }
  void start() override {
    // The dashboard may be disabled: then there is nowhere to show the page.
    if (auto pages = context_->services().find(sdk::kDashboardPagesService)) {
      pages->add(identitiesDashboardPage());
    }
  }
  void stop() override {}

 private:
  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  std::unique_ptr<IdentityStore> store_;
  std::shared_ptr<Directory> directory_;
  std::shared_ptr<Extensions> extensions_ = std::make_shared<Extensions>();
  std::shared_ptr<VoiceAgents> voice_;
  std::unique_ptr<IdentityRoutes> routes_;
};

}  // namespace svc::plugins::identities

SVC_PLUGIN(svc::plugins::identities::IdentitiesPlugin)
