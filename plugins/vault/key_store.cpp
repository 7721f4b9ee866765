#include "key_store.h"

#include <svc/sdk/util.h>

#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::vault {

sdk::Migration KeyStore::migration() {
  const std::vector<std::string> statements = {
      "CREATE TABLE vault_data_keys (key_id VARCHAR(16) NOT NULL, wrap_id VARCHAR(16) NOT NULL, "
      "wrapped VARCHAR(128) NOT NULL, created_us BIGINT NOT NULL, PRIMARY KEY (key_id, wrap_id))",
      "CREATE TABLE vault_key_state (id INTEGER NOT NULL PRIMARY KEY, current_key VARCHAR(16) NOT "
      "NULL, previous_key VARCHAR(16) NOT NULL, wrap_id VARCHAR(16) NOT NULL, next_wrap_id "
      "VARCHAR(16) NOT NULL)",
  };
  sdk::Migration m;
  m.version = 2;
  m.description = "data keys in the database, wrapped by the key file's key";
  for (const auto& sql : statements) {
    m.sqlite.push_back(sql);
    m.mysql.push_back(sql + " DEFAULT CHARSET=ascii COLLATE=ascii_bin");
  }
  return m;
}

std::string KeyStore::lockClause(Lock lock) const {
  if (db_.dialect() != sdk::Dialect::kMysql) return "";
  if (lock == Lock::kShared) return " LOCK IN SHARE MODE";
  if (lock == Lock::kExclusive) return " FOR UPDATE";
  return "";
}

std::string KeyStore::insertIgnore() const {
  return db_.dialect() == sdk::Dialect::kMysql ? "INSERT IGNORE" : "INSERT OR IGNORE";
}

void KeyStore::claim(Poco::Data::Session& s, const std::string& wrap_id) {
  std::string w = wrap_id;
  s << insertIgnore() +
           " INTO vault_key_state (id, current_key, previous_key, wrap_id, next_wrap_id) VALUES "
           "(1, '', '', ?, '')",
      use(w), now;
}

std::optional<KeyState> KeyStore::state(Poco::Data::Session& s, Lock lock) {
  using T = Poco::Tuple<std::string, std::string, std::string, std::string>;
  std::vector<T> rows;
  s << "SELECT current_key, previous_key, wrap_id, next_wrap_id FROM vault_key_state WHERE id = "
       "1" +
           lockClause(lock),
      into(rows), now;
  if (rows.empty()) return std::nullopt;
  const auto& t = rows.front();
  return KeyState{t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>()};
}

std::vector<WrappedKey> KeyStore::wrapped(Poco::Data::Session& s, const std::string& key_id) {
  using T = Poco::Tuple<std::string, std::string, std::string>;
  std::vector<T> rows;
  std::string id = key_id;
  if (id.empty()) {
    s << "SELECT key_id, wrap_id, wrapped FROM vault_data_keys ORDER BY key_id, wrap_id",
        into(rows), now;
  } else {
    s << "SELECT key_id, wrap_id, wrapped FROM vault_data_keys WHERE key_id = ?", use(id),
        into(rows), now;
  }
  std::vector<WrappedKey> out;
  for (const auto& t : rows) out.push_back({t.get<0>(), t.get<1>(), t.get<2>()});
  return out;
}

std::vector<std::string> KeyStore::keyIds(Poco::Data::Session& s) {
  std::vector<std::string> ids;
  s << "SELECT DISTINCT key_id FROM vault_data_keys ORDER BY key_id", into(ids), now;
  return ids;
}

std::vector<std::string> KeyStore::valueKeyIds(Poco::Data::Session& s) {
  std::vector<std::string> ids;
  s << "SELECT DISTINCT key_id FROM vault_values", into(ids), now;
  return ids;
}

void KeyStore::add(Poco::Data::Session& s, const WrappedKey& key, bool ignore_existing) {
  WrappedKey k = key;
  Poco::Int64 created = sdk::nowMicros();
  s << (ignore_existing ? insertIgnore() : std::string("INSERT")) +
           " INTO vault_data_keys (key_id, wrap_id, wrapped, created_us) VALUES (?, ?, ?, ?)",
      use(k.key_id), use(k.wrap_id), use(k.wrapped), use(created), now;
}

bool KeyStore::setCurrent(Poco::Data::Session& s, const std::string& expected,
                          const std::string& next) {
  std::string e = expected, n = next;
  Poco::Data::Statement update(s);
  update << "UPDATE vault_key_state SET previous_key = current_key, current_key = ? WHERE id = 1 "
            "AND current_key = ?",
      use(n), use(e);
  return update.execute() > 0;
}

void KeyStore::setNextWrap(Poco::Data::Session& s, const std::string& next_wrap_id) {
  std::string n = next_wrap_id;
  s << "UPDATE vault_key_state SET next_wrap_id = ? WHERE id = 1", use(n), now;
}

void KeyStore::finishWrap(Poco::Data::Session& s, const std::string& wrap_id) {
  std::string w = wrap_id;
  s << "DELETE FROM vault_data_keys WHERE wrap_id <> ?", use(w), now;
  s << "UPDATE vault_key_state SET wrap_id = ?, next_wrap_id = '' WHERE id = 1", use(w), now;
}

void KeyStore::dropWrap(Poco::Data::Session& s, const std::string& wrap_id) {
  std::string w = wrap_id;
  s << "DELETE FROM vault_data_keys WHERE wrap_id = ?", use(w), now;
}

void KeyStore::dropKey(Poco::Data::Session& s, const std::string& key_id) {
  std::string k = key_id;
  s << "DELETE FROM vault_data_keys WHERE key_id = ?", use(k), now;
}

}  // namespace svc::plugins::vault
