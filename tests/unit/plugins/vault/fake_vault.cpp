#include "fake_vault.h"

#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::vault::testing {

bool FakeVault::endToEnd(const std::string& account) {
  std::lock_guard<std::mutex> lock(mutex_);
  return e2e_.count(account) != 0;
}

void FakeVault::setEndToEnd(const std::string& account) {
  std::lock_guard<std::mutex> lock(mutex_);
  e2e_.insert(account);
}

void FakeVault::setRekeying(const std::string& account, bool rekeying) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (rekeying) {
    rekeying_.insert(account);
  } else {
    rekeying_.erase(account);
  }
}

void FakeVault::put(Poco::Data::Session& tx, const sdk::VaultWrite& w) {
  bool e2e = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (rekeying_.count(w.account)) {
      throw sdk::HttpError(409, "vault_rekeying", "The vault's passphrase is being changed.");
    }
    e2e = e2e_.count(w.account) != 0;
  }
  for (const auto& [field, value] : w.fields) {
    const bool sealed = value.rfind(sdk::kSealedValuePrefix, 0) == 0;
    if (e2e && !value.empty() && !sealed) throw sdk::HttpError::invalid(field, "must be sealed");
    if (!e2e && sealed) throw sdk::HttpError::invalid(field, "no encryption is set up");
  }
  for (const auto& [name, v] : w.fields) {
    std::string account = w.account, holder = w.holder, record = w.record, field = name, value = v;
    tx << "DELETE FROM fake_vault WHERE holder = ? AND record = ? AND field = ?", use(holder),
        use(record), use(field), now;
    tx << "INSERT INTO fake_vault (account, holder, record, field, value) VALUES (?, ?, ?, ?, ?)",
        use(account), use(holder), use(record), use(field), use(value), now;
  }
}

std::map<std::string, sdk::ProtectedFields> FakeVault::get(
    Poco::Data::Session& s, const std::string& account, const std::string& holder,
    const std::vector<std::string>& records) {
  ++gets;
  std::map<std::string, sdk::ProtectedFields> out;
  for (std::string record : records) {
    std::string a = account, h = holder;
    std::vector<Poco::Tuple<std::string, std::string>> rows;
    // As the vault does: values of another account are never returned.
    s << "SELECT field, value FROM fake_vault WHERE account = ? AND holder = ? AND record = ?",
        use(a), use(h), use(record), into(rows), now;
    for (const auto& t : rows) out[record][t.get<0>()] = t.get<1>();
  }
  return out;
}

std::map<std::string, sdk::StoredRecord> FakeVault::fetch(Poco::Data::Session& s,
                                                          const std::string& account,
                                                          const std::string& holder,
                                                          const std::vector<std::string>& records) {
  const auto stamp = static_cast<std::uint64_t>(epoch.load());
  auto values = get(s, account, holder, records);
  std::map<std::string, sdk::StoredRecord> out;
  for (const auto& record : records) {
    auto& stored = out[record] = sdk::StoredRecord{account, holder, record, stamp, {}};
    for (const auto& [field, value] : values[record]) stored.fields.push_back({field, "", value});
  }
  return out;
}

std::optional<sdk::ProtectedFields> FakeVault::open(const sdk::StoredRecord& stored) {
  ++opens;
  if (stored.epoch != static_cast<std::uint64_t>(epoch.load())) return std::nullopt;
  sdk::ProtectedFields out;
  for (const auto& f : stored.fields) out[f.name] = f.sealed;
  return out;
}

void FakeVault::erase(Poco::Data::Session& tx, const std::string& account,
                      const std::string& holder, const std::string& record) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (rekeying_.count(account)) {
      throw sdk::HttpError(409, "vault_rekeying", "The vault's passphrase is being changed.");
    }
  }
  std::string h = holder, r = record;
  tx << "DELETE FROM fake_vault WHERE holder = ? AND record = ?", use(h), use(r), now;
}

FakeVaultPlugin::FakeVaultPlugin(std::shared_ptr<FakeVault> vault) : vault_(std::move(vault)) {
  info_.name = "vault";
  info_.version = "0.0.1";
  info_.description = "a fake vault for tests";
  info_.offers_services = {sdk::kVaultService.name};
}

std::vector<sdk::Migration> FakeVaultPlugin::migrations() const {
  return {sdk::Migration::portable(
      1, "fake vault values",
      {"CREATE TABLE fake_vault (account CHAR(36), holder VARCHAR(32), record CHAR(36), "
       "field VARCHAR(32), value TEXT)"})};
}

void FakeVaultPlugin::registerServices(sdk::ServiceRegistry& services) {
  services.offer(sdk::kVaultService, vault_);
}

}  // namespace svc::plugins::vault::testing
