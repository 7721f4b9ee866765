#include "auth_store.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::auth {

namespace {
using UserRow = Poco::Tuple<std::string, std::string, std::string, std::string, std::string>;
std::optional<User> firstUser(std::vector<UserRow>& rows) {
  if (rows.empty()) return std::nullopt;
  auto& r = rows.front();
  return User{r.get<0>(), r.get<1>(), r.get<2>(), r.get<3>(), r.get<4>()};
}
constexpr const char* kUserColumns =
    "SELECT id, account_id, email, name, password_hash FROM auth_users ";

using KeyRow = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                           std::string, std::string, Poco::Int64, Poco::Int64, Poco::Int64>;
KeyRecord toKey(const KeyRow& r) {
  KeyRecord k;
  k.id = r.get<0>();
  k.account_id = r.get<1>();
  k.kind = r.get<2>();
  k.identity_id = r.get<3>();
  k.label = r.get<4>();
  k.prefix = r.get<5>();
  k.created_by = r.get<6>();
  k.created_us = r.get<7>();
  k.revoked_us = r.get<8>();
  k.last_used_us = r.get<9>();
  return k;
}
constexpr const char* kKeyColumns =
    "SELECT id, account_id, kind, identity_id, label, prefix, created_by, created_us, revoked_us, "
    "last_used_us FROM auth_keys ";

using DeviceRow = Poco::Tuple<std::string, std::string, std::string, std::string, std::string, int,
                              Poco::Int64, Poco::Int64>;
std::optional<DeviceCode> firstDevice(std::vector<DeviceRow>& rows) {
  if (rows.empty()) return std::nullopt;
  auto& r = rows.front();
  DeviceCode d;
  d.id = r.get<0>();
  d.user_code = r.get<1>();
  d.client_id = r.get<2>();
  d.status = r.get<3>();
  d.user_id = r.get<4>();
  d.interval_s = r.get<5>();
  d.last_poll_us = r.get<6>();
  d.expires_us = r.get<7>();
  return d;
}
constexpr const char* kDeviceColumns =
    "SELECT id, user_code, client_id, status, user_id, interval_s, last_poll_us, expires_us FROM "
    "auth_device_codes ";
}  // namespace

std::optional<User> AuthStore::userByEmail(const std::string& email) {
  Poco::Data::Session s = db_.session();
  std::vector<UserRow> rows;
  std::string e = email;
  s << std::string(kUserColumns) + "WHERE email = ?", use(e), into(rows), now;
  return firstUser(rows);
}

std::optional<User> AuthStore::userById(const std::string& id) {
  Poco::Data::Session s = db_.session();
  std::vector<UserRow> rows;
  std::string i = id;
  s << std::string(kUserColumns) + "WHERE id = ?", use(i), into(rows), now;
  return firstUser(rows);
}

std::optional<User> AuthStore::addUser(const std::string& email, const std::string& name,
                                       const std::string& password_hash) {
  std::optional<User> added;
  db_.transaction([&](Poco::Data::Session& s) { added = addUser(s, email, name, password_hash); });
  return added;
}

std::optional<User> AuthStore::addUser(Poco::Data::Session& s, const std::string& email,
                                       const std::string& name, const std::string& password_hash) {
  User u{sdk::newUuid(), "", email, name, password_hash};
  int n = 0;
  std::string e = email;
  s << "SELECT COUNT(*) FROM auth_users WHERE email = ?", use(e), into(n), now;
  if (n > 0) return std::nullopt;
  Poco::Int64 at = sdk::nowMicros();
  s << "INSERT INTO auth_users (id, account_id, email, name, password_hash, created_us, "
       "updated_us) VALUES (?, ?, ?, ?, ?, ?, ?)",
      use(u.id), use(u.account_id), use(u.email), use(u.name), use(u.password_hash), use(at),
      use(at), now;
  return u;
}

