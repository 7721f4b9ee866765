#include "secret_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/Exception.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::secrets {

namespace {

constexpr const char* kColumns =
    "SELECT id, account_id, identity_uuid, key_name, created_us, updated_us FROM secrets ";

std::vector<SecretRow> read(Poco::Data::Statement& select) {
  using T =
      Poco::Tuple<std::string, std::string, std::string, std::string, Poco::Int64, Poco::Int64>;
  std::vector<T> rows;
  select, into(rows), now;
  std::vector<SecretRow> out;
  out.reserve(rows.size());
  for (const auto& t : rows) {
    out.push_back({t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>(), t.get<5>()});
  }
  return out;
}

// The identity index serves an identity's list (and, with a key, the unique index finds the one),
// the account indexes the rest.
std::string where(const SecretFilter& f, std::vector<std::string>& binds) {
  std::string sql;
  if (!f.identity_uuid.empty()) {
    sql = "WHERE identity_uuid = ?";
    binds.push_back(f.identity_uuid);
  } else {
    sql = "WHERE account_id = ?";
    binds.push_back(f.account_id);
  }
  if (f.key) {
    sql += " AND key_name = ?";
    binds.push_back(*f.key);
  }
  return sql;
}

// Both databases name the unique index's columns or the index in the error.
bool isKeyTaken(const Poco::Exception& e) {
  const std::string why = e.displayText();
  return why.find("secrets_identity_key") != std::string::npos ||  // MariaDB's key name
         why.find("secrets.key_name") != std::string::npos;        // SQLite's columns
}

sdk::HttpError keyTaken(const std::string& key) {
  return sdk::HttpError(409, "conflict",
                        "This identity already has a secret with the key " +
                            sdk::quoteForDetail(key, 128) +
                            "; change that one (GET /api/secrets/?key=... finds it) or choose "
                            "another key.");
}

}  // namespace

std::vector<sdk::Migration> SecretStore::migrations() {
  const std::vector<std::string> statements = {
      "CREATE TABLE secrets (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT NULL, "
      "identity_uuid CHAR(36) NOT NULL, key_name VARCHAR(128) NOT NULL, created_us BIGINT NOT "
      "NULL, updated_us BIGINT NOT NULL)",
      // A key names one secret of an identity: the index decides between racing writers.
      "CREATE UNIQUE INDEX secrets_identity_key ON secrets (identity_uuid, key_name)",
      "CREATE INDEX secrets_identity ON secrets (identity_uuid, created_us, id)",
      "CREATE INDEX secrets_account ON secrets (account_id, created_us, id)",
      "CREATE INDEX secrets_account_key ON secrets (account_id, key_name, created_us, id)",
  };
  // Keys are case-sensitive: MariaDB compares them byte for byte, as SQLite does.
  return {sdk::Migration::portableUtf8(1, "secrets (their values are the vault's)", statements)};
}

std::optional<SecretRow> SecretStore::find(Poco::Data::Session& s, const std::string& id) {
  if (!sdk::isUuid(id)) return std::nullopt;
  std::string u = Poco::toLower(id);
  Poco::Data::Statement select = (s << std::string(kColumns) + "WHERE id = ?", use(u));
  auto rows = read(select);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::optional<SecretRow> SecretStore::byKey(Poco::Data::Session& s, const std::string& identity,
                                            const std::string& key) {
  std::string i = identity, k = key;
  Poco::Data::Statement select =
      (s << std::string(kColumns) + "WHERE identity_uuid = ? AND key_name = ?", use(i), use(k));
  auto rows = read(select);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::vector<SecretRow> SecretStore::list(Poco::Data::Session& s, const SecretFilter& filter,
                                         int limit, int offset) {
  std::vector<std::string> binds;
  Poco::Data::Statement select = (s << std::string(kColumns) + where(filter, binds) +
                                           " ORDER BY created_us DESC, id DESC LIMIT ? OFFSET ?");
  for (auto& b : binds) select, use(b);
  select, use(limit), use(offset);
  return read(select);
}

long SecretStore::count(Poco::Data::Session& s, const SecretFilter& filter) {
  std::vector<std::string> binds;
  long n = 0;
  Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM secrets " + where(filter, binds));
  for (auto& b : binds) q, use(b);
  q, into(n), now;
  return n;
}

void SecretStore::insert(Poco::Data::Session& tx, const SecretRow& row) {
  SecretRow r = row;
  Poco::Int64 created = r.created_us, updated = r.updated_us;
  try {
    tx << "INSERT INTO secrets (id, account_id, identity_uuid, key_name, created_us, updated_us) "
          "VALUES (?, ?, ?, ?, ?, ?)",
        use(r.id), use(r.account_id), use(r.identity_uuid), use(r.key), use(created), use(updated),
        now;
  } catch (const Poco::Exception& e) {
    if (isKeyTaken(e)) throw keyTaken(r.key);
    throw;
  }
  events_.publish("secret.created", r.account_id, r.identity_uuid, eventJson(r), &tx);
}

void SecretStore::update(Poco::Data::Session& tx, const SecretRow& row) {
  SecretRow r = row;
  Poco::Int64 updated = r.updated_us;
  std::size_t changed = 0;
  try {
    Poco::Data::Statement q = (tx << "UPDATE secrets SET key_name = ?, updated_us = ? WHERE id = ?",
                               use(r.key), use(updated), use(r.id));
    changed = q.execute();
  } catch (const Poco::Exception& e) {
    if (isKeyTaken(e)) throw keyTaken(r.key);
    throw;
  }
  if (changed == 0) throw sdk::HttpError::notFound("secret");  // deleted meanwhile
  events_.publish("secret.updated", r.account_id, r.identity_uuid, eventJson(r), &tx);
}

bool SecretStore::remove(Poco::Data::Session& tx, const SecretRow& row) {
  std::string id = row.id;
  Poco::Data::Statement q = (tx << "DELETE FROM secrets WHERE id = ?", use(id));
  if (q.execute() == 0) return false;
  events_.publish("secret.deleted", row.account_id, row.identity_uuid, eventJson(row), &tx);
  return true;
}

Poco::JSON::Object::Ptr SecretStore::json(const SecretRow& row,
                                          const sdk::ProtectedFields& fields) {
  auto field = [&](const char* name) {
    auto it = fields.find(name);
    return it == fields.end() ? std::string() : it->second;
  };
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("uuid", row.id);
  o->set("identity", row.identity_uuid);
  o->set("key", row.key);
  o->set("value", field("value"));
  o->set("notes", field("notes"));
  o->set("created_dt", sdk::isoTimestamp(row.created_us));
  o->set("updated_dt", sdk::isoTimestamp(row.updated_us));
  return o;
}

Poco::JSON::Object::Ptr SecretStore::eventJson(const SecretRow& row) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("uuid", row.id);
  o->set("identity", row.identity_uuid);
  o->set("key", row.key);
  o->set("created_dt", sdk::isoTimestamp(row.created_us));
  o->set("updated_dt", sdk::isoTimestamp(row.updated_us));
  return o;
}

}  // namespace svc::plugins::secrets
