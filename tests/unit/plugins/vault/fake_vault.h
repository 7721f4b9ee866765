// A small in-memory stand-in for the vault plugin (sdk/vault.h), for the passwords plugin's unit
// tests: the same rule (409 `vault_rekeying`, `e2e::` values once an account has end-to-end
// encryption, refused before), its values kept in a table of the test's database so they roll
// back with the caller's transaction. No encryption: the real vault's tests cover that.
#pragma once

#include <svc/sdk/plugin.h>
#include <svc/sdk/vault.h>

#include <Poco/Data/Session.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>

namespace svc::plugins::vault::testing {

class FakeVault : public sdk::Vault {
 public:
  bool endToEnd(const std::string& account) override;
  void put(Poco::Data::Session& tx, const sdk::VaultWrite& write) override;
  std::map<std::string, sdk::ProtectedFields> get(Poco::Data::Session& s,
                                                  const std::string& account,
                                                  const std::string& holder,
                                                  const std::vector<std::string>& records) override;
  std::map<std::string, sdk::StoredRecord> fetch(Poco::Data::Session& s, const std::string& account,
                                                 const std::string& holder,
                                                 const std::vector<std::string>& records) override;
  std::optional<sdk::ProtectedFields> open(const sdk::StoredRecord& stored) override;
  void erase(Poco::Data::Session& tx, const std::string& account, const std::string& holder,
             const std::string& record) override;

  void setEndToEnd(const std::string& account);
  void setRekeying(const std::string& account, bool rekeying);
  std::atomic<int> gets{0};   ///< get() and fetch() calls: a list reads its page's in one.
  std::atomic<int> opens{0};  ///< open() calls.
  std::atomic<int> epoch{0};  ///< What fetch() stamps; open() of another answers stale.

 private:
  std::mutex mutex_;
  std::set<std::string> e2e_, rekeying_;
};

/// A plugin named `vault` offering a FakeVault (what `requires_plugins: vault` needs).
class FakeVaultPlugin : public sdk::Plugin {
 public:
  explicit FakeVaultPlugin(std::shared_ptr<FakeVault> vault);
  const sdk::PluginInfo& info() const override { return info_; }
  void configure(sdk::PluginContext&) override {}
  std::vector<sdk::Migration> migrations() const override;
  void registerRoutes(sdk::RouteRegistry&) override {}
  void registerServices(sdk::ServiceRegistry& services) override;
  void start() override {}
  void stop() override {}

 private:
  sdk::PluginInfo info_;
  std::shared_ptr<FakeVault> vault_;
};

}  // namespace svc::plugins::vault::testing