std::optional<std::string> AuthStore::linkedUser(Poco::Data::Session& s, const std::string& issuer,
                                                 const std::string& subject) {
  std::vector<std::string> ids;
  std::string i = issuer, sub = subject;
  s << "SELECT user_id FROM auth_user_links WHERE issuer = ? AND subject = ?", use(i), use(sub),
      into(ids), now;
  if (ids.empty()) return std::nullopt;
  return ids.front();
}

void AuthStore::link(Poco::Data::Session& s, const std::string& issuer, const std::string& subject,
                     const std::string& user_id) {
  std::string i = issuer, sub = subject, u = user_id;
  Poco::Int64 at = sdk::nowMicros();
  s << "INSERT INTO auth_user_links (issuer, subject, user_id, created_us) VALUES (?, ?, ?, ?)",
      use(i), use(sub), use(u), use(at), now;
}

std::optional<User> AuthStore::userById(Poco::Data::Session& s, const std::string& id) {
  std::vector<UserRow> rows;
  std::string i = id;
  s << std::string(kUserColumns) + "WHERE id = ?", use(i), into(rows), now;
  return firstUser(rows);
}

std::optional<User> AuthStore::userByEmail(Poco::Data::Session& s, const std::string& email) {
  std::vector<UserRow> rows;
  std::string e = email;
  s << std::string(kUserColumns) + "WHERE email = ?", use(e), into(rows), now;
  return firstUser(rows);
}

void AuthStore::addSession(const std::string& token_hash, const std::string& user_id,
                           std::int64_t expires_us) {
  db_.transaction([&](Poco::Data::Session& s) {
    std::string h = token_hash, u = user_id;
    Poco::Int64 at = sdk::nowMicros(), exp = expires_us;
    // Sweep expired sessions as new ones start: the table stays the size of the live ones.
    s << "DELETE FROM auth_web_sessions WHERE expires_us < ?", use(at), now;
    s << "INSERT INTO auth_web_sessions (token_hash, user_id, created_us, expires_us) VALUES (?, "
         "?, ?, ?)",
        use(h), use(u), use(at), use(exp), now;
  });
}

std::optional<std::string> AuthStore::sessionUser(const std::string& token_hash) {
  Poco::Data::Session s = db_.session();
  std::vector<std::string> ids;
  std::string h = token_hash;
  Poco::Int64 at = sdk::nowMicros();
  s << "SELECT user_id FROM auth_web_sessions WHERE token_hash = ? AND expires_us > ?", use(h),
      use(at), into(ids), now;
  if (ids.empty()) return std::nullopt;
  return ids.front();
}

void AuthStore::endSession(const std::string& token_hash,
                           const std::function<void(Poco::Data::Session&)>& also) {
  db_.transaction([&](Poco::Data::Session& s) {
    std::string h = token_hash;
    s << "DELETE FROM auth_web_sessions WHERE token_hash = ?", use(h), now;
    if (also) also(s);
  });
}

std::string AuthStore::ensureAccount(Poco::Data::Session& s, User& user, const std::string& plan) {
  std::vector<std::string> current;
  s << "SELECT account_id FROM auth_users WHERE id = ?", use(user.id), into(current), now;
  if (!current.empty() && !current.front().empty()) {
    user.account_id = current.front();
    return user.account_id;
  }
  std::string id = sdk::newUuid(), p = plan;
  Poco::Int64 at = sdk::nowMicros();
  s << "INSERT INTO auth_accounts (id, plan, created_us, updated_us) VALUES (?, ?, ?, ?)", use(id),
      use(p), use(at), use(at), now;
  s << "UPDATE auth_users SET account_id = ?, updated_us = ? WHERE id = ?", use(id), use(at),
      use(user.id), now;
  user.account_id = id;
  return id;
}

std::optional<std::string> AuthStore::accountPlan(const std::string& account_id) {
  Poco::Data::Session s = db_.session();
  std::vector<std::string> plans;
  std::string id = account_id;
  s << "SELECT plan FROM auth_accounts WHERE id = ?", use(id), into(plans), now;
  if (plans.empty()) return std::nullopt;
  return plans.front();
}

