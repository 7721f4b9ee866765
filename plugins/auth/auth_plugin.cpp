// auth: accounts, users, keys and sessions. It offers the kernel's Authenticator (management and
// identity keys, JWT access tokens) and the PlanService, and runs the OAuth 2.0 device flow
// (RFC 8628) by which a human approves an agent once and the agent receives its keys.
//
// The module only wires the core (svc_auth_core) together: the pieces live in their own files.
#include "accounts.h"
#include "auth_service.h"
#include "auth_shapes.h"
#include "auth_store.h"
#include "device_flow.h"
#include "jwt_issuer.h"
#include "key_routes.h"
#include "keys.h"
#include "operator_routes.h"
#include "revocations.h"
#include "schema.h"
#include "settings.h"
#include "token_routes.h"
#include "whoami.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/plans.h>
#include <svc/sdk/plugin.h>

#include <memory>

namespace svc::plugins::auth {

class AuthPlugin : public sdk::Plugin {
 public:
  AuthPlugin() {
    info_.name = "auth";
    info_.version = "0.1.0";
    info_.description = "Accounts, users, keys, sessions and the device login.";
    info_.events = {
        {"key.created",
         "A key was created; object: the key as GET shows it, without its secret.",
         {},
         keySchema()},
        {"key.revoked", "A key was revoked; object: the key as GET shows it.", {}, keySchema()},
    };
    // Its operator routes (/admin/auth/) are the admin listener's, outside these.
    info_.paths = {"/api/auth/", "/api/health/whoami/"};
    info_.offers_services = {sdk::kAuthenticatorService.name, sdk::kPlanService.name,
                             sdk::kAccountService.name};
    info_.uses_services = {sdk::kIdentityDirectoryService.name,
                           sdk::kAccessRevocationsService.name};
    info_.config = settingsKeys();
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    settings_ = readSettings(context.config());
    sdk::Database& db = context.database();
    store_ = std::make_unique<AuthStore>(db);
    jwt_ = std::make_unique<JwtIssuer>(db, settings_.issuer_url);
    authenticator_ = std::make_shared<AuthService>(*store_, *jwt_, settings_.failed_auth_per_minute,
                                                   settings_.failed_auth_per_key_per_minute);
    revoker_ = std::make_unique<Revoker>(context.services().find(sdk::kAccessRevocationsService));
    keys_ = std::make_unique<KeyManager>(context, *store_, *authenticator_, *revoker_,
                                         settings_.max_keys);
    device_ = std::make_unique<DeviceFlow>(context, *store_, *jwt_, *keys_, settings_);
    tokens_ = std::make_unique<TokenRoutes>(db, *store_, *jwt_, *revoker_,
                                            authenticator_->revokedFamilies());
    key_routes_ = std::make_unique<KeyRoutes>(*store_, *keys_);
    whoami_ = std::make_unique<WhoAmI>(*store_);
    operator_routes_ = std::make_unique<OperatorRoutes>(*store_, *device_);
    accounts_ = std::make_shared<Accounts>(db, *store_, *keys_, *device_, *revoker_, settings_);
  }

  std::vector<sdk::Migration> migrations() const override { return authMigrations(); }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    device_->registerRoutes(routes);
    tokens_->registerRoutes(routes);
    key_routes_->registerRoutes(routes);
    whoami_->registerRoutes(routes);
    operator_routes_->registerRoutes(routes);
  }

  void registerServices(sdk::ServiceRegistry& services) override {
    services.offer(sdk::kAuthenticatorService, authenticator_);
    services.offer(sdk::kPlanService, authenticator_);
    services.offer(sdk::kAccountService, accounts_);
  }

  void start() override {
    authenticator_->start();
    device_->start();
  }

  void stop() override {
    device_->stop();
    authenticator_->stop();
  }

 private:
  sdk::PluginInfo info_;
  AuthSettings settings_;
  std::unique_ptr<AuthStore> store_;
  std::unique_ptr<JwtIssuer> jwt_;
  std::shared_ptr<AuthService> authenticator_;
  std::unique_ptr<Revoker> revoker_;
  std::unique_ptr<KeyManager> keys_;
  std::unique_ptr<DeviceFlow> device_;
  std::unique_ptr<TokenRoutes> tokens_;
  std::unique_ptr<KeyRoutes> key_routes_;
  std::unique_ptr<WhoAmI> whoami_;
  std::unique_ptr<OperatorRoutes> operator_routes_;
  std::shared_ptr<Accounts> accounts_;
};

}  // namespace svc::plugins::auth

SVC_PLUGIN(svc::plugins::auth::AuthPlugin)
