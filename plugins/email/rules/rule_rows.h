// The email_rules table (migration 5 in mail_store_schema.cpp): reading and writing sender rules,
// and their JSON. Identity "" marks an account-wide default.
#pragma once

#include "rules/sender_rules.h"

#include <svc/sdk/storage.h>

#include <Poco/Data/Session.h>
#include <Poco/JSON/Object.h>

#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// Which rules a list shows.
struct RuleScope {
  std::string account;
  std::string identity;  ///< "": every rule of the account; else its rules and the defaults.
};

namespace rule_rows {

std::optional<SenderRule> byId(Poco::Data::Session& s, const std::string& id);
/// @return every rule of an account (what the RCPT check scans).
std::vector<SenderRule> ofAccount(Poco::Data::Session& s, const std::string& account);
/// @return how many rules a scope shows.
long count(Poco::Data::Session& s, const RuleScope& scope);
/// @return one page of a scope's rules, newest first.
std::vector<SenderRule> page(Poco::Data::Session& s, const RuleScope& scope, int limit, int offset);
/// @return the rule an account holds for a pattern on an identity ("": a default), if any.
std::optional<SenderRule> byPattern(Poco::Data::Session& s, const std::string& account,
                                    const std::string& identity, const std::string& pattern);
/// Locks an account's rules until the caller's transaction ends, so that counting them and adding
/// one is atomic: concurrent creates wait for each other (an upsert of the account's row in
/// email_rule_accounts takes its row lock on MySQL, the database's write lock on SQLite).
/// Call it first in the transaction.
void lockAccount(Poco::Data::Session& tx, sdk::Dialect dialect, const std::string& account);
void insert(Poco::Data::Session& tx, const SenderRule& rule);
/// @return false when the rule was gone already (another request removed it).
bool remove(Poco::Data::Session& tx, const std::string& id);
/// `{id, identity (null for a default), kind, pattern, created_dt}`.
Poco::JSON::Object::Ptr json(const SenderRule& rule);

}  // namespace rule_rows

}  // namespace svc::plugins::email