bool AuthStore::setAccountPlan(const std::string& account_id, const std::string& plan) {
  std::size_t changed = 0;
  db_.transaction([&](Poco::Data::Session& s) {
    std::string id = account_id, p = plan;
    Poco::Int64 at = sdk::nowMicros();
    int n = 0;
    s << "SELECT COUNT(*) FROM auth_accounts WHERE id = ?", use(id), into(n), now;
    if (n == 0) return;
    s << "UPDATE auth_accounts SET plan = ?, updated_us = ? WHERE id = ?", use(p), use(at), use(id),
        now;
    changed = 1;
  });
  return changed > 0;
}

KeyRecord AuthStore::addKey(Poco::Data::Session& s, const std::string& account_id,
                            const std::string& kind, const std::string& identity_id,
                            const std::string& label, const std::string& prefix,
                            const std::string& key_hash, const std::string& created_by) {
  KeyRecord k;
  k.id = sdk::newUuid();
  k.account_id = account_id;
  k.kind = kind;
  k.identity_id = identity_id;
  k.label = label;
  k.prefix = prefix;
  k.created_by = created_by;
  k.created_us = sdk::nowMicros();
  std::string hash = key_hash;
  Poco::Int64 created = k.created_us, zero = 0;
  s << "INSERT INTO auth_keys (id, account_id, kind, identity_id, label, prefix, key_hash, "
       "created_by, created_us, revoked_us, last_used_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      use(k.id), use(k.account_id), use(k.kind), use(k.identity_id), use(k.label), use(k.prefix),
      use(hash), use(k.created_by), use(created), use(zero), bind(zero), now;
  return k;
}

int AuthStore::lockAndCountKeys(Poco::Data::Session& s, const std::string& account_id) {
  std::string a = account_id;
  Poco::Int64 at = sdk::nowMicros();
  // A write takes the row lock on MySQL and the write lock on SQLite: portable, unlike FOR UPDATE.
  s << "UPDATE auth_accounts SET updated_us = ? WHERE id = ?", use(at), use(a), now;
  int n = 0;
  s << "SELECT COUNT(*) FROM auth_keys WHERE account_id = ? AND revoked_us = 0", use(a), into(n),
      now;
  return n;
}

std::optional<KeyRecord> AuthStore::keyByHash(const std::string& key_hash) {
  Poco::Data::Session s = db_.session();
  std::vector<KeyRow> rows;
  std::string h = key_hash;
  s << std::string(kKeyColumns) + "WHERE key_hash = ?", use(h), into(rows), now;
  if (rows.empty()) return std::nullopt;
  return toKey(rows.front());
}

std::vector<KeyRecord> AuthStore::keysOf(const std::string& account_id) {
  Poco::Data::Session s = db_.session();
  std::vector<KeyRow> rows;
  std::string a = account_id;
  s << std::string(kKeyColumns) + "WHERE account_id = ? AND revoked_us = 0 ORDER BY created_us, id",
      use(a), into(rows), now;
  std::vector<KeyRecord> out;
  for (auto& r : rows) out.push_back(toKey(r));
  return out;
}

std::optional<KeyRecord> AuthStore::revokeKey(
    const std::string& account_id, const std::string& key_id,
    const std::function<void(Poco::Data::Session&, const KeyRecord&)>& also) {
  std::optional<KeyRecord> revoked;
  db_.transaction([&](Poco::Data::Session& s) {
    std::vector<KeyRow> rows;
    std::string a = account_id, id = key_id;
    s << std::string(kKeyColumns) + "WHERE id = ? AND account_id = ? AND revoked_us = 0", use(id),
        use(a), into(rows), now;
    if (rows.empty()) return;
    Poco::Int64 at = sdk::nowMicros();
    s << "UPDATE auth_keys SET revoked_us = ? WHERE id = ?", use(at), use(id), now;
    revoked = toKey(rows.front());
    revoked->revoked_us = at;
    if (also) also(s, *revoked);
  });
  return revoked;
}

