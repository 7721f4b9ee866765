#include "password_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

#include <algorithm>

using namespace Poco::Data::Keywords;

namespace svc::plugins::passwords {

namespace {

constexpr const char* kColumns =
    "SELECT uuid, account_id, identity_uuid, domain, created_us, updated_us FROM "
    "password_entries ";

std::vector<EntryRow> readEntries(Poco::Data::Statement& select) {
  using T =
      Poco::Tuple<std::string, std::string, std::string, std::string, Poco::Int64, Poco::Int64>;
  std::vector<T> rows;
  select, into(rows), now;
  std::vector<EntryRow> out;
  out.reserve(rows.size());
  for (const auto& t : rows) {
    out.push_back({t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>(), t.get<5>()});
  }
  return out;
}

// The WHERE clause of a list and its binds, in order.
std::string where(const EntryFilter& f, std::vector<std::string>& binds) {
  // The identity index serves a scoped list (the kernel checked the identity is the account's),
  // the account index the rest.
  std::string sql = f.identity.empty() ? "WHERE account_id = ?" : "WHERE identity_uuid = ?";
  binds.push_back(f.identity.empty() ? f.account : f.identity);
  if (f.domain) {
    sql += " AND domain = ?";
    binds.push_back(*f.domain);
  }
  if (f.search) {
    // INSTR, not LIKE: nothing in the search term is a wildcard. Both sides are lower-case.
    sql += " AND INSTR(domain, ?) > 0";
    binds.push_back(*f.search);
  }
  return sql;
}

}  // namespace

PasswordStore::PasswordStore(sdk::Database& database, sdk::EventBus& events, sdk::Vault& vault)
    : db_(database), events_(events), vault_(vault) {}

std::vector<sdk::Migration> PasswordStore::migrations() {
  const std::vector<std::string> statements = {
      "CREATE TABLE password_entries (uuid CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) "
      "NOT NULL, identity_uuid CHAR(36) NOT NULL, domain VARCHAR(253) NOT NULL, created_us "
      "BIGINT NOT NULL, updated_us BIGINT NOT NULL)",
      "CREATE INDEX password_entries_identity ON password_entries (identity_uuid, created_us, "
      "uuid)",
      "CREATE INDEX password_entries_account ON password_entries (account_id, created_us, uuid)",
      "CREATE INDEX password_entries_domain ON password_entries (account_id, domain)",
  };
  // Domains compare as stored (lower-case), on MariaDB as on SQLite.
  return {sdk::Migration::portableUtf8(
      1, "password entries (their protected fields are the vault's)", statements)};
}

std::optional<EntryRow> PasswordStore::entry(Poco::Data::Session& s, const std::string& uuid) {
  if (!sdk::isUuid(uuid)) return std::nullopt;
  std::string u = Poco::toLower(uuid);
  Poco::Data::Statement select = (s << std::string(kColumns) + "WHERE uuid = ?", use(u));
  auto rows = readEntries(select);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

long PasswordStore::count(Poco::Data::Session& s, const EntryFilter& filter) {
  std::vector<std::string> binds;
  long n = 0;
  Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM password_entries " + where(filter, binds));
  for (auto& b : binds) q, use(b);
  q, into(n), now;
  return n;
}

std::vector<EntryRow> PasswordStore::list(Poco::Data::Session& s, const EntryFilter& filter,
                                          int limit, int offset) {
  std::vector<std::string> binds;
  Poco::Data::Statement q = (s << std::string(kColumns) + where(filter, binds) +
                                      " ORDER BY created_us DESC, uuid DESC LIMIT ? OFFSET ?");
  for (auto& b : binds) q, use(b);
  q, use(limit), use(offset);
  return readEntries(q);
}

std::map<std::string, sdk::ProtectedFields> PasswordStore::secrets(
    Poco::Data::Session& s, const std::vector<EntryRow>& rows) {
  // One vault read per account (a list is always one account's).
  std::map<std::string, std::vector<std::string>> by_account;
  for (const auto& r : rows) by_account[r.account_id].push_back(r.uuid);
  std::map<std::string, sdk::ProtectedFields> out;
  for (const auto& [account, ids] : by_account)
    out.merge(vault_.get(s, account, kVaultHolder, ids));
  return out;
}

void PasswordStore::insert(Poco::Data::Session& tx, const EntryRow& row,
                           const sdk::ProtectedFields& fields, const std::string& sealed_to) {
  EntryRow r = row;
  Poco::Int64 created = r.created_us, updated = r.updated_us;
  tx << "INSERT INTO password_entries (uuid, account_id, identity_uuid, domain, created_us, "
        "updated_us) VALUES (?, ?, ?, ?, ?, ?)",
      use(r.uuid), use(r.account_id), use(r.identity_uuid), use(r.domain), use(created),
      use(updated), now;
  vault_.put(tx, {r.account_id, r.identity_uuid, kVaultHolder, r.uuid, fields, sealed_to});
  events_.publish("password.created", r.account_id, r.identity_uuid, entryJson(r, nullptr), &tx);
}

EntryRow PasswordStore::update(Poco::Data::Session& tx, const EntryRow& row,
                               const std::optional<std::string>& domain,
                               const sdk::ProtectedFields& fields, const std::string& sealed_to) {
  // Never back in time, even when the clock steps: updated_dt is at least created_dt.
  Poco::Int64 at = std::max<std::int64_t>(sdk::nowMicros(), row.created_us);
  std::string uuid = row.uuid;
  // Only what the write gives: a concurrent change of another field is kept.
  Poco::Data::Statement update =
      domain
          ? (tx << "UPDATE password_entries SET domain = ?, updated_us = ? WHERE uuid = ?",
             bind(*domain), use(at), use(uuid))
          : (tx << "UPDATE password_entries SET updated_us = ? WHERE uuid = ?", use(at), use(uuid));
  if (update.execute() == 0) throw sdk::HttpError::notFound("password entry");
  auto fresh = entry(tx, uuid);
  if (!fresh) throw sdk::HttpError::notFound("password entry");
  if (!fields.empty()) {
    vault_.put(tx,
               {fresh->account_id, fresh->identity_uuid, kVaultHolder, uuid, fields, sealed_to});
  }
  events_.publish("password.updated", fresh->account_id, fresh->identity_uuid,
                  entryJson(*fresh, nullptr), &tx);
  return *fresh;
}

void PasswordStore::remove(Poco::Data::Session& tx, const EntryRow& row) {
  std::string uuid = row.uuid;
  Poco::Data::Statement del = (tx << "DELETE FROM password_entries WHERE uuid = ?", use(uuid));
  if (del.execute() == 0) throw sdk::HttpError::notFound("password entry");
  vault_.erase(tx, row.account_id, kVaultHolder, row.uuid);
  events_.publish("password.deleted", row.account_id, row.identity_uuid, entryJson(row, nullptr),
                  &tx);
}

Poco::JSON::Object::Ptr PasswordStore::entryJson(const EntryRow& row,
                                                 const sdk::ProtectedFields* fields) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("uuid", row.uuid);
  o->set("identity", row.identity_uuid);
  o->set("domain", row.domain);
  if (fields) {
    for (const char* name : {"username", "password", "notes"}) {
      auto it = fields->find(name);
      o->set(name, it == fields->end() ? std::string() : it->second);
    }
  }
  o->set("created_dt", sdk::isoTimestamp(row.created_us));
  o->set("updated_dt", sdk::isoTimestamp(row.updated_us));
  return o;
}

}  // namespace svc::plugins::passwords
