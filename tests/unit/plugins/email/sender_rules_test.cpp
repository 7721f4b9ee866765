// Sender rules: what a pattern may be, how a pattern matches, and how an identity's rules and its
// account's defaults combine (rules/sender_rules.h).
#include "rules/sender_rules.h"

#include <gtest/gtest.h>

namespace svc::plugins::email {
namespace {

const std::string kIdentity = "11111111-1111-1111-1111-111111111111";
const std::string kOther = "22222222-2222-2222-2222-222222222222";

SenderRule rule(const std::string& identity, const std::string& kind, const std::string& pattern) {
  return {"id-" + pattern, "acct", identity, kind, pattern, 0};
}

bool accepts(const std::vector<SenderRule>& rules, const std::string& sender,
             const std::string& identity = kIdentity) {
  return judgeSender(rules, identity, sender).accepted;
}

TEST(SenderRules, PatternsAreAddressesOrDomainsInLowerCase) {
  std::string error;
  EXPECT_EQ(normalizedPattern("  Bob@Example.COM ", error), "bob@example.com");
  EXPECT_EQ(normalizedPattern("Example.com", error), "example.com");
  EXPECT_EQ(normalizedPattern("@mail.example.com", error), "mail.example.com");
  for (const char* bad : {"", "  ", "bob@", "@", "not a domain", "bob@@example.com", "example",
                          "bob@example", "-x.example.com", "a b@example.com"}) {
    error.clear();
    EXPECT_FALSE(normalizedPattern(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(SenderRules, NoRulesAcceptEveryone) {
  EXPECT_TRUE(accepts({}, "anyone@anywhere.example"));
}

TEST(SenderRules, ABlockedAddressIsRefusedAndOthersAccepted) {
  const std::vector<SenderRule> rules = {rule(kIdentity, "block", "spam@example.com")};
  const SenderVerdict v = judgeSender(rules, kIdentity, "SPAM@Example.com");
  EXPECT_FALSE(v.accepted);
  EXPECT_NE(v.reason.find("spam@example.com"), std::string::npos);
  EXPECT_TRUE(accepts(rules, "ham@example.com"));
  EXPECT_TRUE(accepts(rules, "spam@example.org"));
}

TEST(SenderRules, ADomainMatchesItsSubdomainsOnALabelBoundary) {
  const std::vector<SenderRule> rules = {rule(kIdentity, "block", "example.com")};
  EXPECT_FALSE(accepts(rules, "a@example.com"));
  EXPECT_FALSE(accepts(rules, "a@mail.example.com"));
  EXPECT_FALSE(accepts(rules, "a@deep.mail.example.com"));
  EXPECT_TRUE(accepts(rules, "a@notexample.com")) << "not on a label boundary";
  EXPECT_TRUE(accepts(rules, "example.com@other.org")) << "the local part is not the domain";
  EXPECT_TRUE(accepts(rules, "a@example.com.evil.org"));
}

TEST(SenderRules, AnAllowListAcceptsOnlyWhatItNames) {
  const std::vector<SenderRule> rules = {rule(kIdentity, "allow", "github.com"),
                                         rule(kIdentity, "allow", "boss@corp.example")};
  EXPECT_TRUE(accepts(rules, "noreply@github.com"));
  EXPECT_TRUE(accepts(rules, "x@mail.github.com"));
  EXPECT_TRUE(accepts(rules, "boss@corp.example"));
  const SenderVerdict v = judgeSender(rules, kIdentity, "intern@corp.example");
  EXPECT_FALSE(v.accepted);
  EXPECT_NE(v.reason.find("only"), std::string::npos);
}

TEST(SenderRules, TheNullSenderIsAcceptedAtRcpt) {
  const std::vector<SenderRule> rules = {rule(kIdentity, "allow", "github.com"),
                                         rule("", "allow", "corp.example")};
  EXPECT_TRUE(accepts(rules, "")) << "bounces must reach us under an allow list";
}

// The end of DATA judges the header From: the null sender gets past RCPT, not past the rules.
Author author(const std::string& address) {
  return {address, {address}};
}

TEST(SenderRules, TheFromIsJudgedAsASenderIs) {
  const std::vector<SenderRule> rules = {rule(kIdentity, "allow", "github.com"),
                                         rule(kIdentity, "block", "mallory@github.com")};
  EXPECT_TRUE(judgeAuthor(rules, kIdentity, author("noreply@github.com")).accepted);
  EXPECT_FALSE(judgeAuthor(rules, kIdentity, author("anyone@elsewhere.example")).accepted)
      << "a From the allow list does not name, whatever the envelope sender";
  EXPECT_FALSE(judgeAuthor(rules, kIdentity, author("mallory@github.com")).accepted);
}

// Under an allow list a message must name one valid From the list allows: the envelope sender,
// which anyone may write, does not stand in for it.
TEST(SenderRules, WithoutOneValidFromAnAllowListRefuses) {
  const std::vector<SenderRule> allow = {rule("", "allow", "github.com")};
  const SenderVerdict none = judgeAuthor(allow, kIdentity, {});
  EXPECT_FALSE(none.accepted);
  EXPECT_NE(none.reason.find("exactly one valid From"), std::string::npos) << none.reason;
  EXPECT_FALSE(
      judgeAuthor(allow, kIdentity, {"", {"noreply@github.com", "x@elsewhere.example"}}).accepted)
      << "two mailboxes, one of them allowed";
  EXPECT_TRUE(judgeAuthor({rule(kOther, "allow", "github.com")}, kIdentity, {}).accepted)
      << "another identity's allow list";
  EXPECT_TRUE(judgeAuthor({}, kIdentity, {}).accepted);
}

// A block rule matching any From mailbox refuses, however the field is made (two mailboxes, a
// second From field, an address that is no valid one): what the views show is among them.
TEST(SenderRules, ABlockRuleMatchingAnyFromMailboxRefuses) {
  const std::vector<SenderRule> block = {rule(kIdentity, "block", "spam.example"),
                                         rule(kIdentity, "block", "ceo@evil.example")};
  EXPECT_FALSE(
      judgeAuthor(block, kIdentity, {"", {"a@friend.example", "x@mail.spam.example"}}).accepted);
  EXPECT_FALSE(judgeAuthor(block, kIdentity, {"", {"ceo@evil.example"}}).accepted);
  EXPECT_TRUE(judgeAuthor(block, kIdentity, {"", {"a@friend.example"}}).accepted);
  EXPECT_TRUE(judgeAuthor(block, kIdentity, {}).accepted) << "no From: a block list names no one";
}

TEST(SenderRules, TheMostSpecificPatternOfALayerDecides) {
  // Allow a domain but block one address of it, and block a domain but allow one subdomain.
  const std::vector<SenderRule> rules = {
      rule(kIdentity, "allow", "example.com"), rule(kIdentity, "block", "spam@example.com"),
      rule(kIdentity, "block", "bad.example"), rule(kIdentity, "allow", "good.bad.example")};
  EXPECT_TRUE(accepts(rules, "a@example.com"));
  EXPECT_FALSE(accepts(rules, "spam@example.com"));
  EXPECT_FALSE(accepts(rules, "a@bad.example"));
  EXPECT_TRUE(accepts(rules, "a@good.bad.example"));
  EXPECT_TRUE(accepts(rules, "a@x.good.bad.example"));
}

TEST(SenderRules, OnATieBlockWins) {
  // The store keeps one rule per pattern and identity, so this is a guard: row order never
  // decides.
  std::vector<SenderRule> rules = {rule(kIdentity, "allow", "a@x.example"),
                                   rule(kIdentity, "block", "a@x.example")};
  EXPECT_FALSE(accepts(rules, "a@x.example"));
  std::swap(rules[0], rules[1]);
  EXPECT_FALSE(accepts(rules, "a@x.example"));
}

TEST(SenderRules, AccountDefaultsApplyToEveryIdentity) {
  const std::vector<SenderRule> rules = {rule("", "block", "spam.example")};
  EXPECT_FALSE(accepts(rules, "a@spam.example", kIdentity));
  EXPECT_FALSE(accepts(rules, "a@spam.example", kOther));
  EXPECT_TRUE(accepts(rules, "a@fine.example", kOther));
}

TEST(SenderRules, AnIdentityRuleOverridesTheDefaultForWhatItMatches) {
  const std::vector<SenderRule> rules = {
      rule("", "block", "vendor.example"), rule(kIdentity, "allow", "billing@vendor.example"),
      rule("", "allow", "partner.example"), rule(kIdentity, "block", "partner.example")};
  // The identity allows one address its account blocks, and blocks a domain its account allows.
  EXPECT_TRUE(accepts(rules, "billing@vendor.example"));
  EXPECT_FALSE(accepts(rules, "sales@vendor.example"));
  EXPECT_FALSE(accepts(rules, "a@partner.example"));
  // Another identity has only the defaults.
  EXPECT_FALSE(accepts(rules, "billing@vendor.example", kOther));
  EXPECT_TRUE(accepts(rules, "a@partner.example", kOther));
}

TEST(SenderRules, AllowListsOfBothLayersAddUp) {
  const std::vector<SenderRule> rules = {rule("", "allow", "corp.example"),
                                         rule(kIdentity, "allow", "github.com")};
  EXPECT_TRUE(accepts(rules, "a@corp.example"));
  EXPECT_TRUE(accepts(rules, "a@github.com"));
  EXPECT_FALSE(accepts(rules, "a@elsewhere.example"));
  // The identity's allow list is its own: another identity has only the default's.
  EXPECT_FALSE(accepts(rules, "a@github.com", kOther));
  EXPECT_TRUE(accepts(rules, "a@corp.example", kOther));
}

TEST(SenderRules, AnotherIdentitysRulesDoNotApply) {
  const std::vector<SenderRule> rules = {rule(kOther, "block", "x.example"),
                                         rule(kOther, "allow", "y.example")};
  EXPECT_TRUE(accepts(rules, "a@x.example", kIdentity));
  EXPECT_TRUE(accepts(rules, "a@z.example", kIdentity)) << "its allow list is not ours";
  EXPECT_FALSE(accepts(rules, "a@x.example", kOther));
  EXPECT_FALSE(accepts(rules, "a@z.example", kOther));
}

}  // namespace
}  // namespace svc::plugins::email
