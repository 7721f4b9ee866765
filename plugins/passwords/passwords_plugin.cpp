// passwords: an identity's password entries `{uuid, identity, domain, username, password, notes}`
// and a password generator. The protected fields are the vault's (svc/sdk/vault.h): it applies
// the account's end-to-end rule and encrypts them at rest; this plugin keeps the rest.
//
// This is the module: what the plugin declares, and the wiring of its core (svc_passwords_core).
#include "entry_shapes.h"
#include "password_routes.h"
#include "password_store.h"
#include "passwords_dashboard.h"

#include <svc/sdk/dashboard.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/vault.h>

#include <memory>

namespace svc::plugins::passwords {

class PasswordsPlugin : public sdk::Plugin {
 public:
  PasswordsPlugin() {
    info_.name = "passwords";
    info_.version = "0.1.0";
    info_.description = "Password entries of identities, kept in the vault, and a generator.";
    const char* shape = "; object: the entry without username, password and notes.";
    info_.events = {
        {"password.created",
         std::string("A password entry was stored") + shape,
         {"domain"},
         entryNamesSchema()},
        {"password.updated",
         std::string("A password entry changed") + shape,
         {"domain"},
         entryNamesSchema()},
        {"password.deleted",
         std::string("A password entry was deleted") + shape,
         {"domain"},
         entryNamesSchema()},
    };
    info_.paths = {"/api/passwords/"};
    info_.uses_services = {sdk::kVaultService.name, sdk::kDashboardPagesService.name};
    info_.requires_plugins = {"vault"};
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    vault_ = context.services().require(sdk::kVaultService);
    store_ = std::make_unique<PasswordStore>(context.database(), context.events(), *vault_);
    entries_ = std::make_unique<PasswordEntries>(*store_);
  }

  std::vector<sdk::Migration> migrations() const override { return PasswordStore::migrations(); }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    using sdk::AuthNeed;
    using sdk::Schema;
    const sdk::JsonRoutes add(routes);
    PasswordEntries& e = *entries_;
    const Schema entry = entrySchema();
    const sdk::RouteError rekeying{409, "vault_rekeying",
                                   "the account's passphrase is being changed (Retry-After)"};
    const sdk::RouteError sealed{
        400, "invalid",
        "the account has end-to-end encryption and a protected field is not sealed, or a "
        "password is left out to be generated"};
    const sdk::RouteError stale_key{409, "e2e_key_changed",
                                    "the values were sealed to a public key "
                                    "(X-Svc-E2e-Public-Key) that is no longer the account's"};
    // Said where an agent reads entries (MCP tools are described by these summaries): a sealed
    // field is not an error to retry, and no call to this server can open it.
    const std::string sealed_fields =
        " Once the account has end-to-end encryption, username, password and notes are `e2e::` "
        "sealed boxes that only the passphrase opens, on the client (svcctl passwords get UUID "
        "--reveal): this server, and so its API and MCP tools, cannot show them in clear.";
    add("GET", "/api/passwords/", AuthNeed::kAnyKey,
        "Password entries, newest first (domain, search)." + sealed_fields,
        sdk::bindHandler(e, &PasswordEntries::list), std::nullopt, listParams(),
        {{200, sdk::pageOf(entry, "PasswordEntryList")}});
    add("POST", "/api/passwords/", AuthNeed::kIdentity,
        "Store a password entry (without password: a generated one).",
        sdk::bindHandler(e, &PasswordEntries::create), entryInputSchema(EntryWrite::kCreate), {},
        {{201, entry}}, {rekeying, sealed, stale_key});
    add("GET", "/api/passwords/generate-password/", AuthNeed::kAnyKey,
        "A random password (length, digits, lowercase, uppercase, special, exclude_chars).",
        sdk::bindHandler(e, &PasswordEntries::generate), std::nullopt, generatorParams(),
        {{200, Schema::object("GeneratedPassword").required("password", Schema::string())}});
    const auto one = sdk::bindHandler(e, &PasswordEntries::one);
    const char* item = "/api/passwords/{uuid}/";
    add("GET", item, AuthNeed::kAnyKey, "One password entry." + sealed_fields, one, std::nullopt,
        {}, {{200, entry}});
    add("PUT", item, AuthNeed::kAnyKey, "Replace a password entry (every field).", one,
        entryInputSchema(EntryWrite::kReplace), {}, {{200, entry}}, {rekeying, sealed, stale_key});
    add("PATCH", item, AuthNeed::kAnyKey, "Change some of a password entry's fields.", one,
        entryInputSchema(EntryWrite::kPatch), {}, {{200, entry}}, {rekeying, sealed, stale_key});
    add("DELETE", item, AuthNeed::kAnyKey, "Delete a password entry.", one, std::nullopt, {},
        {{204, Schema::any()}}, {rekeying});
  }

  void registerServices(sdk::ServiceRegistry&) override {}
  void start() override {
    if (auto pages = context_->services().find(sdk::kDashboardPagesService)) {
      for (auto& page : dashboardPages()) pages->add(std::move(page));
    }
  }
  void stop() override {}

 private:
  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  std::shared_ptr<sdk::Vault> vault_;
  std::unique_ptr<PasswordStore> store_;
  std::unique_ptr<PasswordEntries> entries_;
};

}  // namespace svc::plugins::passwords

SVC_PLUGIN(svc::plugins::passwords::PasswordsPlugin)