std::vector<std::string> AuthStore::revokedSince(std::int64_t since_us) {
  Poco::Data::Session s = db_.session();
  std::vector<std::string> hashes;
  Poco::Int64 since = since_us;
  s << "SELECT key_hash FROM auth_keys WHERE revoked_us >= ? AND revoked_us > 0", use(since),
      into(hashes), now;
  return hashes;
}

void AuthStore::touchKeys(const std::vector<std::pair<std::string, std::int64_t>>& last_used) {
  if (last_used.empty()) return;
  db_.transaction([&](Poco::Data::Session& s) {
    for (auto& [id, at] : last_used) {
      std::string i = id;
      Poco::Int64 t = at;
      s << "UPDATE auth_keys SET last_used_us = ? WHERE id = ? AND last_used_us < ?", use(t),
          use(i), bind(t), now;
    }
  });
}

void AuthStore::addDeviceCode(const std::string& code_hash, const DeviceCode& code) {
  db_.transaction([&](Poco::Data::Session& s) {
    DeviceCode d = code;
    std::string h = code_hash;
    Poco::Int64 last = d.last_poll_us, expires = d.expires_us, at = sdk::nowMicros();
    s << "INSERT INTO auth_device_codes (id, code_hash, user_code, client_id, status, user_id, "
         "interval_s, last_poll_us, expires_us, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        use(d.id), use(h), use(d.user_code), use(d.client_id), use(d.status), use(d.user_id),
        use(d.interval_s), use(last), use(expires), use(at), now;
  });
}

std::optional<DeviceCode> AuthStore::deviceByHash(Poco::Data::Session& s,
                                                  const std::string& code_hash) {
  std::vector<DeviceRow> rows;
  std::string h = code_hash;
  s << std::string(kDeviceColumns) + "WHERE code_hash = ?", use(h), into(rows), now;
  return firstDevice(rows);
}

std::optional<DeviceCode> AuthStore::pendingByUserCode(const std::string& user_code) {
  Poco::Data::Session s = db_.session();
  std::vector<DeviceRow> rows;
  std::string c = user_code, pending = "pending";
  Poco::Int64 at = sdk::nowMicros();
  s << std::string(kDeviceColumns) + "WHERE user_code = ? AND status = ? AND expires_us > ?",
      use(c), use(pending), use(at), into(rows), now;
  return firstDevice(rows);
}

bool AuthStore::userCodeInUse(const std::string& user_code) {
  return pendingByUserCode(user_code).has_value();
}

std::vector<std::string> AuthStore::decidedAmong(const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  Poco::Data::Session s = db_.session();
  const Poco::Int64 at = sdk::nowMicros();
  // Batches of ids written into the statement: they are uuids this plugin made (checked again
  // here), so nothing a client sends reaches the SQL text.
  for (std::size_t from = 0; from < ids.size(); from += 200) {
    std::string list;
    for (std::size_t i = from; i < ids.size() && i < from + 200; ++i) {
      if (!sdk::isUuid(ids[i])) continue;
      if (!list.empty()) list += ",";
      list += "'" + ids[i] + "'";
    }
    if (list.empty()) continue;
    std::vector<std::string> decided;
    std::string pending = "pending";
    Poco::Int64 now_us = at;
    s << "SELECT id FROM auth_device_codes WHERE id IN (" + list +
             ") AND (status <> ? OR expires_us <= ?)",
        use(pending), use(now_us), into(decided), now;
    out.insert(out.end(), decided.begin(), decided.end());
  }
  return out;
}

bool AuthStore::decide(const std::string& id, const std::string& status,
                       const std::string& user_id) {
  std::size_t changed = 0;
  db_.transaction([&](Poco::Data::Session& s) {
    std::string i = id, st = status, u = user_id, pending = "pending";
    Poco::Data::Statement update = (s << "UPDATE auth_device_codes SET status = ?, user_id = ? "
                                         "WHERE id = ? AND status = ?",
                                    use(st), use(u), use(i), use(pending));
    changed = update.execute();
  });
  return changed == 1;
}

