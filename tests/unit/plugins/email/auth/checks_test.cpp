// The SPF and DMARC checks through the real libraries, against a resolver whose answers the test
// gives (DKIM is checked end to end, with dkimpy, in tests/integration/email_auth_test.cpp).
#include "auth/checks.h"

#include <arpa/nameser.h>
#include <gtest/gtest.h>

#include <map>

namespace svc::plugins::email {
namespace {

struct Zone {
  std::map<std::string, std::string> txt;
  bool broken = false;  // every query fails, as with a DNS server that never answers
  std::vector<std::string> asked;

  DnsResolver resolver() {
    return DnsResolver(
        {},
        [this](const std::string& name, int type, std::chrono::milliseconds) {
          asked.push_back(std::to_string(type) + " " + name);
          if (broken) return DnsAnswer{};
          auto it = txt.find(name);
          if (type != ns_t_txt || it == txt.end()) {
            return DnsAnswer{DnsAnswer::Status::kNotFound, {}, 0};
          }
          return DnsAnswer{DnsAnswer::Status::kOk, {it->second}, 300};
        },
        [] { return DnsResolver::Clock::now(); });
  }
};

TEST(ChecksTest, SpfResultsByTheRecord) {
  Zone z;
  z.txt = {{"hard.example", "v=spf1 ip4:192.0.2.1 -all"},
           {"soft.example", "v=spf1 ip4:192.0.2.1 ~all"},
           {"neutral.example", "v=spf1 ?all"},
           {"broken.example", "v=spf1 ip4:nonsense -all"}};
  DnsResolver dns = z.resolver();
  EXPECT_EQ(checkSpf(dns, "192.0.2.1", "mx.hard.example", "a@hard.example").result, "pass");
  EXPECT_EQ(checkSpf(dns, "192.0.2.9", "mx.hard.example", "a@hard.example").result, "fail");
  EXPECT_EQ(checkSpf(dns, "192.0.2.9", "x", "a@soft.example").result, "softfail");
  EXPECT_EQ(checkSpf(dns, "192.0.2.9", "x", "a@neutral.example").result, "neutral");
  EXPECT_EQ(checkSpf(dns, "192.0.2.9", "x", "a@none.example").result, "none");
  EXPECT_EQ(checkSpf(dns, "192.0.2.9", "x", "a@broken.example").result, "permerror");
  // A bounce (empty sender) is checked for its HELO name.
  SpfOutcome bounce = checkSpf(dns, "192.0.2.1", "hard.example", "");
  EXPECT_EQ(bounce.result, "pass");
  EXPECT_EQ(bounce.domain, "hard.example");
}

TEST(ChecksTest, LoopbackGetsNoFreePass) {
  Zone z;
  z.txt = {{"hard.example", "v=spf1 ip4:127.0.0.2 -all"}};
  DnsResolver dns = z.resolver();
  EXPECT_EQ(checkSpf(dns, "127.0.0.3", "x", "a@hard.example").result, "fail");
  EXPECT_EQ(checkSpf(dns, "127.0.0.2", "x", "a@hard.example").result, "pass");
  EXPECT_EQ(checkSpf(dns, "::1", "x", "a@hard.example").result, "fail");
}

TEST(ChecksTest, ADnsFailureIsTemperrorAndNoObsoleteSpfTypeIsAsked) {
  Zone z;
  z.broken = true;
  DnsResolver dns = z.resolver();
  EXPECT_EQ(checkSpf(dns, "192.0.2.1", "x", "a@hard.example").result, "temperror");
  for (const auto& q : z.asked) EXPECT_EQ(q.rfind(std::to_string(ns_t_txt) + " ", 0), 0u) << q;
  SpfOutcome spf{"temperror", "hard.example", "192.0.2.1", "x", "a@hard.example"};
  EXPECT_EQ(checkDmarc(dns, "hard.example", spf, {}).result, "temperror");
}

TEST(ChecksTest, DmarcAlignmentAndPolicy) {
  Zone z;
  z.txt = {{"_dmarc.example.org", "v=DMARC1; p=reject; sp=quarantine"},
           {"_dmarc.q.example", "v=DMARC1; p=quarantine"}};
  DnsResolver dns = z.resolver();
  SpfOutcome spf{"pass", "bounces.example.org", "192.0.2.1", "x", "b@bounces.example.org"};
  DmarcOutcome d = checkDmarc(dns, "example.org", spf, {});
  EXPECT_EQ(d.result, "pass");  // relaxed: the same organizational domain
  EXPECT_TRUE(d.spf_aligned);
  EXPECT_EQ(d.policy, "reject");
  spf.result = "fail";
  d = checkDmarc(dns, "example.org", spf, {{"pass", "other.example", "s"}});
  EXPECT_EQ(d.result, "fail");
  EXPECT_FALSE(d.dkim_aligned);
  d = checkDmarc(dns, "example.org", spf, {{"pass", "example.org", "s"}});
  EXPECT_EQ(d.result, "pass");
  EXPECT_TRUE(d.dkim_aligned);
  // A subdomain without its own record takes the organizational domain's sp=.
  d = checkDmarc(dns, "mail.example.org", spf, {});
  EXPECT_EQ(d.result, "fail");
  EXPECT_EQ(d.policy, "quarantine");
  // No record: none, with alignment still worked out.
  spf = {"pass", "plain.example", "192.0.2.1", "x", "a@plain.example"};
  d = checkDmarc(dns, "plain.example", spf, {});
  EXPECT_EQ(d.result, "none");
  EXPECT_EQ(d.policy, "");
  EXPECT_TRUE(d.spf_aligned);
  // A DNS error in SPF never turns into a DMARC fail.
  spf = {"temperror", "q.example", "192.0.2.1", "x", "a@q.example"};
  EXPECT_EQ(checkDmarc(dns, "q.example", spf, {}).result, "temperror");
}

TEST(ChecksTest, TheFromDomainComesFromTheHeaderNotTheEnvelope) {
  EXPECT_EQ(fromDomain("Subject: x\r\nFrom: \"GitHub\" <noreply@GitHub.com>\r\n\r\nbody"),
            "github.com");
  EXPECT_EQ(fromDomain("from:\r\n  a@folded.example\r\nTo: b@x\r\n\r\n"), "folded.example");
  EXPECT_EQ(fromDomain("To: b@x\r\n\r\nFrom: a@body.example\r\n"), "");
  EXPECT_EQ(organizationalDomain("mail.example.co.uk"), "example.co.uk");
  // The list is where the code looks for it (tools/deps.sh installs Debian's publicsuffix): a
  // wrong path would make every subdomain a zone of its own, with only a warning at start.
  EXPECT_EQ(missingSuffixList(), std::nullopt);
}

TEST(ChecksTest, TheFromJudgedIsTheFromShown) {
  // `From :` is a From to the views (their parser trims names): so it is to DMARC.
  EXPECT_EQ(fromDomain("From : PayPal <service@paypal.example>\r\n\r\nx"), "paypal.example");
  // Two From fields, or two mailboxes in one, judge no domain: nothing of it can pass.
  EXPECT_EQ(fromDomain("From : PayPal <service@paypal.example>\r\nFrom: x@atk.example\r\n\r\n"),
            "");
  EXPECT_EQ(fromDomain("From: a@one.example, b@two.example\r\n\r\n"), "");
  // A From past the header fields the views read is not judged either.
  std::string junk;
  for (int i = 0; i < 1001; ++i) junk += "X-Junk: " + std::to_string(i) + "\r\n";
  EXPECT_EQ(fromDomain(junk + "From: x@atk.example\r\n\r\n"), "");
}

TEST(ChecksTest, OnlyADnsErrorOfAnAlignedDomainMakesDmarcTemperror) {
  Zone z;
  z.txt["_dmarc.paypal.example"] = "v=DMARC1; p=reject";
  DnsResolver dns = z.resolver();
  // The attacker's own domain fails to resolve beside a forged From: still a DMARC fail.
  SpfOutcome unaligned{"temperror", "sf.atk.example", "192.0.2.1", "x", "x@sf.atk.example"};
  EXPECT_EQ(
      checkDmarc(dns, "paypal.example", unaligned, {{"temperror", "atk.example", "s"}}).result,
      "fail");
  SpfOutcome aligned{"temperror", "paypal.example", "192.0.2.1", "x", "x@paypal.example"};
  EXPECT_EQ(checkDmarc(dns, "paypal.example", aligned, {}).result, "temperror");
}

TEST(ChecksTest, AMessageOfManySignaturesIsPermerrorWithoutALookup) {
  // libopendkim would set up every one of them before ignoring any.
  Zone z;
  DnsResolver dns = z.resolver();
  std::string message;
  for (int i = 0; i < 60; ++i)
    message += "DKIM-Signature: v=1; d=x.example; s=s" + std::to_string(i) + "\r\n";
  message += "From: a@x.example\r\n\r\nbody\r\n";
  auto outcomes = checkDkim(dns, message);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].result, "permerror");
  EXPECT_TRUE(z.asked.empty());
  // A few are checked as usual (here: no key, so not a pass).
  std::string few =
      "DKIM-Signature: v=1; a=rsa-sha256; d=x.example; s=s1; h=from; bh=x; b=y\r\n"
      "From: a@x.example\r\n\r\nbody\r\n";
  auto checked = checkDkim(dns, few);
  ASSERT_EQ(checked.size(), 1u);
  EXPECT_NE(checked[0].result, "pass");
}

}  // namespace
}  // namespace svc::plugins::email
