#include "identity_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/String.h>
#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::identities {

namespace {

using Row = Poco::Tuple<std::string, std::string, std::string, Poco::Int64, Poco::Int64>;
constexpr const char* kColumns =
    "SELECT uuid, account_id, name, created_us, updated_us FROM identities ";

Identity toIdentity(const Row& r) {
  return {r.get<0>(), r.get<1>(), r.get<2>(), r.get<3>(), r.get<4>()};
}

}  // namespace

std::string validName(const std::string& raw) {
  // Its length and characters are the route's declaration's; spaces alone are no name.
  std::string name = Poco::trim(raw);
  if (name.empty()) throw sdk::HttpError::invalid("name", "must not be empty");
  return name;
}

std::vector<sdk::Migration> IdentityStore::migrations() {
  return {sdk::Migration::portable(
      1, "identities and their voice-agent settings",
      {"CREATE TABLE identities (uuid CHAR(36) NOT NULL PRIMARY KEY, "
       "account_id CHAR(36) NOT NULL, name VARCHAR(400) NOT NULL, "
       "created_us BIGINT NOT NULL, updated_us BIGINT NOT NULL)",
       "CREATE INDEX identities_account ON identities (account_id, created_us)",
       "CREATE TABLE identity_voice_agents (identity_uuid CHAR(36) NOT NULL PRIMARY KEY, "
       "response_url VARCHAR(2048) NOT NULL, enabled SMALLINT NOT NULL, "
       "created_us BIGINT NOT NULL, updated_us BIGINT NOT NULL)"})};
}

std::optional<Identity> IdentityStore::load(const std::string& uuid) {
  Poco::Data::Session s = db_.session();
  std::vector<Row> rows;
  std::string u = uuid;
  s << std::string(kColumns) + "WHERE uuid = ?", use(u), into(rows), now;
  if (rows.empty()) return std::nullopt;
  return toIdentity(rows.front());
}

long IdentityStore::count(const std::string& account) {
  Poco::Data::Session s = db_.session();
  long n = 0;
  std::string a = account;
  s << "SELECT COUNT(*) FROM identities WHERE account_id = ?", use(a), into(n), now;
  return n;
}

std::vector<Identity> IdentityStore::page(const std::string& account, int limit, int offset) {
  Poco::Data::Session s = db_.session();
  std::vector<Row> rows;
  std::string a = account;
  s << std::string(kColumns) + "WHERE account_id = ? ORDER BY created_us, uuid LIMIT ? OFFSET ?",
      use(a), use(limit), use(offset), into(rows), now;
  std::vector<Identity> out;
  for (const auto& row : rows) out.push_back(toIdentity(row));
  return out;
}

void IdentityStore::insert(Poco::Data::Session& s, const Identity& i) {
  std::string uuid = i.uuid, account = i.account_id, name = i.name;
  Poco::Int64 created = i.created_us, updated = i.updated_us;
  s << "INSERT INTO identities (uuid, account_id, name, created_us, updated_us) VALUES (?, ?, ?, "
       "?, ?)",
      use(uuid), use(account), use(name), use(created), use(updated), now;
}

void IdentityStore::update(Poco::Data::Session& s, const Identity& i) {
  std::string uuid = i.uuid, name = i.name;
  Poco::Int64 at = i.updated_us;
  s << "UPDATE identities SET name = ?, updated_us = ? WHERE uuid = ?", use(name), use(at),
      use(uuid), now;
}

std::optional<sdk::IdentityRef> Directory::find(const std::string& account_id,
                                                const std::string& identity_uuid) {
  if (!sdk::isUuid(identity_uuid)) return std::nullopt;
  const std::string uuid = Poco::toLower(identity_uuid);
  {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(uuid);
    if (it != cache_.end() && sdk::nowMicros() - it->second.at_us < 1000000) {
      if (it->second.account_id != account_id) return std::nullopt;
      return it->second.ref;
    }
  }
  auto found = store_.load(uuid);
  if (!found) return std::nullopt;
  sdk::IdentityRef ref{found->uuid, found->name};
  {
    std::lock_guard lock(mutex_);
    if (cache_.size() > 100000) cache_.clear();
    cache_[uuid] = {found->account_id, ref, sdk::nowMicros()};
  }
  if (found->account_id != account_id) return std::nullopt;
  return ref;
}

void Directory::forget(const std::string& uuid) {
  std::lock_guard lock(mutex_);
  cache_.erase(uuid);
}

}  // namespace svc::plugins::identities
