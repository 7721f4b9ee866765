// vault: where plugins keep protected values (sdk::Vault, svc/sdk/vault.h). It owns each account's
// end-to-end encryption metadata (`/api/encryption/`) and the rule that follows from it, encrypts
// every value at rest under data keys kept in the database, wrapped by the master key of
// `vault.master_key_file` (the same file on every svcd of the database), rotates the data key,
// replaces the master key, and changes an account's passphrase atomically. Passwords and secrets
// each require it, and nothing else of one another. In the dashboard it adds the script with which
// pages open and seal values in the browser, and the page where a person sets up end-to-end
// encryption.
//
// This is the module: what the plugin declares, and the wiring of its core (svc_vault_core).
#include "at_rest.h"
#include "encryption_routes.h"
#include "encryption_shapes.h"
#include "key_routes.h"
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
         "the master key that wraps the data keys of encryption at rest (made, mode 0600, when "
         "absent): the same file on every svcd of the database; back it up with the database",
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
    cipher_ = std::make_unique<AtRestCipher>(config.getString("vault.master_key_file"),
                                             context.database());
    store_ = std::make_unique<VaultStore>(context.database());
    service_ = std::make_shared<VaultService>(*store_, *cipher_, context.logger());
    routes_ = std::make_unique<EncryptionRoutes>(*store_, *service_, context.events(), lease);
    rotation_ = std::make_unique<Rotation>(*store_, *service_, *cipher_);
    key_routes_ = std::make_unique<KeyRoutes>(*cipher_);
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
        "Make a new data key current on every svcd and re-encrypt every vault value under it.",
        sdk::bindHandler(*rotation_, &Rotation::handle), Schema::object(),
        {{200, rotationSchema()}},
        {{409, "conflict",
          "another rotation made a newer key, or a master key replacement runs whose new file "
          "this svcd lacks"}});
    KeyRoutes& k = *key_routes_;
    add("GET", "/admin/vault/keys/", AuthNeed::kOperator,
        "The data keys, the master key that wraps them, and what this svcd's key file holds.",
        sdk::bindHandler(k, &KeyRoutes::status), std::nullopt, {{200, KeyRoutes::statusSchema()}});
    add("POST", "/admin/vault/master-key/", AuthNeed::kOperator,
        "Begin replacing the master key: a new key file beside this svcd's, every data key "
        "wrapped under both.",
        sdk::bindHandler(k, &KeyRoutes::begin), Schema::object(),
        {{200, KeyRoutes::replacementSchema()}},
        {{409, "conflict", "a replacement is under way already"}});
    add("POST", "/admin/vault/master-key/finish/", AuthNeed::kOperator,
        "Finish replacing the master key: the old one no longer wraps the data keys.",
        sdk::bindHandler(k, &KeyRoutes::finish), Schema::object(),
        {{200, KeyRoutes::replacementSchema()}},
        {{409, "conflict", "none is under way, or this svcd's key file is not the new one yet"}});
    add("POST", "/admin/vault/master-key/cancel/", AuthNeed::kOperator,
        "Cancel replacing the master key: the new one no longer wraps the data keys.",
        sdk::bindHandler(k, &KeyRoutes::cancel), Schema::object(),
        {{200, KeyRoutes::replacementSchema()}});
  }

  void registerServices(sdk::ServiceRegistry& services) override {
    services.offer(sdk::kVaultService, std::static_pointer_cast<sdk::Vault>(service_));
  }
  void start() override {
    // A wrong or lost key file must not pass for a new one: it must open every data key of the
    // database (an older install's keys are moved into the database first).
    cipher_->start();
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
  std::unique_ptr<KeyRoutes> key_routes_;
};

}  // namespace svc::plugins::vault

SVC_PLUGIN(svc::plugins::vault::VaultPlugin)
