#include "rules/rule_cache.h"

#include "rules/rule_rows.h"

namespace svc::plugins::email {

namespace {

constexpr auto kMaxAge = std::chrono::seconds(60);
// Accounts held at once; beyond, the cache starts over (each entry is one query to refill).
constexpr std::size_t kMaxAccounts = 50000;

}  // namespace

RuleCache::RuleCache(sdk::Database& db, sdk::EventBus& events) : db_(db), events_(events) {}

RuleCache::~RuleCache() {
  stop();
}

void RuleCache::start() {
  if (subscription_) return;
  subscription_ = events_.subscribe([this](const sdk::Event& e) {
    if (e.type == "email_rule.created" || e.type == "email_rule.deleted") forget(e.account);
  });
}

void RuleCache::stop() {
  if (subscription_) events_.unsubscribe(subscription_);
  subscription_ = 0;
}

void RuleCache::forget(const std::string& account) {
  std::lock_guard lock(mutex_);
  accounts_.erase(account);
  ++generation_;
}

RuleCache::Rules RuleCache::rulesOf(const std::string& account) {
  const auto now = std::chrono::steady_clock::now();
  std::uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    auto it = accounts_.find(account);
    if (it != accounts_.end() && now - it->second.read_at < kMaxAge) return it->second.rules;
    generation = generation_;
  }
  Poco::Data::Session s = db_.session();
  Rules rules = std::make_shared<const std::vector<SenderRule>>(rule_rows::ofAccount(s, account));
  std::lock_guard lock(mutex_);
  if (generation == generation_) {
    if (accounts_.size() >= kMaxAccounts) accounts_.clear();
    accounts_[account] = {rules, now};
  }
  return rules;
}

SenderVerdict RuleCache::judge(const std::string& account, const std::string& identity,
                               const std::string& sender) {
  if (sender.empty()) return {};  // the null sender is always accepted: no need to read
  return judgeSender(*rulesOf(account), identity, sender);
}

bool RuleCache::hasRules(const std::string& account) {
  return !rulesOf(account)->empty();
}

SenderVerdict RuleCache::judgeAuthor(const std::string& account, const std::string& identity,
                                     const Author& from) {
  return email::judgeAuthor(*rulesOf(account), identity, from);
}

}  // namespace svc::plugins::email
