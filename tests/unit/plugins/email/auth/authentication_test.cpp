// The verdict drawn from SPF, DKIM and DMARC, the policy action, and the Authentication-Results
// header's syntax (RFC 8601).
#include "auth/authentication.h"
#include "ingest.h"

#include <gtest/gtest.h>

#include <sstream>

#include <regex>

namespace svc::plugins::email {
namespace {

Authentication checked(const std::string& spf, const std::string& dmarc, const std::string& policy,
                       bool spf_aligned, bool dkim_aligned) {
  Authentication a;
  a.spf = SpfOutcome{spf, "example.org", "127.0.0.2", "mx.example.org", "a@example.org"};
  a.dkim = {{dkim_aligned ? "pass" : "fail", "example.org", "s1"}};
  a.dmarc = DmarcOutcome{dmarc, policy, "example.org", spf_aligned, dkim_aligned};
  decideVerdict(a);
  return a;
}

TEST(AuthenticationTest, DmarcDecidesWhenTheDomainPublishesIt) {
  EXPECT_EQ(checked("pass", "pass", "reject", true, false).verdict, "pass");
  EXPECT_EQ(checked("fail", "fail", "reject", false, false).verdict, "fail");
  EXPECT_EQ(checked("softfail", "fail", "none", false, false).verdict, "fail");
  // A DNS failure is neither: it may pass when asked again.
  EXPECT_EQ(checked("temperror", "temperror", "", false, false).verdict, "none");
}

TEST(AuthenticationTest, WithoutDmarcAnAlignedPassStillCounts) {
  EXPECT_EQ(checked("pass", "none", "", true, false).verdict, "pass");
  EXPECT_EQ(checked("none", "none", "", false, true).verdict, "pass");
  EXPECT_EQ(checked("fail", "none", "", false, false).verdict, "fail");
  EXPECT_EQ(checked("softfail", "none", "", false, false).verdict, "none");
  EXPECT_EQ(checked("neutral", "none", "", false, false).verdict, "none");
  Authentication unchecked;
  decideVerdict(unchecked);
  EXPECT_EQ(unchecked.verdict, "none");
  EXPECT_FALSE(unchecked.reason.empty());
}

TEST(AuthenticationTest, OnlyAFailureOrATemperrorUnderRejectOrQuarantineIsActedOn) {
  EXPECT_EQ(dmarcAction(checked("fail", "fail", "reject", false, false).dmarc),
            PolicyAction::kReject);
  EXPECT_EQ(dmarcAction(checked("fail", "fail", "quarantine", false, false).dmarc),
            PolicyAction::kQuarantine);
  EXPECT_EQ(dmarcAction(checked("fail", "fail", "none", false, false).dmarc),
            PolicyAction::kAccept);
  EXPECT_EQ(dmarcAction(checked("pass", "pass", "reject", true, false).dmarc),
            PolicyAction::kAccept);
  // A DNS error about a domain aligned with From under a known policy: the sender may have made
  // it on purpose, so it is never simply accepted.
  EXPECT_EQ(dmarcAction(checked("temperror", "temperror", "reject", false, false).dmarc),
            PolicyAction::kDefer);
  EXPECT_EQ(dmarcAction(checked("temperror", "temperror", "quarantine", false, false).dmarc),
            PolicyAction::kQuarantine);
  EXPECT_EQ(dmarcAction(checked("temperror", "temperror", "none", false, false).dmarc),
            PolicyAction::kAccept);
  EXPECT_EQ(dmarcAction(std::nullopt), PolicyAction::kAccept);
}

// RFC 8601 section 2.2, for the methods and properties this server writes: authserv-id, then
// "; method=result [(comment)] [ptype.property=pvalue ...]" for each result, or "; none".
const std::regex kHeader(
    R"(Authentication-Results: [A-Za-z0-9.-]+)"
    R"(((; (spf|dkim|dmarc|auth)=(pass|fail|softfail|neutral|none|temperror|permerror))"
    R"(( \([^()\\]*\))?( (smtp|header)\.[a-z]+=([A-Za-z0-9.@_+-]+|"([^"\\]|\\.)*"))*)+|; none))");

