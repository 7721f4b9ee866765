#include "rules/rule_rows.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email::rule_rows {

namespace {

using RuleTuple =
    Poco::Tuple<std::string, std::string, std::string, std::string, std::string, Poco::Int64>;
constexpr const char* kColumns =
    "SELECT id, account_id, identity_uuid, kind, pattern, created_us FROM email_rules ";

std::vector<SenderRule> read(Poco::Data::Statement& select) {
  std::vector<RuleTuple> rows;
  select, into(rows), now;
  std::vector<SenderRule> out;
  out.reserve(rows.size());
  for (const auto& t : rows) {
    out.push_back({t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>(), t.get<5>()});
  }
  return out;
}

// An identity's scope shows its own rules and the account's defaults (identity_uuid '').
std::string where(const RuleScope& scope) {
  return scope.identity.empty() ? "WHERE account_id = ?"
                                : "WHERE account_id = ? AND identity_uuid IN (?, '')";
}

}  // namespace

std::optional<SenderRule> byId(Poco::Data::Session& s, const std::string& id) {
  std::string v = id;
  Poco::Data::Statement q = (s << std::string(kColumns) + "WHERE id = ?", use(v));
  auto rules = read(q);
  if (rules.empty()) return std::nullopt;
  return rules.front();
}

std::vector<SenderRule> ofAccount(Poco::Data::Session& s, const std::string& account) {
  std::string a = account;
  Poco::Data::Statement q = (s << std::string(kColumns) + "WHERE account_id = ?", use(a));
  return read(q);
}

long count(Poco::Data::Session& s, const RuleScope& scope) {
  std::string a = scope.account, i = scope.identity;
  long n = 0;
  Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM email_rules " + where(scope), use(a));
  if (!i.empty()) q, use(i);
  q, into(n), now;
  return n;
}

std::vector<SenderRule> page(Poco::Data::Session& s, const RuleScope& scope, int limit,
                             int offset) {
  std::string a = scope.account, i = scope.identity;
  Poco::Data::Statement q =
      (s << std::string(kColumns) + where(scope) + " ORDER BY created_us DESC, id LIMIT ? OFFSET ?",
       use(a));
  if (!i.empty()) q, use(i);
  q, use(limit), use(offset);
  return read(q);
}

std::optional<SenderRule> byPattern(Poco::Data::Session& s, const std::string& account,
                                    const std::string& identity, const std::string& pattern) {
  std::string a = account, i = identity, p = pattern;
  Poco::Data::Statement q =
      (s << std::string(kColumns) + "WHERE account_id = ? AND identity_uuid = ? AND pattern = ?",
       use(a), use(i), use(p));
  auto rules = read(q);
  if (rules.empty()) return std::nullopt;
  return rules.front();
}

void lockAccount(Poco::Data::Session& tx, sdk::Dialect dialect, const std::string& account) {
  std::string a = account;
  Poco::Int64 at = sdk::nowMicros();
  // An upsert, not an insert then an update: on MySQL two inserts of a new row would each wait
  // for the other's shared lock (a deadlock); ON DUPLICATE KEY UPDATE takes the row exclusively.
  const std::string sql =
      dialect == sdk::Dialect::kMysql
          ? "INSERT INTO email_rule_accounts (account_id, locked_us) VALUES (?, ?) ON DUPLICATE "
            "KEY UPDATE locked_us = VALUES(locked_us)"
          : "INSERT INTO email_rule_accounts (account_id, locked_us) VALUES (?, ?) ON CONFLICT "
            "(account_id) DO UPDATE SET locked_us = excluded.locked_us";
  tx << sql, use(a), use(at), now;
}

void insert(Poco::Data::Session& tx, const SenderRule& rule) {
  SenderRule r = rule;
  tx << "INSERT INTO email_rules (id, account_id, identity_uuid, kind, pattern, created_us) "
        "VALUES (?, ?, ?, ?, ?, ?)",
      use(r.id), use(r.account_id), use(r.identity_uuid), use(r.kind), use(r.pattern),
      use(r.created_us), now;
}

bool remove(Poco::Data::Session& tx, const std::string& id) {
  std::string v = id;
  Poco::Data::Statement del = (tx << "DELETE FROM email_rules WHERE id = ?", use(v));
  return del.execute() > 0;
}

Poco::JSON::Object::Ptr json(const SenderRule& rule) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", rule.id);
  o->set("identity", rule.identity_uuid.empty() ? Poco::Dynamic::Var()
                                                : Poco::Dynamic::Var(rule.identity_uuid));
  o->set("kind", rule.kind);
  o->set("pattern", rule.pattern);
  o->set("created_dt", sdk::isoTimestamp(rule.created_us));
  return o;
}

}  // namespace svc::plugins::email::rule_rows
