// secrets: an identity's key-value secrets (API keys, environment variables), `key` unique per
// identity, served at /api/secrets/ and, the same resource, at /api/vault/. Their values and notes
// are kept by the vault plugin (sdk::Vault): encrypted at rest, and under the account's
// end-to-end rule once it has one.
//
// This is the module: what the plugin declares, and the wiring of its core (svc_secrets_core).
#include "secret_cache.h"
#include "secret_input.h"
#include "secret_pages.h"
#include "secret_routes.h"
#include "secret_store.h"

#include <svc/sdk/dashboard.h>
#include <svc/sdk/metrics.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/vault.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>

namespace svc::plugins::secrets {

class SecretsPlugin : public sdk::Plugin {
 public:
  SecretsPlugin() {
    info_.name = "secrets";
    info_.version = "0.1.0";
    info_.description = "Secrets: an identity's key-value secrets, their values in the vault.";
    info_.events = {
        {"secret.created",
         "A secret was created; object: the secret without value and notes.",
         {"key"},
         secretNamesSchema()},
        {"secret.updated",
         "A secret changed; object: the secret without value and notes.",
         {"key"},
         secretNamesSchema()},
        {"secret.deleted",
         "A secret was deleted; object: the secret without value and notes.",
         {"key"},
         secretNamesSchema()},
    };
    // The contract serves the same resource under both.
    info_.paths = {"/api/secrets/", "/api/vault/"};
    info_.config = {
        {"secrets.read_cache_seconds", "5",
         "how long a secret read by key is kept in memory (encrypted at rest, decrypted on every "
         "read) for the next reads of it; writes through this svcd drop it at once and those "
         "through another within the event log's poll; 0 keeps nothing",
         false, false},
    };
    info_.uses_services = {sdk::kVaultService.name, sdk::kDashboardPagesService.name};
    info_.requires_plugins = {"vault"};
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    const int keep = context.config().getInt("secrets.read_cache_seconds");
    if (keep < 0 || keep > 3600) {
      throw std::invalid_argument("secrets.read_cache_seconds must be from 0 to 3600");
    }
    cache_ = std::make_unique<SecretCache>(std::chrono::seconds(keep));
    vault_ = context.services().require(sdk::kVaultService);
    store_ = std::make_unique<SecretStore>(context.events());
    routes_ = std::make_unique<SecretRoutes>(context.database(), *store_, *vault_, *cache_);
  }

  std::vector<sdk::Migration> migrations() const override { return SecretStore::migrations(); }

  void registerRoutes(sdk::RouteRegistry& routes) override { routes_->registerIn(routes); }
  void registerServices(sdk::ServiceRegistry&) override {}

  void start() override {
    if (auto pages = context_->services().find(sdk::kDashboardPagesService)) {
      for (auto& page : dashboardPages()) pages->add(std::move(page));
    }
    // Other svcd processes' writes reach this one's cache as events.
    sdk::MetricRegistry& m = context_->metrics();
    m.counterFunction("svc_secrets_read_cache_hits_total",
                      "Reads of a secret by key served from the read cache.",
                      [cache = cache_.get()] { return static_cast<double>(cache->hits()); });
    m.counterFunction("svc_secrets_read_cache_misses_total",
                      "Reads of a secret by key that read the database.",
                      [cache = cache_.get()] { return static_cast<double>(cache->misses()); });
    events_ = &context_->events();
    subscription_ = events_->subscribe([this](const sdk::Event& e) { cache_->follow(e); });
  }
  void stop() override {
    if (events_) events_->unsubscribe(subscription_);
    events_ = nullptr;
  }

 private:
  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  std::shared_ptr<sdk::Vault> vault_;
  std::unique_ptr<SecretCache> cache_;
  sdk::EventBus* events_ = nullptr;
  std::uint64_t subscription_ = 0;
  std::unique_ptr<SecretStore> store_;
  std::unique_ptr<SecretRoutes> routes_;
};

}  // namespace svc::plugins::secrets

SVC_PLUGIN(svc::plugins::secrets::SecretsPlugin)
