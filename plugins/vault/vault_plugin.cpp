// vault: where plugins keep protected values (sdk::Vault, svc/sdk/vault.h). It owns each account's
// end-to-end encryption metadata (`/api/encryption/`) and the rule that follows from it, encrypts
// every value at rest under the master key of `vault.master_key_file`, rotates that key, and
// changes an account's passphrase atomically. Passwords and secrets each require it, and nothing
// else of one another. In the dashboard it adds the script with which pages open and seal values
// in the browser, and the page where a person sets up end-to-end encryption.
//
// This is the module: what the plugin declares, and the wiring of its core (svc_vault_core).
#include "at_rest.h"
#include "encryption_routes.h"
#include "encryption_shapes.h"
#include "rotation.h"
#include "vault_pages.h"
#include "vault_service.h"
#include "vault_store.h"

#include <svc/sdk/dashboard.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/vault.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>

namespace svc::plugins::vault {

class VaultPlugin : public sdk::Plugin {
  static constexpr std::size_t kChangeMaxBytes = 64 * 1024 * 1024;

 public:
  VaultPlugin() {
    info_.name = "vault";
    info_.version = "0.1.0";
    info_.description =
        "The vault: protected values encrypted at rest, and end-to-end encryption metadata.";
    info_.events = {{"encryption.updated",
                     "An account set up end-to-end encryption or changed its passphrase; object: "
                     "the metadata (GET /api/encryption/).",
                     {},
                     encryptionSchema()}};
    // Its operator route (/admin/vault/) is the admin listener's, outside these.
    info_.paths = {"/api/encryption/"};
    info_.offers_services = {sdk::kVaultService.name};
    info_.uses_services = {sdk::kDashboardPagesService.name};
    info_.config = {
        {"vault.master_key_file", "${data.dir}/vault/master.key",
         "the master keys of encryption at rest (made, mode 0600, when absent); back it up with "
         "the database",
         false, false},
        {"vault.rekey_seconds", "600",
         "how long a passphrase change may hold an account's vault before it lapses", false, false},
    };
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    const auto& config = context.config();
    const int lease = config.getInt("vault.rekey_seconds");
    if (lease < 10 || lease > 86400) {
      throw std::invalid_argument("vault.rekey_seconds must be from 10 to 86400");
    }
    cipher_ = std::make_unique<AtRestCipher>(config.getString("vault.master_key_file"));
    store_ = std::make_unique<VaultStore>(context.database());
    service_ = std::make_shared<VaultService>(*store_, *cipher_, context.logger());
    routes_ = std::make_unique<EncryptionRoutes>(*store_, *service_, context.events(), lease);
    rotation_ = std::make_unique<Rotation>(*store_, *service_, *cipher_);
  }

  std::vector<sdk::Migration> migrations() const override { return VaultStore::migrations(); }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    using sdk::AuthNeed;
    using sdk::Schema;
    auto add = [&](const char* method, const char* pattern, AuthNeed need, const char* summary,
                   sdk::Handler h, std::optional<Schema> request, std::map<int, Schema> responses,
                   std::vector<sdk::RouteError> errors = {}, std::size_t max_body = 0) {
      routes.add({method, pattern, need, sdk::BodyKind::kJson, max_body, summary, std::move(h),
                  std::move(request), std::vector<sdk::Param>{}, std::move(responses),
                  std::move(errors)});
    };
    EncryptionRoutes& e = *routes_;
    const sdk::RouteError expired{409, "rekey_expired",
                                  "the rekey_token's lease ended or another change replaced it"};
    add("GET", "/api/encryption/", AuthNeed::kAnyKey,
        "The account's end-to-end encryption metadata (404 until set up).",
        sdk::bindHandler(e, &EncryptionRoutes::get), std::nullopt, {{200, encryptionSchema()}});
    for (const char* method : {"PUT", "PATCH"}) {
      // It carries every protected value of the account when the passphrase changes.
      add(method, "/api/encryption/", AuthNeed::kAccount,
          "Set up end-to-end encryption, or change the passphrase (with a rekey lease).",
          sdk::bindHandler(e, &EncryptionRoutes::set), encryptionInputSchema(),
          {{200, encryptionSchema()}},
          {expired,
           {409, "rekey_required",
            "the vault has values or a passphrase already: take a lease (POST "
            "/api/encryption/rekey/) and send every value sealed with its rekey_token"},
           {409, "vault_rekeying", "another passphrase change holds the vault (Retry-After)"}},
          kChangeMaxBytes);
    }
    add("POST", "/api/encryption/rekey/", AuthNeed::kAccount,
        "Start a passphrase change: hold the vault and list every protected value.",
        sdk::bindHandler(e, &EncryptionRoutes::beginRekey),
        Schema::object().describe("No body (or `{}`)."), {{201, rekeySchema()}});
    add("DELETE", "/api/encryption/rekey/", AuthNeed::kAccount,
        "End a passphrase change without changing anything.",
        sdk::bindHandler(e, &EncryptionRoutes::endRekey), rekeyEndSchema(), {{204, Schema::any()}},
        {expired});
    add("POST", "/admin/vault/rotate-key/", AuthNeed::kOperator,
        "Re-encrypt every vault value under a new master key.",
        sdk::bindHandler(*rotation_, &Rotation::handle), Schema::object(),
        {{200, rotationSchema()}}, {{409, "conflict", "another rotation made a newer key"}});
  }

  void registerServices(sdk::ServiceRegistry& services) override {
    services.offer(sdk::kVaultService, std::static_pointer_cast<sdk::Vault>(service_));
  }
  void start() override {
    // A wrong or lost key file must not pass for a new one: every key a stored value names must
    // be in it.
    std::vector<std::string> in_use;
    {
      Poco::Data::Session s = store_->database().session();
      in_use = store_->keyIdsInUse(s);
    }
    const auto have = cipher_->keyIds();
    std::string missing;
    for (const auto& id : in_use) {
      if (std::find(have.begin(), have.end(), id) == have.end()) missing += " " + id;
    }
    if (!missing.empty()) {
      throw std::runtime_error(
          "vault.master_key_file " + cipher_->path() +
          (cipher_->madeFile() ? " did not exist and was made new, but" : " lacks keys:") +
          " the database holds values encrypted under master key(s)" + missing +
          ". Point vault.master_key_file at the file that holds them (restore it from backup).");
    }
    // The dashboard may be disabled; without it there are no pages to serve the script to.
    if (auto pages = context_->services().find(sdk::kDashboardPagesService)) {
      pages->addScript(dashboardScript());
      pages->addScript(workerScript());
      pages->add(dashboardPage());
    }
    events_ = &context_->events();
    subscription_ = events_->subscribe([service = service_](const sdk::Event& e) {
      if (e.type == "encryption.updated") service->invalidate(e.account);
    });
  }
  void stop() override {
    if (events_) events_->unsubscribe(subscription_);
    events_ = nullptr;
  }

 private:
  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  sdk::EventBus* events_ = nullptr;
  std::uint64_t subscription_ = 0;
  std::unique_ptr<AtRestCipher> cipher_;
  std::unique_ptr<VaultStore> store_;
  std::shared_ptr<VaultService> service_;
  std::unique_ptr<EncryptionRoutes> routes_;
  std::unique_ptr<Rotation> rotation_;
};

}  // namespace svc::plugins::vault

SVC_PLUGIN(svc::plugins::vault::VaultPlugin)
