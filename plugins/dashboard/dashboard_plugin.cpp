// dashboard: the pages a person uses: sign in (OpenID Connect or a local password), approve or
// deny an agent's device login, manage the account's keys, and the pages other plugins add
// through kDashboardPagesService (the identities plugin's list, the email plugin's inbox). Plain
// server-rendered HTML; it acts for the person through the auth plugin's AccountService.
#include "account_pages.h"
#include "contributed_pages.h"
#include "device_pages.h"
#include "page_registry.h"
#include "sign_in.h"
#include "site.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/dashboard.h>
#include <svc/sdk/plugin.h>

namespace svc::plugins::dashboard {

class DashboardPlugin : public sdk::Plugin {
 public:
  DashboardPlugin() {
    info_.name = "dashboard";
    info_.version = "0.2.0";
    info_.description = "Web pages for people: sign-in, device approval, keys, plugins' pages.";
    info_.requires_plugins = {"auth"};
    info_.uses_services = {sdk::kAccountService.name};
    info_.offers_services = {sdk::kDashboardPagesService.name};
    info_.config = {
        {"dashboard.url", "${public.base_url}/dashboard", "the dashboard's public URL", false,
         true},
        // The dashboard is the OpenID Connect client that signs people in; the names keep the
        // auth. prefix operators know.
        {"auth.oidc.issuer", "", "OpenID Connect provider for human sign-in", false},
        {"auth.oidc.client_id", "", "OpenID Connect client id", false},
        {"auth.oidc.client_secret", "", "OpenID Connect client secret", true},
        {"dashboard.rate.sign_in_failures_per_minute", "10",
         "failed password sign-ins one address may make a minute", false},
        {"dashboard.rate.wrong_codes", "5",
         "wrong device codes one person may enter within a code's lifetime", false},
    };
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    site_ = std::make_unique<Site>(context.config().getString("dashboard.url"), pages_);
    sign_in_ = std::make_unique<SignIn>(*site_, context);
    device_ = std::make_unique<DevicePages>(*site_, context.config());
    account_ = std::make_unique<AccountPages>(*site_, *pages_);
    contributed_ = std::make_unique<ContributedPages>(*site_, pages_);
    context_ = &context;
  }

  std::vector<sdk::Migration> migrations() const override { return {SignIn::migration()}; }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    account_->registerIn(routes);
    sign_in_->registerIn(routes);
    device_->registerIn(routes);
    contributed_->registerIn(routes);
  }

  void registerServices(sdk::ServiceRegistry& services) override {
    services.offer(sdk::kDashboardPagesService, pages_);
  }

  void start() override {
    // auth is a declared requirement, so its service is there (or start is refused, naming it).
    site_->setAccounts(context_->services().require(sdk::kAccountService));
  }

  void stop() override {}

 private:
  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  // The dashboard's own first segments: contributed pages may not take them.
  std::shared_ptr<PageRegistry> pages_ = std::make_shared<PageRegistry>(std::vector<std::string>{
      "login", "logout", "device", "keys", ContributedPages::kScriptsSegment});
  std::unique_ptr<Site> site_;
  std::unique_ptr<SignIn> sign_in_;
  std::unique_ptr<DevicePages> device_;
  std::unique_ptr<AccountPages> account_;
  std::unique_ptr<ContributedPages> contributed_;
};

}  // namespace svc::plugins::dashboard

SVC_PLUGIN(svc::plugins::dashboard::DashboardPlugin)
