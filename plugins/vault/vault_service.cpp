#include "vault_service.h"

#include "e2e_rule.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

#include <stdexcept>

namespace svc::plugins::vault {

namespace {

// Holders and fields are names plugins choose in code, never client input.
bool isName(const std::string& name) {
  if (name.empty() || name.size() > 32 || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// @return the record's id as stored (lower-case).
std::string checkNames(const std::string& holder, const std::string& record) {
  if (!isName(holder) || !sdk::isUuid(record)) {
    throw std::logic_error("vault: holder must be [a-z][a-z0-9_]{0,31} and record a uuid, not `" +
                           holder + "`/`" + record + "`");
  }
  return Poco::toLower(record);
}

// Where a value belongs, bound into its encryption: a value copied to another account, record or
// field does not decrypt there.
std::string associatedData(const ValueRow& row) {
  return row.account_id + '\0' + row.holder + '\0' + row.record + '\0' + row.field;
}

}  // namespace

VaultService::VaultService(VaultStore& store, AtRestCipher& cipher, Poco::Logger& log)
    : store_(store), cipher_(cipher), log_(log) {}

void VaultService::refuseWhileRekeying(const std::optional<AccountRow>& row) {
  const std::int64_t now = sdk::nowMicros();
  if (!row || !row->rekeying(now)) return;
  const std::int64_t seconds = (row->rekey_expires_us - now) / 1000000 + 1;
  throw sdk::HttpError(409, "vault_rekeying",
                       "The account's vault passphrase is being changed: nothing in the vault "
                       "changes until that ends. Read GET /api/encryption/ again (the public key "
                       "may be new), seal the values again, and retry.")
      .header("Retry-After", std::to_string(seconds));
}

bool VaultService::endToEnd(const std::string& account_id) {
  Poco::Data::Session s = store_.database().session();
  const auto row = store_.account(s, account_id, Lock::kNone);
  return row && row->endToEnd();
}

void VaultService::put(Poco::Data::Session& tx, const sdk::VaultWrite& write) {
  const std::string record = checkNames(write.holder, write.record);
  // Shared: many writes at once, none while a passphrase change (exclusive) decides.
  const auto account = store_.account(tx, write.account, Lock::kShared);
  refuseWhileRekeying(account);
  const bool end_to_end = account && account->endToEnd();
  // Read under the shared lock, so a passphrase change (exclusive) cannot land between the check
  // and the write: a value sealed to the old key is refused, never stored where nobody holding
  // the new passphrase could open it.
  if (!write.sealed_to.empty() && (!end_to_end || write.sealed_to != account->public_key)) {
    throw sdk::HttpError(409, "e2e_key_changed",
                         "The values were sealed to a public key that is not this account's "
                         "(its passphrase was changed, elsewhere): nothing was stored. Unlock "
                         "the vault again with the current passphrase, seal the values again "
                         "and retry.");
  }
  sdk::FieldErrors refused;
  for (const auto& [field, value] : write.fields) {
    if (!isName(field)) throw std::logic_error("vault: bad field name `" + field + "`");
    if (auto why = protectedValueError(value, end_to_end)) refused.add(field, *why);
  }
  refused.throwIfAny();
  for (const auto& [field, value] : write.fields) {
    if (value.empty()) {
      store_.eraseValue(tx, write.account, write.holder, record, field);
      continue;
    }
    ValueRow row{write.holder, record, field, write.account, write.identity, "", ""};
    seal(tx, row, value);
    store_.putValue(tx, row);
  }
}

std::map<std::string, sdk::ProtectedFields> VaultService::get(
    Poco::Data::Session& s, const std::string& account, const std::string& holder,
    const std::vector<std::string>& records) {
  std::map<std::string, sdk::ProtectedFields> out;
  for (const auto& [id, stored] : fetch(s, account, holder, records)) {
    if (stored.fields.empty()) continue;
    auto& fields = out[id];
    for (const auto& f : stored.fields) {
      fields[f.name] =
          openRow(ValueRow{holder, stored.record, f.name, account, "", f.key_id, f.sealed});
    }
  }
  return out;
}

void VaultService::invalidate(const std::string& account_id) {
  std::lock_guard lock(mutex_);
  ++replacements_[account_id];
}

std::uint64_t VaultService::epoch(const std::string& account_id) {
  std::uint64_t replaced = 0;
  {
    std::lock_guard lock(mutex_);
    if (auto it = replacements_.find(account_id); it != replacements_.end()) replaced = it->second;
  }
  // Both counters only grow, and a process sees fewer than 2^32 key changes.
  return (replaced << 32) + cipher_.generation();
}

std::map<std::string, sdk::StoredRecord> VaultService::fetch(
    Poco::Data::Session& s, const std::string& account, const std::string& holder,
    const std::vector<std::string>& records) {
  // Taken before reading: a change that lands while the rows are read makes them stale.
  const std::uint64_t epoch_now = epoch(account);
  std::map<std::string, std::string> given;  // stored id → id as the caller gave it
  for (const auto& r : records) given[Poco::toLower(r)] = r;
  std::vector<std::string> ids;
  std::map<std::string, sdk::StoredRecord> out;
  for (const auto& [id, as_given] : given) {
    ids.push_back(id);
    out[as_given] = sdk::StoredRecord{account, holder, id, epoch_now, {}};
  }
  for (auto& row : store_.values(s, account, holder, ids)) {
    out[given[row.record]].fields.push_back(
        {std::move(row.field), std::move(row.key_id), std::move(row.sealed)});
  }
  return out;
}

std::optional<sdk::ProtectedFields> VaultService::open(const sdk::StoredRecord& stored) {
  if (stored.epoch != epoch(stored.account)) return std::nullopt;
  sdk::ProtectedFields out;
  for (const auto& f : stored.fields) {
    const ValueRow row{stored.holder, stored.record, f.name, stored.account, "",
                       f.key_id,      f.sealed};
    auto plain = cipher_.open({row.key_id, row.sealed}, associatedData(row));
    if (!plain) {
      // A key retired since the fetch (this process just learned of another's rotation): stale.
      if (stored.epoch != epoch(stored.account)) return std::nullopt;
      undecryptable(row);
    }
    out[f.name] = std::move(*plain);
  }
  return out;
}

void VaultService::erase(Poco::Data::Session& tx, const std::string& account,
                         const std::string& holder, const std::string& record) {
  const std::string id = checkNames(holder, record);
  refuseWhileRekeying(store_.account(tx, account, Lock::kShared));
  store_.eraseRecord(tx, account, holder, id);
}

void VaultService::report(const ValueRow& row) {
  log_.error(
      "vault: the %s of %s %s does not decrypt under data key %s (damaged, moved, or "
      "the key is not in the database or not wrapped under vault.master_key_file's key)",
      row.field, row.holder, row.record, row.key_id);
}

void VaultService::undecryptable(const ValueRow& row) {
  report(row);
  throw std::runtime_error("a vault value does not decrypt");
}

std::optional<std::string> VaultService::tryOpenRow(const ValueRow& row) {
  auto plain = cipher_.open({row.key_id, row.sealed}, associatedData(row));
  if (!plain) report(row);
  return plain;
}

std::string VaultService::openRow(const ValueRow& row) {
  auto plain = cipher_.open({row.key_id, row.sealed}, associatedData(row));
  if (!plain) undecryptable(row);
  return std::move(*plain);
}

void VaultService::seal(Poco::Data::Session& s, ValueRow& row, const std::string& value) {
  const SealedAtRest sealed = cipher_.seal(s, associatedData(row), value);
  row.key_id = sealed.key_id;
  row.sealed = sealed.data;
}

}  // namespace svc::plugins::vault