TEST(AuthenticationTest, TheHeaderFollowsRfc8601) {
  Authentication a = checked("pass", "pass", "reject", true, true);
  a.dkim.push_back({"permerror", "other.example", "s2"});
  const std::string h = authenticationResults(a, "mx.agents.test");
  EXPECT_TRUE(std::regex_match(h, kHeader)) << h;
  EXPECT_EQ(h,
            "Authentication-Results: mx.agents.test; spf=pass smtp.mailfrom=a@example.org "
            "smtp.helo=mx.example.org; dkim=pass header.d=example.org header.s=s1; "
            "dkim=permerror header.d=other.example header.s=s2; dmarc=pass (p=reject) "
            "header.from=example.org");
  // An odd envelope sender is quoted, never breaks the header.
  a.spf->mail_from = "we\"ird; x=y@example.org";
  const std::string odd = authenticationResults(a, "mx.agents.test");
  EXPECT_TRUE(std::regex_match(odd, kHeader)) << odd;
  EXPECT_NE(odd.find(R"(smtp.mailfrom="we\"ird; x=y@example.org")"), std::string::npos);
  Authentication none;
  EXPECT_TRUE(std::regex_match(authenticationResults(none, "mx.agents.test"), kHeader));
  const std::string local = localAuthentication("bot@agents.test", "mx.agents.test").header;
  EXPECT_TRUE(std::regex_match(local, kHeader)) << local;
}

TEST(AuthenticationTest, TheFoldedHeaderKeepsQuotedSemicolons) {
  Authentication a = checked("pass", "pass", "reject", true, true);
  a.spf->mail_from = "a;b@example.org";
  const std::string folded = foldHeader(authenticationResults(a, "mx.agents.test"));
  EXPECT_EQ(folded.substr(folded.size() - 2), "\r\n");
  EXPECT_NE(folded.find(";\r\n\tdkim=pass"), std::string::npos) << folded;
  EXPECT_NE(folded.find("\"a;b@example.org\""), std::string::npos) << folded;
  // Unfolding gives the header back.
  std::string unfolded = folded.substr(0, folded.size() - 2);
  for (std::size_t p; (p = unfolded.find("\r\n\t")) != std::string::npos;) {
    unfolded.replace(p, 3, " ");
  }
  EXPECT_EQ(unfolded, authenticationResults(a, "mx.agents.test"));
}

// authenticationText is written by hand for speed: it must say exactly what Poco's objects say,
// whatever a client put in the strings (quotes, backslashes, control characters, UTF-8, bytes
// that are not UTF-8) and whichever parts are missing.
TEST(AuthenticationTest, TheTextIsWhatPocosObjectsSay) {
  const auto poco = [](const Authentication& a) {
    std::ostringstream out;
    authenticationJson(a)->stringify(out);
    return out.str();
  };
  Authentication a = checked("pass", "pass", "reject", true, true);
  a.header = authenticationResults(a, "mx.agents.test");
  EXPECT_EQ(authenticationText(a), poco(a));
  a.spf->helo = "he\"llo\\ \x01\t/x\xc3\xa9\xff";
  a.spf->mail_from = "\"odd\"@example.org";
  a.dkim.push_back({"permerror", "d\xe9.example", "s/1"});
  a.dmarc->policy.clear();
  a.reason = "line\r\nbreak";
  EXPECT_EQ(authenticationText(a), poco(a));
  a.spf.reset();
  a.dmarc.reset();
  a.dkim.clear();
  EXPECT_EQ(authenticationText(a), poco(a));
  EXPECT_EQ(authenticationText(Authentication{}), poco(Authentication{}));
}

TEST(AuthenticationTest, TheSpoolKeepsTheVerdict) {
  Authentication a = checked("fail", "fail", "quarantine", false, false);
  a.header = authenticationResults(a, "mx.agents.test");
  const SpooledVerdict v = spooledVerdict(a, true);
  const std::string payload = spoolPayload("a@example.org", {"b@agents.test"},
                                           "Subject: x\r\n\r\nhi", &v, foldHeader(a.header));
  auto m = readSpoolPayload(payload);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mail_from, "a@example.org");
  EXPECT_EQ(m->recipients, std::vector<std::string>{"b@agents.test"});
  EXPECT_EQ(m->verdict, "fail");
  EXPECT_TRUE(m->quarantined);
  EXPECT_EQ(m->authentication, authenticationText(a));
  EXPECT_EQ(std::string(m->data).rfind("Authentication-Results: mx.agents.test;", 0), 0u);
  // A record written before the checks reads as unchecked.
  auto old = readSpoolPayload("a@example.org\nb@agents.test\nSubject: x\r\n\r\nhi");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->authentication, "");
  EXPECT_FALSE(old->quarantined);
  EXPECT_FALSE(readSpoolPayload("SVC-AUTH pass"));
}

TEST(AuthenticationTest, TheSpoolKeepsChecksLeftForFiling) {
  DeferredChecks later;
  later.spf = SpfOutcome{"pass", "example.org", "192.0.2.1", "mx.example.org", "a@example.org"};
  later.arrived = 1790000000;
  later.answers.push_back(
      {"_dmarc.example.org", 16, DnsAnswer{DnsAnswer::Status::kOk, {"v=DMARC1; p=reject"}, 300}});
  const SpooledVerdict v = pendingVerdict(later);
  const std::string payload =
      spoolPayload("a@example.org", {"b@agents.test"}, "Subject: x\r\n\r\nhi", &v);
  EXPECT_EQ(payload.rfind("SVC-AUTH later 1790000000 ", 0), 0u) << payload;
  auto m = readSpoolPayload(payload);
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->later);
  EXPECT_EQ(m->later->text(), later.text());
  EXPECT_EQ(m->verdict, "");
  EXPECT_EQ(m->authentication, "");
  EXPECT_FALSE(m->quarantined);
  EXPECT_EQ(m->mail_from, "a@example.org");
  EXPECT_EQ(m->data, "Subject: x\r\n\r\nhi");
  // A record of them that cannot be read: the message is still there, to be filed unchecked.
  auto unreadable = readSpoolPayload("SVC-AUTH later soon\na@example.org\nb@agents.test\nhi");
  ASSERT_TRUE(unreadable);
  EXPECT_TRUE(unreadable->checks_unreadable);
  EXPECT_FALSE(unreadable->later);
  EXPECT_EQ(unreadable->mail_from, "a@example.org");
  EXPECT_EQ(unreadable->data, "hi");
}

}  // namespace
}  // namespace svc::plugins::email
