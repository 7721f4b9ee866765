#include "contact_store.h"

#include "contact_fields.h"
#include "contact_search.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

#include <algorithm>

using namespace Poco::Data::Keywords;

namespace svc::plugins::contacts {

namespace {

// A key column of an absent email or number: unique per contact, so the unique indexes hold only
// the present ones (portable, where NULL handling in unique indexes and in Poco's binding is not).
std::string absentKey(const ContactRow& c) {
  return "-" + c.id;
}
std::string emailKey(const ContactRow& c) {
  return c.email.empty() ? absentKey(c) : Poco::toLower(c.email);
}
std::string phoneKey(const ContactRow& c) {
  return c.phone_number.empty() ? absentKey(c) : c.phone_number;
}
std::string searchTextOf(const ContactRow& c) {
  return searchText({c.email, c.display_name, c.nickname, c.phone_number});
}

constexpr const char* kColumns =
    "SELECT id, account_id, identity_uuid, email, display_name, nickname, phone_number, "
    "created_us, updated_us FROM contacts ";

std::vector<ContactRow> readContacts(Poco::Data::Statement& select) {
  using T = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                        std::string, std::string, Poco::Int64, Poco::Int64>;
  std::vector<T> rows;
  select, into(rows), now;
  std::vector<ContactRow> out;
  out.reserve(rows.size());
  for (const auto& t : rows) {
    out.push_back({t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>(), t.get<5>(),
                   t.get<6>(), t.get<7>(), t.get<8>()});
  }
  return out;
}

std::optional<ContactRow> first(std::vector<ContactRow> rows) {
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::string keyList(const std::vector<std::int64_t>& keys) {
  std::string out;
  for (auto k : keys) out += (out.empty() ? "" : ", ") + std::to_string(k);
  return out;
}

Poco::Dynamic::Var orNull(const std::string& text) {
  return text.empty() ? Poco::Dynamic::Var() : Poco::Dynamic::Var(text);
}

}  // namespace

ContactStore::ContactStore(sdk::Database& database, sdk::EventBus& events)
    : db_(database), events_(events) {}

std::vector<sdk::Migration> ContactStore::migrations() {
  sdk::Migration m;
  m.version = 1;
  m.description = "contacts, their search grams, per-identity settings";
  const std::vector<std::string> tables = {
      "CREATE TABLE contacts (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT NULL, "
      "identity_uuid CHAR(36) NOT NULL, email VARCHAR(254) NOT NULL, email_key VARCHAR(254) NOT "
      "NULL, phone_number VARCHAR(16) NOT NULL, phone_key VARCHAR(40) NOT NULL, display_name "
      "VARCHAR(200) NOT NULL, nickname VARCHAR(200) NOT NULL, search_text TEXT NOT NULL, "
      "created_us BIGINT NOT NULL, updated_us BIGINT NOT NULL)",
      "CREATE TABLE contact_settings (identity_uuid CHAR(36) NOT NULL PRIMARY KEY, account_id "
      "CHAR(36) NOT NULL, auto_contacts SMALLINT NOT NULL, updated_us BIGINT NOT NULL)",
  };
  const std::vector<std::string> indexes = {
      // find/ answers "the one contact": one per address (lower-cased) and one per number.
      "CREATE UNIQUE INDEX contacts_email_key ON contacts (identity_uuid, email_key)",
      "CREATE UNIQUE INDEX contacts_phone_key ON contacts (identity_uuid, phone_key)",
      "CREATE INDEX contacts_identity ON contacts (identity_uuid, created_us, id)",
      "CREATE INDEX contacts_account ON contacts (account_id, created_us, id)",
  };
  const std::string grams =
      "CREATE TABLE contact_grams (gram_key BIGINT NOT NULL, contact_id CHAR(36) NOT NULL, "
      "PRIMARY KEY (gram_key, contact_id))";
  for (const auto& sql : tables) {
    m.sqlite.push_back(sql);
    // Names carry emoji: MySQL's "utf8" cannot store them; keys compare as stored (folded).
    m.mysql.push_back(sql + " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin");
  }
  m.sqlite.push_back(grams + " WITHOUT ROWID");  // the key is the row: no second copy
  m.mysql.push_back(grams);
  m.sqlite.insert(m.sqlite.end(), indexes.begin(), indexes.end());
  m.mysql.insert(m.mysql.end(), indexes.begin(), indexes.end());
  return {m};
}

std::optional<ContactRow> ContactStore::byId(Poco::Data::Session& s, const std::string& id,
                                             bool for_update) {
  if (!sdk::isUuid(id)) return std::nullopt;
  std::string u = Poco::toLower(id);
  const bool lock = for_update && db_.dialect() == sdk::Dialect::kMysql;
  Poco::Data::Statement q =
      (s << std::string(kColumns) + "WHERE id = ?" + (lock ? " FOR UPDATE" : ""), use(u));
  return first(readContacts(q));
}

std::optional<ContactRow> ContactStore::byEmail(Poco::Data::Session& s, const std::string& identity,
                                                const std::string& email) {
  std::string i = identity, key = Poco::toLower(email);
  Poco::Data::Statement q =
      (s << std::string(kColumns) + "WHERE identity_uuid = ? AND email_key = ?", use(i), use(key));
  return first(readContacts(q));
}

std::optional<ContactRow> ContactStore::byPhone(Poco::Data::Session& s, const std::string& identity,
                                                const std::string& e164) {
  std::string i = identity, key = e164;
  Poco::Data::Statement q =
      (s << std::string(kColumns) + "WHERE identity_uuid = ? AND phone_key = ?", use(i), use(key));
  return first(readContacts(q));
}

void ContactStore::conflict(const ContactRow& c, const std::string& why) {
  // MariaDB ends a deadlocked transaction whole: nothing after it may run in it.
  if (why.find("Deadlock") != std::string::npos) {
    throw sdk::HttpError(503, "service_unavailable",
                         "Another change to contacts collided with this one; try again.")
        .header("Retry-After", "1");
  }
  // SQLite names the column, MariaDB the index.
  const bool phone = why.find("contacts.phone_key") != std::string::npos ||
                     why.find("contacts_phone_key'") != std::string::npos;
  if (!phone && why.find("contacts.email_key") == std::string::npos &&
      why.find("contacts_email_key'") == std::string::npos) {
    throw;  // not a duplicate: the caller's 500
  }
  const std::string field = phone ? "phone_number" : "email";
  const std::string value = phone ? c.phone_number : c.email;
  throw sdk::HttpError(409, "conflict",
                       "This identity already has a contact with " + field + " " +
                           sdk::quoteForDetail(value) + "; GET /api/contacts/find/?" + field +
                           "=... finds it, and PATCH changes it.")
      .field(field, "another contact of this identity has it");
}

void ContactStore::writeGrams(Poco::Data::Session& tx, const ContactRow& c) {
  const auto keys = gramKeys(c.account_id, searchTextOf(c));
  if (keys.empty()) return;
  // One statement for all of them (one round trip on MariaDB). Only integers and our own UUID
  // are written into it, never client text.
  std::string sql = "INSERT INTO contact_grams (gram_key, contact_id) VALUES ";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    sql += (i ? ", (" : "(") + std::to_string(keys[i]) + ", '" + c.id + "')";
  }
  tx << sql, now;
}

void ContactStore::insert(Poco::Data::Session& tx, const ContactRow& row) {
  ContactRow c = row;
  std::string email_key = emailKey(c), phone_key = phoneKey(c), text = searchTextOf(c);
  Poco::Int64 created = c.created_us, updated = c.updated_us;
  try {
    tx << "INSERT INTO contacts (id, account_id, identity_uuid, email, email_key, phone_number, "
          "phone_key, display_name, nickname, search_text, created_us, updated_us) VALUES (?, ?, "
          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        use(c.id), use(c.account_id), use(c.identity_uuid), use(c.email), use(email_key),
        use(c.phone_number), use(phone_key), use(c.display_name), use(c.nickname), use(text),
        use(created), use(updated), now;
  } catch (const Poco::Exception& e) {
    conflict(c, e.displayText());
  }
  writeGrams(tx, c);
  events_.publish("contact.created", c.account_id, c.identity_uuid, json(c), &tx);
}

void ContactStore::update(Poco::Data::Session& tx, const ContactRow& before,
                          const ContactRow& after) {
  ContactRow c = after;
  std::string email_key = emailKey(c), phone_key = phoneKey(c), text = searchTextOf(c);
  Poco::Int64 updated = c.updated_us;
  try {
    tx << "UPDATE contacts SET email = ?, email_key = ?, phone_number = ?, phone_key = ?, "
          "display_name = ?, nickname = ?, search_text = ?, updated_us = ? WHERE id = ?",
        use(c.email), use(email_key), use(c.phone_number), use(phone_key), use(c.display_name),
        use(c.nickname), use(text), use(updated), use(c.id), now;
  } catch (const Poco::Exception& e) {
    conflict(c, e.displayText());
  }
  const auto old_keys = gramKeys(before.account_id, searchTextOf(before));
  if (!old_keys.empty()) {
    tx << "DELETE FROM contact_grams WHERE gram_key IN (" + keyList(old_keys) +
              ") AND contact_id = ?",
        use(c.id), now;
  }
  writeGrams(tx, c);
  events_.publish("contact.updated", c.account_id, c.identity_uuid, json(c), &tx);
}

void ContactStore::remove(Poco::Data::Session& tx, const ContactRow& row) {
  ContactRow c = row;
  const auto keys = gramKeys(c.account_id, searchTextOf(c));
  if (!keys.empty()) {
    tx << "DELETE FROM contact_grams WHERE gram_key IN (" + keyList(keys) + ") AND contact_id = ?",
        use(c.id), now;
  }
  Poco::Data::Statement del = (tx << "DELETE FROM contacts WHERE id = ?", use(c.id));
  // Two deletes racing: only the one that removed it says so.
  if (del.execute() > 0) {
    events_.publish("contact.deleted", c.account_id, c.identity_uuid, json(c), &tx);
  }
}

namespace {

// The scope's WHERE clause: the identity index serves a scoped read, the account index the rest.
std::string scopeClause(const ContactScope& scope, std::vector<std::string>& binds) {
  if (!scope.identity_uuid.empty()) {
    binds = {scope.identity_uuid, scope.account_id};
    return "WHERE identity_uuid = ? AND account_id = ?";
  }
  binds = {scope.account_id};
  return "WHERE account_id = ?";
}

}  // namespace

std::vector<ContactRow> ContactStore::list(Poco::Data::Session& s, const ContactScope& scope,
                                           int limit, int offset) {
  std::vector<std::string> binds;
  const std::string where = scopeClause(scope, binds);
  Poco::Data::Statement q =
      (s << std::string(kColumns) + where + " ORDER BY created_us DESC, id DESC LIMIT ? OFFSET ?");
  for (auto& b : binds) q, use(b);
  q, use(limit), use(offset);
  return readContacts(q);
}

long ContactStore::count(Poco::Data::Session& s, const ContactScope& scope) {
  std::vector<std::string> binds;
  long n = 0;
  Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM contacts " + scopeClause(scope, binds));
  for (auto& b : binds) q, use(b);
  q, into(n), now;
  return n;
}

std::vector<std::int64_t> ContactStore::rarestGrams(Poco::Data::Session& s,
                                                    const std::string& account,
                                                    const std::string& folded) {
  // How many contacts hold each gram, counted only as far as it matters: up to rare_gram_, and
  // then only up to the second rarest seen so far.
  std::vector<std::pair<long, std::int64_t>> counted;  // (holders, key)
  long bound = rare_gram_;
  // At most kMaxCounted grams, spread over q: a long q costs as much as a short one, and any of
  // its grams still narrows the candidates (each is checked against q in full afterwards).
  constexpr std::size_t kMaxCounted = 8;
  const auto all = gramKeys(account, folded);
  std::vector<std::int64_t> sample;
  for (std::size_t i = 0; i < std::min(all.size(), kMaxCounted); ++i) {
    sample.push_back(all[i * all.size() / std::min(all.size(), kMaxCounted)]);
  }
  for (std::int64_t key : sample) {
    Poco::Int64 k = key, limit = bound;
    long n = 0;
    s << "SELECT COUNT(*) FROM (SELECT 1 FROM contact_grams WHERE gram_key = ? LIMIT ?) AS g",
        use(k), use(limit), into(n), now;
    counted.emplace_back(n, key);
    std::sort(counted.begin(), counted.end());
    if (counted.size() > 2) counted.resize(2);
    if (counted.size() == 2) bound = std::min<long>(bound, counted[1].first + 1);
    if (counted.front().first == 0) break;  // nothing holds it: nothing matches
  }
  std::vector<std::int64_t> keys;
  if (counted.empty() || counted.front().first >= rare_gram_) return keys;
  for (const auto& [n, key] : counted) keys.push_back(key);
  return keys;
}

ContactStore::SearchPage ContactStore::search(Poco::Data::Session& s, const ContactScope& scope,
                                              const std::string& folded,
                                              const sdk::PageRequest& page,
                                              long exact_count_limit) {
  std::vector<std::string> binds;
  std::string where = scopeClause(scope, binds) + " AND INSTR(search_text, ?) > 0";
  binds.push_back(folded);
  SearchPage out;
  if (const auto keys = rarestGrams(s, scope.account_id, folded); !keys.empty()) {
    // Few candidates: every match is read, so the count is exact and the page is cut here.
    where += " AND id IN (SELECT contact_id FROM contact_grams WHERE gram_key IN (" +
             keyList(keys) +
             ") GROUP BY contact_id HAVING COUNT(*) = " + std::to_string(keys.size()) + ")";
    Poco::Data::Statement q = (s << std::string(kColumns) + where);
    for (auto& b : binds) q, use(b);
    auto all = readContacts(q);
    std::sort(all.begin(), all.end(), [](const ContactRow& a, const ContactRow& b) {
      return a.created_us != b.created_us ? a.created_us > b.created_us : a.id > b.id;
    });
    out.count = static_cast<long>(all.size());
    const auto first = std::min<std::size_t>(all.size(), static_cast<std::size_t>(page.offset));
    const auto last =
        std::min<std::size_t>(all.size(), first + static_cast<std::size_t>(page.limit));
    out.rows.assign(all.begin() + first, all.begin() + last);
    return out;
  }
  // Short or common: the scope's rows newest first, until the page is full.
  int limit = page.limit, offset = page.offset;
  Poco::Data::Statement q =
      (s << std::string(kColumns) + where + " ORDER BY created_us DESC, id DESC LIMIT ? OFFSET ?");
  for (auto& b : binds) q, use(b);
  q, use(limit), use(offset);
  out.rows = readContacts(q);
  // A page that ends early has seen every match: the count is known without a second scan.
  if (static_cast<int>(out.rows.size()) < page.limit && (page.offset == 0 || !out.rows.empty())) {
    out.count = page.offset + static_cast<long>(out.rows.size());
    return out;
  }
  // Else counted up to the limit, as other long lists are.
  const auto counted = sdk::cappedCount(exact_count_limit, page, [&](std::int64_t probe) {
    long n = 0;
    Poco::Int64 up_to = probe;
    Poco::Data::Statement c =
        (s << "SELECT COUNT(*) FROM (SELECT 1 FROM contacts " + where + " LIMIT ?) AS c");
    for (auto& b : binds) c, use(b);
    c, use(up_to), into(n), now;
    return n;
  });
  out.count = counted.count;
  out.exact = counted.exact;
  return out;
}

std::map<std::string, bool> ContactStore::autoContacts(Poco::Data::Session& s,
                                                       const std::vector<std::string>& identities) {
  std::map<std::string, bool> out;
  for (const auto& i : identities) out[i] = false;
  if (identities.empty()) return out;
  std::string marks;
  for (std::size_t i = 0; i < identities.size(); ++i) marks += i ? ", ?" : "?";
  std::vector<std::string> ids = identities;
  std::vector<Poco::Tuple<std::string, int>> rows;
  Poco::Data::Statement q =
      (s << "SELECT identity_uuid, auto_contacts FROM contact_settings WHERE identity_uuid IN (" +
                marks + ")");
  for (auto& i : ids) q, use(i);
  q, into(rows), now;
  for (const auto& r : rows) out[r.get<0>()] = r.get<1>() != 0;
  return out;
}

void ContactStore::setAutoContacts(Poco::Data::Session& tx, const std::string& account,
                                   const std::string& identity, bool on) {
  std::string a = account, i = identity;
  int value = on ? 1 : 0;
  Poco::Int64 at = sdk::nowMicros();
  // One statement: two settings racing must not both insert.
  const std::string upsert =
      db_.dialect() == sdk::Dialect::kMysql
          ? " ON DUPLICATE KEY UPDATE auto_contacts = VALUES(auto_contacts), updated_us = "
            "VALUES(updated_us)"
          : " ON CONFLICT(identity_uuid) DO UPDATE SET auto_contacts = excluded.auto_contacts, "
            "updated_us = excluded.updated_us";
  tx << "INSERT INTO contact_settings (identity_uuid, account_id, auto_contacts, updated_us) "
        "VALUES (?, ?, ?, ?)" +
            upsert,
      use(i), use(a), use(value), use(at), now;
}

Poco::JSON::Object::Ptr ContactStore::json(const ContactRow& c) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("uuid", c.id);
  o->set("identity", c.identity_uuid);
  o->set("email", orNull(c.email));
  o->set("display_name", orNull(c.display_name));
  o->set("nickname", orNull(c.nickname));
  o->set("phone_number", orNull(c.phone_number));
  o->set("created_dt", sdk::isoTimestamp(c.created_us));
  o->set("updated_dt", sdk::isoTimestamp(c.updated_us));
  return o;
}

}  // namespace svc::plugins::contacts
