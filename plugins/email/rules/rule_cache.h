// The sender rules as the RCPT check reads them: each account's rules held in memory, so a busy
// listener asks the database once per account, not once per recipient. Every change, by this
// svcd or another on the same database, publishes email_rule.created or email_rule.deleted; the
// event log brings those from every process within its poll (50 ms), and the account's entry is
// dropped, so the next RCPT reads the rules again. Entries are also read again after a minute,
// in case a change was made past the API (by hand in the database).
#pragma once

#include "rules/sender_rules.h"

#include <svc/sdk/events.h>
#include <svc/sdk/storage.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace svc::plugins::email {

class RuleCache {
 public:
  RuleCache(sdk::Database& db, sdk::EventBus& events);
  ~RuleCache();
  RuleCache(const RuleCache&) = delete;
  RuleCache& operator=(const RuleCache&) = delete;

  /// Starts following the rule events of every svcd on the database.
  void start();
  void stop();

  /// @param account the recipient's account. @param identity the recipient identity.
  /// @param sender the envelope sender ("" for the null sender).
  /// @return what the rules that apply say. @throws on a database failure.
  SenderVerdict judge(const std::string& account, const std::string& identity,
                      const std::string& sender);
  /// The judgement of a message's From (judgeAuthor's parameters).
  /// @throws on a database failure.
  SenderVerdict judgeAuthor(const std::string& account, const std::string& identity,
                            const Author& from);
  /// @return true when the account has any rule (without one, every sender is accepted and
  /// nothing need be parsed to judge it). @throws on a database failure.
  bool hasRules(const std::string& account);
  /// Drops an account's rules, read again when next needed.
  void forget(const std::string& account);

 private:
  using Rules = std::shared_ptr<const std::vector<SenderRule>>;
  struct Entry {
    Rules rules;
    std::chrono::steady_clock::time_point read_at;
  };
  Rules rulesOf(const std::string& account);

  sdk::Database& db_;
  sdk::EventBus& events_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> accounts_;
  // Bumped by every forget(): a read that began before it does not store what it read, which
  // may predate the change.
  std::uint64_t generation_ = 0;
  std::uint64_t subscription_ = 0;
};

}  // namespace svc::plugins::email
