#include "rules/sender_rules.h"

#include "message_wait.h"  // senderMatches: the `from` filter of the waits, one matcher for both

#include <svc/sdk/addresses.h>

#include <Poco/String.h>

#include <algorithm>

namespace svc::plugins::email {

namespace {

// How specific a pattern is: an address above any domain, a domain by its number of labels.
int specificity(const std::string& pattern) {
  if (pattern.find('@') != std::string::npos) return 1000;
  return 1 + static_cast<int>(std::count(pattern.begin(), pattern.end(), '.'));
}

// The deciding rule of one layer for a sender: the most specific match, block on a tie.
const SenderRule* bestMatch(const std::vector<SenderRule>& rules, const std::string& layer,
                            const std::string& sender) {
  const SenderRule* best = nullptr;
  int best_score = -1;
  for (const auto& rule : rules) {
    if (rule.identity_uuid != layer || !senderMatches(sender, rule.pattern)) continue;
    const int score = specificity(rule.pattern);
    if (score > best_score || (score == best_score && rule.kind == "block")) {
      best = &rule;
      best_score = score;
    }
  }
  return best;
}

bool allowListApplies(const std::vector<SenderRule>& rules, const std::string& identity) {
  return std::any_of(rules.begin(), rules.end(), [&](const SenderRule& r) {
    return r.kind == "allow" && (r.identity_uuid == identity || r.identity_uuid.empty());
  });
}

}  // namespace

std::optional<std::string> normalizedPattern(const std::string& raw, std::string& error) {
  std::string p = Poco::toLower(Poco::trim(raw));
  if (p.empty()) {
    error = "must be an address or a domain";
    return std::nullopt;
  }
  const std::size_t at = p.find('@');
  if (at == 0) p.erase(0, 1);  // `@example.com`: the domain
  if (at != 0 && at != std::string::npos) {
    if (!sdk::isValidEmailAddress(p)) {
      error = "not a valid address (name@example.com) or domain (example.com)";
      return std::nullopt;
    }
    return p;
  }
  if (p.size() > 253 || !sdk::isValidDomain(p)) {
    error = "not a valid domain (example.com) or address (name@example.com)";
    return std::nullopt;
  }
  return p;
}

SenderVerdict judgeSender(const std::vector<SenderRule>& rules, const std::string& identity,
                          const std::string& sender_in) {
  if (sender_in.empty() || rules.empty()) return {};  // the null sender: delivery reports
  const std::string sender = Poco::toLower(sender_in);
  const SenderRule* rule = bestMatch(rules, identity, sender);
  if (!rule && !identity.empty()) rule = bestMatch(rules, "", sender);
  if (rule) {
    if (rule->kind == "allow") return {};
    return {false, "the recipient does not accept mail from <" + sender + ">"};
  }
  if (!allowListApplies(rules, identity)) return {};
  return {false, "the recipient accepts mail only from the senders it allows"};
}

SenderVerdict judgeAuthor(const std::vector<SenderRule>& rules, const std::string& identity,
                          const Author& from) {
  if (allowListApplies(rules, identity)) {
    if (!from.address.empty()) return judgeSender(rules, identity, from.address);
    return {false,
            "the recipient accepts mail only from the senders it allows, and this message does "
            "not name exactly one valid From address"};
  }
  for (const auto& mailbox : from.mailboxes) {
    SenderVerdict v = judgeSender(rules, identity, mailbox);
    if (!v.accepted) return v;
  }
  return {};
}

}  // namespace svc::plugins::email
