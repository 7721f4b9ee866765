// DKIM and DMARC left for filing: only when nothing they say could change the SMTP answer (no
// policy that may reject, SPF passed for the From's own domain, or not enforcing), with the keys
// fetched before the answer; complete() then gives the verdict check() would have given, judged
// at the time the message arrived.
#include "auth/authenticator.h"
#include "auth/checks.h"
#include "auth/dkim_tags.h"
#include "dkim_test_signer.h"

#include <arpa/nameser.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <ctime>
#include <map>
#include <set>

namespace svc::plugins::email {
namespace {

using testing::keyRecord;
using testing::signForTest;
using testing::TestSignature;

EVP_PKEY* rsaKey() {
  static EVP_PKEY* key = EVP_RSA_gen(2048);
  return key;
}

struct Zone {
  std::map<std::string, std::string> txt;
  std::set<std::string> asked;

  DnsResolver resolver() {
    return DnsResolver(
        {},
        [this](const std::string& name, int type, std::chrono::milliseconds) {
          asked.insert(name);
          auto it = txt.find(name);
          if (type != ns_t_txt || it == txt.end()) {
            return DnsAnswer{DnsAnswer::Status::kNotFound, {}, 0};
          }
          return DnsAnswer{DnsAnswer::Status::kOk, {it->second}, 300};
        },
        [] { return DnsResolver::Clock::now(); });
  }
};

class DeferredChecksTest : public ::testing::Test {
 protected:
  DeferredChecksTest() {
    zone_.txt = {
        {"reject.example", "v=spf1 ip4:192.0.2.1 -all"},
        {"_dmarc.reject.example", "v=DMARC1; p=reject"},
        {"none.example", "v=spf1 ip4:192.0.2.1 -all"},
        {"_dmarc.none.example", "v=DMARC1; p=none"},
        {"sel._domainkey.reject.example", keyRecord(rsaKey())},
        {"sel._domainkey.none.example", keyRecord(rsaKey())},
    };
  }

  Authenticator authenticator(bool enforce = true) {
    Authenticator::Options o;
    o.hostname = "mx.agents.test";
    o.enforce = enforce;
    return Authenticator(o, dns_);
  }

  static std::string message(const std::string& domain, std::int64_t x = 0) {
    TestSignature sig;
    sig.key = rsaKey();
    sig.d = domain;
    if (x != 0) sig.extra = "x=" + std::to_string(x) + "; ";
    return signForTest(
        "From: a@" + domain + "\r\nTo: b@agents.test\r\nSubject: hi\r\n\r\nHello.\r\n", sig);
  }

