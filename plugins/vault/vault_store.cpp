#include "vault_store.h"

#include "key_store.h"

#include <svc/sdk/util.h>

#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::vault {

namespace {

// Poco's MySQL connector gives each result column a buffer of the column's declared size (and
// fails on LONGTEXT): a value is read as its first kHead characters, with its length, and the rare
// longer one completed in pieces.
constexpr int kHead = 16384;

const std::string kValueColumns =
    "SELECT holder, record, field, account_id, identity_uuid, key_id, SUBSTR(sealed, 1, " +
    std::to_string(kHead) + "), LENGTH(sealed) FROM vault_values ";

std::vector<ValueRow> readValues(Poco::Data::Session& s, Poco::Data::Statement& select) {
  using T = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                        std::string, std::string, Poco::Int64>;
  std::vector<T> rows;
  select, into(rows), now;
  std::vector<ValueRow> out;
  out.reserve(rows.size());
  for (const auto& t : rows) {
    ValueRow v{t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>(), t.get<5>(), t.get<6>()};
    // base64: one byte a character, so LENGTH counts characters on both databases.
    for (Poco::Int64 from = kHead + 1; from <= t.get<7>(); from += kHead) {
      std::vector<std::string> piece;
      s << "SELECT SUBSTR(sealed, ?, " + std::to_string(kHead) +
               ") FROM vault_values WHERE holder = ? AND record = ? AND field = ?",
          use(from), use(v.holder), use(v.record), use(v.field), into(piece), now;
      if (piece.empty()) break;
      v.sealed += piece.front();
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

VaultStore::VaultStore(sdk::Database& database) : db_(database) {}

std::vector<sdk::Migration> VaultStore::migrations() {
  const std::vector<std::string> statements = {
      "CREATE TABLE vault_accounts (account_id CHAR(36) NOT NULL PRIMARY KEY, salt VARCHAR(64) "
      "NOT NULL, public_key VARCHAR(64) NOT NULL, verifier VARCHAR(128) NOT NULL, kdf_t INTEGER "
      "NOT NULL, kdf_m INTEGER NOT NULL, kdf_p INTEGER NOT NULL, created_us BIGINT NOT NULL, "
      "updated_us BIGINT NOT NULL, rekey_token_hash VARCHAR(64) NOT NULL, rekey_expires_us "
      "BIGINT NOT NULL)",
      "CREATE TABLE vault_values (holder VARCHAR(32) NOT NULL, record CHAR(36) NOT NULL, field "
      "VARCHAR(32) NOT NULL, account_id CHAR(36) NOT NULL, identity_uuid CHAR(36) NOT NULL, "
      "key_id VARCHAR(16) NOT NULL, sealed TEXT NOT NULL, PRIMARY KEY (holder, record, field))",
      "CREATE INDEX vault_values_account ON vault_values (account_id)",
      "CREATE INDEX vault_values_key ON vault_values (key_id)",
  };
  sdk::Migration m;
  m.version = 1;
  m.description = "encryption metadata per account; protected values, encrypted at rest";
  for (const auto& sql : statements) {
    m.sqlite.push_back(sql);
    std::string mysql = sql;
    if (const auto at = mysql.find("sealed TEXT"); at != std::string::npos) {
      mysql.replace(at, 11, "sealed MEDIUMTEXT");
    }
    m.mysql.push_back(mysql.rfind("CREATE TABLE", 0) == 0
                          ? mysql + " DEFAULT CHARSET=ascii COLLATE=ascii_bin"
                          : mysql);
  }
  return {m, KeyStore::migration()};
}

std::string VaultStore::lockClause(Lock lock) const {
  if (db_.dialect() != sdk::Dialect::kMysql) return "";
  if (lock == Lock::kShared) return " LOCK IN SHARE MODE";
  if (lock == Lock::kExclusive) return " FOR UPDATE";
  return "";
}

std::optional<AccountRow> VaultStore::account(Poco::Data::Session& s, const std::string& account_id,
                                              Lock lock) {
  using T = Poco::Tuple<std::string, std::string, std::string, int, int, int, Poco::Int64,
                        Poco::Int64, std::string, Poco::Int64>;
  std::vector<T> rows;
  std::string id = account_id;
  s << "SELECT salt, public_key, verifier, kdf_t, kdf_m, kdf_p, created_us, updated_us, "
       "rekey_token_hash, rekey_expires_us FROM vault_accounts WHERE account_id = ?" +
           lockClause(lock),
      use(id), into(rows), now;
  if (rows.empty()) return std::nullopt;
  const auto& t = rows.front();
  AccountRow a;
  a.account_id = account_id;
  a.salt = t.get<0>();
  a.public_key = t.get<1>();
  a.verifier = t.get<2>();
  a.kdf_t = t.get<3>();
  a.kdf_m = t.get<4>();
  a.kdf_p = t.get<5>();
  a.created_us = t.get<6>();
  a.updated_us = t.get<7>();
  a.rekey_token_hash = t.get<8>();
  a.rekey_expires_us = t.get<9>();
  return a;
}

void VaultStore::ensureAccount(const std::string& account_id) {
  Poco::Data::Session s = db_.session();
  if (account(s, account_id, Lock::kNone)) return;
  std::string id = account_id;
  const std::string ignore = db_.dialect() == sdk::Dialect::kMysql ? "IGNORE" : "OR IGNORE";
  s << "INSERT " + ignore +
           " INTO vault_accounts (account_id, salt, public_key, verifier, kdf_t, kdf_m, kdf_p, "
           "created_us, updated_us, rekey_token_hash, rekey_expires_us) VALUES (?, '', '', '', "
           "3, 65536, 1, 0, 0, '', 0)",
      use(id), now;
}

void VaultStore::saveAccount(Poco::Data::Session& s, const AccountRow& row) {
  AccountRow a = row;
  if (account(s, a.account_id, Lock::kNone)) {
    s << "UPDATE vault_accounts SET salt = ?, public_key = ?, verifier = ?, kdf_t = ?, kdf_m = ?, "
         "kdf_p = ?, created_us = ?, updated_us = ?, rekey_token_hash = ?, rekey_expires_us = ? "
         "WHERE account_id = ?",
        use(a.salt), use(a.public_key), use(a.verifier), use(a.kdf_t), use(a.kdf_m), use(a.kdf_p),
        use(a.created_us), use(a.updated_us), use(a.rekey_token_hash), use(a.rekey_expires_us),
        use(a.account_id), now;
    return;
  }
  s << "INSERT INTO vault_accounts (account_id, salt, public_key, verifier, kdf_t, kdf_m, kdf_p, "
       "created_us, updated_us, rekey_token_hash, rekey_expires_us) VALUES (?, ?, ?, ?, ?, ?, ?, "
       "?, ?, ?, ?)",
      use(a.account_id), use(a.salt), use(a.public_key), use(a.verifier), use(a.kdf_t),
      use(a.kdf_m), use(a.kdf_p), use(a.created_us), use(a.updated_us), use(a.rekey_token_hash),
      use(a.rekey_expires_us), now;
}

void VaultStore::putValue(Poco::Data::Session& s, const ValueRow& row) {
  ValueRow v = row;
  // One statement: a delete-then-insert would take gap locks on MySQL that two inserts of new
  // values deadlock on.
  const std::string upsert =
      db_.dialect() == sdk::Dialect::kMysql
          ? "ON DUPLICATE KEY UPDATE key_id = IF(account_id = VALUES(account_id), "
            "VALUES(key_id), key_id), sealed = IF(account_id = VALUES(account_id), "
            "VALUES(sealed), sealed)"
          : "ON CONFLICT (holder, record, field) DO UPDATE SET key_id = excluded.key_id, sealed = "
            "excluded.sealed WHERE account_id = excluded.account_id";
  s << "INSERT INTO vault_values (holder, record, field, account_id, identity_uuid, key_id, "
       "sealed) VALUES (?, ?, ?, ?, ?, ?, ?) " +
           upsert,
      use(v.holder), use(v.record), use(v.field), use(v.account_id), use(v.identity_uuid),
      use(v.key_id), use(v.sealed), now;
}

void VaultStore::eraseValue(Poco::Data::Session& s, const std::string& account_id,
                            const std::string& holder, const std::string& record,
                            const std::string& field) {
  std::string a = account_id, h = holder, r = record, f = field;
  s << "DELETE FROM vault_values WHERE holder = ? AND record = ? AND field = ? AND account_id = ?",
      use(h), use(r), use(f), use(a), now;
}

void VaultStore::eraseRecord(Poco::Data::Session& s, const std::string& account_id,
                             const std::string& holder, const std::string& record) {
  std::string a = account_id, h = holder, r = record;
  s << "DELETE FROM vault_values WHERE holder = ? AND record = ? AND account_id = ?", use(h),
      use(r), use(a), now;
}

std::vector<ValueRow> VaultStore::values(Poco::Data::Session& s, const std::string& account_id,
                                         const std::string& holder,
                                         const std::vector<std::string>& records) {
  std::vector<ValueRow> out;
  std::string a = account_id, h = holder;
  // Batches of ids written into the statement: only uuids (checked here), so nothing a client
  // sends reaches the SQL text.
  for (std::size_t from = 0; from < records.size(); from += 200) {
    std::string list;
    for (std::size_t i = from; i < records.size() && i < from + 200; ++i) {
      if (!sdk::isUuid(records[i])) continue;
      if (!list.empty()) list += ",";
      list += "'" + records[i] + "'";
    }
    if (list.empty()) continue;
    Poco::Data::Statement select =
        (s << kValueColumns + "WHERE holder = ? AND record IN (" + list + ")", use(h));
    // Found by the primary key; another account's rows (a holder's bug) are left out here.
    for (auto& row : readValues(s, select)) {
      if (row.account_id == a) out.push_back(std::move(row));
    }
  }
  return out;
}

std::vector<ValueRow> VaultStore::accountValues(Poco::Data::Session& s,
                                                const std::string& account_id, Lock lock) {
  std::string id = account_id;
  Poco::Data::Statement select =
      (s << kValueColumns + "WHERE account_id = ? ORDER BY holder, record, field" +
                lockClause(lock),
       use(id));
  return readValues(s, select);
}

std::vector<ValueRow> VaultStore::notUnderKey(Poco::Data::Session& s, const std::string& key_id,
                                              int limit) {
  std::string id = key_id;
  Poco::Data::Statement select =
      (s << kValueColumns + "WHERE key_id <> ? ORDER BY holder, record, field LIMIT " +
                std::to_string(limit),
       use(id));
  return readValues(s, select);
}

bool VaultStore::reseal(Poco::Data::Session& s, const ValueRow& was, const std::string& key_id,
                        const std::string& sealed) {
  ValueRow w = was;
  std::string k = key_id, v = sealed;
  Poco::Data::Statement update(s);
  update << "UPDATE vault_values SET key_id = ?, sealed = ? WHERE holder = ? AND record = ? AND "
            "field = ? AND key_id = ? AND sealed = ?",
      use(k), use(v), use(w.holder), use(w.record), use(w.field), use(w.key_id), use(w.sealed);
  return update.execute() > 0;
}

std::vector<std::string> VaultStore::keyIdsInUse(Poco::Data::Session& s) {
  std::vector<std::string> ids;
  s << "SELECT DISTINCT key_id FROM vault_values", into(ids), now;
  return ids;
}

}  // namespace svc::plugins::vault