void AuthStore::notePoll(Poco::Data::Session& s, const std::string& id, std::int64_t at,
                         int interval_s) {
  std::string i = id;
  Poco::Int64 t = at;
  int iv = interval_s;
  s << "UPDATE auth_device_codes SET last_poll_us = ?, interval_s = ? WHERE id = ?", use(t),
      use(iv), use(i), now;
}

bool AuthStore::consume(Poco::Data::Session& s, const std::string& id) {
  std::string i = id, consumed = "consumed", approved = "approved";
  Poco::Data::Statement update =
      (s << "UPDATE auth_device_codes SET status = ? WHERE id = ? AND status = ?", use(consumed),
       use(i), use(approved));
  return update.execute() == 1;
}

void AuthStore::addRefresh(Poco::Data::Session& s, const std::string& family,
                           const std::string& user_id, const std::string& account_id,
                           const std::string& token_hash, std::int64_t expires_us) {
  std::string id = sdk::newUuid(), f = family, u = user_id, a = account_id, h = token_hash;
  Poco::Int64 at = sdk::nowMicros(), exp = expires_us, zero = 0;
  s << "INSERT INTO auth_refresh_tokens (id, family_id, user_id, account_id, token_hash, "
       "created_us, expires_us, retired_us, revoked_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      use(id), use(f), use(u), use(a), use(h), use(at), use(exp), use(zero), bind(zero), now;
}

std::optional<AuthStore::Refresh> AuthStore::refreshByHash(Poco::Data::Session& s,
                                                           const std::string& token_hash) {
  using Row = Poco::Tuple<std::string, std::string, std::string, std::string, Poco::Int64,
                          Poco::Int64, Poco::Int64>;
  std::vector<Row> rows;
  std::string h = token_hash;
  s << "SELECT id, family_id, user_id, account_id, expires_us, retired_us, revoked_us FROM "
       "auth_refresh_tokens WHERE token_hash = ?",
      use(h), into(rows), now;
  if (rows.empty()) return std::nullopt;
  auto& r = rows.front();
  return Refresh{r.get<0>(), r.get<1>(), r.get<2>(), r.get<3>(),
                 r.get<4>(), r.get<5>(), r.get<6>()};
}

bool AuthStore::retire(Poco::Data::Session& s, const std::string& id) {
  std::string i = id;
  Poco::Int64 at = sdk::nowMicros(), zero = 0;
  Poco::Data::Statement update =
      (s << "UPDATE auth_refresh_tokens SET retired_us = ? WHERE id = ? AND retired_us = ?",
       use(at), use(i), use(zero));
  return update.execute() == 1;
}

std::vector<std::pair<std::string, std::int64_t>> AuthStore::familiesRevokedSince(
    std::int64_t since_us) {
  Poco::Data::Session s = db_.session();
  std::vector<std::string> families;
  std::vector<Poco::Int64> ats;
  Poco::Int64 since = since_us;
  s << "SELECT family_id, MAX(revoked_us) FROM auth_refresh_tokens WHERE revoked_us >= ? AND "
       "revoked_us > 0 GROUP BY family_id",
      use(since), into(families), into(ats), now;
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (std::size_t i = 0; i < families.size(); ++i) out.emplace_back(families[i], ats[i]);
  return out;
}

void AuthStore::revokeFamily(Poco::Data::Session& s, const std::string& family_id) {
  std::string f = family_id;
  Poco::Int64 at = sdk::nowMicros(), zero = 0;
  s << "UPDATE auth_refresh_tokens SET revoked_us = ? WHERE family_id = ? AND revoked_us = ?",
      use(at), use(f), use(zero), now;
}

}  // namespace svc::plugins::auth