  Zone zone_;
  DnsResolver dns_ = zone_.resolver();
};

TEST_F(DeferredChecksTest, SpfPassForTheFromDomainLeavesDkimForFilingWithItsKeyFetched) {
  Authenticator auth = authenticator();
  const std::string m = message("reject.example");
  const auto d = auth.check({"192.0.2.1", "mx.reject.example"}, "a@reject.example", m, true);
  EXPECT_TRUE(d.deferred);
  EXPECT_EQ(d.action, PolicyAction::kAccept);
  ASSERT_TRUE(d.authentication.spf);
  EXPECT_EQ(d.authentication.spf->result, "pass");
  EXPECT_TRUE(d.authentication.dkim.empty());
  EXPECT_TRUE(zone_.asked.count("sel._domainkey.reject.example"));

  zone_.asked.clear();
  const auto done = auth.complete(*d.authentication.spf, m, std::time(nullptr));
  EXPECT_TRUE(zone_.asked.empty()) << "the filer found every answer cached";
  EXPECT_FALSE(done.deferred);
  ASSERT_EQ(done.authentication.dkim.size(), 1u);
  EXPECT_EQ(done.authentication.dkim[0].result, "pass");
  EXPECT_EQ(done.authentication.verdict, "pass");
  EXPECT_NE(done.authentication.header.find("dkim=pass"), std::string::npos);
  // The same verdict as checking it all at once.
  const auto whole = auth.check({"192.0.2.1", "mx.reject.example"}, "a@reject.example", m);
  EXPECT_FALSE(whole.deferred);
  EXPECT_EQ(whole.authentication.header, done.authentication.header);
}

TEST_F(DeferredChecksTest, UnderPRejectWithoutAlignedSpfDkimDecidesTheAnswer) {
  Authenticator auth = authenticator();
  // SPF fails (wrong address): only DKIM can pass DMARC, so it is checked before the answer.
  const std::string m = message("reject.example");
  const auto signed_ok = auth.check({"192.0.2.9", "x"}, "a@reject.example", m, true);
  EXPECT_FALSE(signed_ok.deferred);
  ASSERT_EQ(signed_ok.authentication.dkim.size(), 1u);
  EXPECT_EQ(signed_ok.authentication.dkim[0].result, "pass");
  EXPECT_EQ(signed_ok.action, PolicyAction::kAccept);
  // A forged From of the domain, signed by nobody: refused.
  const auto forged = auth.check({"192.0.2.9", "x"}, "a@elsewhere.example",
                                 "From: a@reject.example\r\nSubject: hi\r\n\r\nHello.\r\n", true);
  EXPECT_FALSE(forged.deferred);
  EXPECT_EQ(forged.action, PolicyAction::kReject);
  // SPF passing for another domain than the From's does not align.
  zone_.txt["other.example"] = "v=spf1 ip4:192.0.2.1 -all";
  const auto unaligned =
      auth.check({"192.0.2.1", "x"}, "a@other.example",
                 "From: a@reject.example\r\nSubject: hi\r\n\r\nHello.\r\n", true);
  EXPECT_FALSE(unaligned.deferred);
  EXPECT_EQ(unaligned.action, PolicyAction::kReject);
}

TEST_F(DeferredChecksTest, WithoutAPolicyThatMayRejectOrNotEnforcingNothingWaits) {
  Authenticator auth = authenticator();
  const std::string m = message("none.example");
  const auto d = auth.check({"192.0.2.9", "x"}, "a@none.example", m, true);
  EXPECT_TRUE(d.deferred);
  EXPECT_EQ(auth.complete(*d.authentication.spf, m, std::time(nullptr)).authentication.verdict,
            "pass");  // DKIM aligned passes DMARC though SPF failed
  Authenticator lenient = authenticator(false);
  EXPECT_TRUE(lenient.check({"192.0.2.9", "x"}, "a@reject.example", message("reject.example"), true)
                  .deferred);
  // Not allowed to defer (a forged Authentication-Results of ours is in it): checked now.
  EXPECT_FALSE(auth.check({"192.0.2.9", "x"}, "a@none.example", m).deferred);
}

TEST_F(DeferredChecksTest, ASignatureIsJudgedAtTheTimeTheMessageArrived) {
  Authenticator auth = authenticator();
  const std::int64_t now = std::time(nullptr);
  // Expires (x=) an hour ago: valid when it arrived two hours ago, expired now.
  const std::string m = message("none.example", now - 3600);
  const auto d = auth.check({"192.0.2.1", "x"}, "a@none.example", m, true);
  ASSERT_TRUE(d.deferred);
  EXPECT_EQ(auth.complete(*d.authentication.spf, m, now - 7200).authentication.dkim[0].result,
            "pass");
  EXPECT_EQ(auth.complete(*d.authentication.spf, m, now).authentication.dkim[0].result, "fail");
}

TEST_F(DeferredChecksTest, AFailureFoundWhenFiledIsQuarantinedNotRefused) {
  Authenticator auth = authenticator();
  // p=none when it arrived (deferred), p=reject by the time it is filed.
  const std::string m = "From: a@none.example\r\nSubject: hi\r\n\r\nHello.\r\n";
  const auto d = auth.check({"192.0.2.9", "x"}, "a@none.example", m, true);
  ASSERT_TRUE(d.deferred);
  zone_.txt["_dmarc.none.example"] = "v=DMARC1; p=reject";
  DnsResolver fresh = zone_.resolver();  // the old answer out of the cache
  Authenticator::Options o;
  o.hostname = "mx.agents.test";
  Authenticator later(o, fresh);
  const auto done = later.complete(*d.authentication.spf, m, std::time(nullptr));
  EXPECT_EQ(done.authentication.dmarc->result, "fail");
  EXPECT_EQ(done.action, PolicyAction::kQuarantine);
  EXPECT_TRUE(done.refusal.empty());
}

TEST_F(DeferredChecksTest, TheKeysFetchedAheadAreTheOnesTheSignaturesName) {
  const std::string m =
      "DKIM-Signature: v=1; a=rsa-sha256;\r\n\td = Reject.Example ; s =\r\n Sel; b=AAAA\r\n"
      "DKIM-Signature: v=1; d=none.example; b=AAAA\r\n"        // no s=: nothing to fetch
      "DKIM-Signature: v=1; d=bad_domain!; s=sel; b=AAAA\r\n"  // no DNS name
      "DKIM-Signature: v=1; d=other.example; s=s2; b=AAAA\r\n"
      "From: a@reject.example\r\n\r\nHello.\r\n";
  prefetchDkimKeys(dns_, m);
  EXPECT_EQ(zone_.asked, (std::set<std::string>{"sel._domainkey.reject.example",
                                                "s2._domainkey.other.example"}));
}

TEST(DkimTagsTest, PeekFindsOneTagWithoutItsFoldingAndNotAPrefixOfAnother) {
  EXPECT_EQ(DkimTags::peek(" dd=x; d = a.\r\n example ;s=1", "d"), "a.example");
  EXPECT_EQ(DkimTags::peek("v=1; s=sel", "d"), std::nullopt);
  EXPECT_EQ(DkimTags::peek("junk; d=x", "d"), "x");
  EXPECT_EQ(DkimTags::peek("d=", "d"), "");
}

}  // namespace
}  // namespace svc::plugins::email
