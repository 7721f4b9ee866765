// DKIM and DMARC left for filing: only when nothing they say could change the SMTP answer (no
// policy that may reject, SPF passed for the From's own domain, or not enforcing), with the DNS
// answers they need taken before the answer; complete() then gives the verdict check() would
// have given, judged at the time the message arrived, asking no DNS server anything.
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
  return testing::sharedRsaKey();
}

struct Zone {
  std::map<std::string, std::string> txt;
  std::set<std::string> asked;
  std::uint32_t ttl = 300;

  DnsResolver resolver() {
    return DnsResolver(
        {},
        [this](const std::string& name, int type, std::chrono::milliseconds) {
          asked.insert(name);
          auto it = txt.find(name);
          if (type != ns_t_txt || it == txt.end()) {
            return DnsAnswer{DnsAnswer::Status::kNotFound, {}, 0};
          }
          return DnsAnswer{DnsAnswer::Status::kOk, {it->second}, ttl};
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

TEST_F(DeferredChecksTest, SpfPassForTheFromDomainLeavesDkimForFilingWithTheAnswersItNeeds) {
  zone_.ttl = 0;  // nothing cached: filing must not need the cache either
  Authenticator auth = authenticator();
  const std::string m = message("reject.example");
  const auto d = auth.check({"192.0.2.1", "mx.reject.example"}, "a@reject.example", m, true);
  ASSERT_TRUE(d.later);
  EXPECT_EQ(d.action, PolicyAction::kAccept);
  ASSERT_TRUE(d.authentication.spf);
  EXPECT_EQ(d.authentication.spf->result, "pass");
  EXPECT_TRUE(d.authentication.dkim.empty());
  EXPECT_TRUE(zone_.asked.count("sel._domainkey.reject.example"));

  // Filed after a crash, from the spool's text, with the zone gone silent.
  zone_.asked.clear();
  zone_.txt.clear();
  const auto later = DeferredChecks::parse(d.later->text());
  ASSERT_TRUE(later);
  const auto done = auth.complete(*later, m);
  EXPECT_TRUE(zone_.asked.empty()) << "filing asked the DNS";
  ASSERT_EQ(done.authentication.dkim.size(), 1u);
  EXPECT_EQ(done.authentication.dkim[0].result, "pass");
  EXPECT_EQ(done.authentication.dmarc->policy, "reject");
  EXPECT_EQ(done.authentication.verdict, "pass");
  EXPECT_NE(done.authentication.header.find("dkim=pass"), std::string::npos);
  EXPECT_EQ(done.action, PolicyAction::kAccept);
}

TEST_F(DeferredChecksTest, TheVerdictIsTheOneACheckAtOnceGives) {
  Authenticator auth = authenticator();
  const std::string m = message("reject.example");
  const auto d = auth.check({"192.0.2.1", "mx.reject.example"}, "a@reject.example", m, true);
  ASSERT_TRUE(d.later);
  const auto whole = auth.check({"192.0.2.1", "mx.reject.example"}, "a@reject.example", m);
  EXPECT_FALSE(whole.later);
  EXPECT_EQ(whole.authentication.header, auth.complete(*d.later, m).authentication.header);
  EXPECT_EQ(authenticationText(whole.authentication),
            authenticationText(auth.complete(*d.later, m).authentication));
}

TEST_F(DeferredChecksTest, UnderPRejectWithoutAlignedSpfDkimDecidesTheAnswer) {
  Authenticator auth = authenticator();
  // SPF fails (wrong address): only DKIM can pass DMARC, so it is checked before the answer.
  const std::string m = message("reject.example");
  const auto signed_ok = auth.check({"192.0.2.9", "x"}, "a@reject.example", m, true);
  EXPECT_FALSE(signed_ok.later);
  ASSERT_EQ(signed_ok.authentication.dkim.size(), 1u);
  EXPECT_EQ(signed_ok.authentication.dkim[0].result, "pass");
  EXPECT_EQ(signed_ok.action, PolicyAction::kAccept);
  // A forged From of the domain, signed by nobody: refused.
  const auto forged = auth.check({"192.0.2.9", "x"}, "a@elsewhere.example",
                                 "From: a@reject.example\r\nSubject: hi\r\n\r\nHello.\r\n", true);
  EXPECT_FALSE(forged.later);
  EXPECT_EQ(forged.action, PolicyAction::kReject);
  // SPF passing for another domain than the From's does not align.
  zone_.txt["other.example"] = "v=spf1 ip4:192.0.2.1 -all";
  const auto unaligned =
      auth.check({"192.0.2.1", "x"}, "a@other.example",
                 "From: a@reject.example\r\nSubject: hi\r\n\r\nHello.\r\n", true);
  EXPECT_FALSE(unaligned.later);
  EXPECT_EQ(unaligned.action, PolicyAction::kReject);
  // A bounce (no envelope sender): SPF passes for the HELO name, which libopendmarc counts
  // for DMARC; only an envelope sender's pass leaves DKIM for filing, so it is checked at once.
  const auto by_helo = auth.check({"192.0.2.1", "reject.example"}, "",
                                  "From: a@reject.example\r\nSubject: hi\r\n\r\nHello.\r\n", true);
  ASSERT_TRUE(by_helo.authentication.spf);
  EXPECT_EQ(by_helo.authentication.spf->result, "pass");
  EXPECT_FALSE(by_helo.later);
  ASSERT_TRUE(by_helo.authentication.dmarc);
  EXPECT_TRUE(by_helo.authentication.dmarc->spf_aligned);
  EXPECT_EQ(by_helo.action, PolicyAction::kAccept);
}

TEST_F(DeferredChecksTest, WhatLibopendmarcReadsAsRejectIsReject) {
  // libopendmarc takes any prefix of "reject" as reject, and sp= for a subdomain.
  zone_.txt["_dmarc.short.example"] = "v=DMARC1; p=rej";
  zone_.txt["_dmarc.sub.example"] = "v=DMARC1; p=none; sp=r";
  zone_.txt["_dmarc.quarantine.example"] = "v=DMARC1; p=quarantine; rua=mailto:d@x.example";
  DnsResolver& dns = dns_;
  EXPECT_TRUE(dmarcMayReject(dns, "short.example"));
  EXPECT_TRUE(dmarcMayReject(dns, "sub.example"));
  EXPECT_TRUE(dmarcMayReject(dns, "reject.example"));
  EXPECT_FALSE(dmarcMayReject(dns, "none.example"));
  EXPECT_FALSE(dmarcMayReject(dns, "quarantine.example"));
  EXPECT_FALSE(dmarcMayReject(dns, "nothing.example"));  // no record
  EXPECT_FALSE(dmarcMayReject(dns, ""));
  Authenticator auth = authenticator();
  const auto short_p = auth.check({"192.0.2.9", "x"}, "a@elsewhere.example",
                                  "From: a@short.example\r\nSubject: hi\r\n\r\nHello.\r\n", true);
  EXPECT_FALSE(short_p.later);
  EXPECT_EQ(short_p.action, PolicyAction::kReject);
}

TEST_F(DeferredChecksTest, APolicyLookupThatFailedIsNoReasonToWait) {
  DnsResolver broken(
      {}, [](const std::string&, int, std::chrono::milliseconds) { return DnsAnswer{}; },
      [] { return DnsResolver::Clock::now(); });
  EXPECT_TRUE(dmarcMayReject(broken, "reject.example"));
  Authenticator::Options o;
  o.hostname = "mx.agents.test";
  Authenticator auth(o, broken);
  EXPECT_FALSE(
      auth.check({"192.0.2.1", "x"}, "a@reject.example", message("reject.example"), true).later);
}

TEST_F(DeferredChecksTest, WithoutAPolicyThatMayRejectOrNotEnforcingNothingWaits) {
  Authenticator auth = authenticator();
  const std::string m = message("none.example");
  const auto d = auth.check({"192.0.2.9", "x"}, "a@none.example", m, true);
  ASSERT_TRUE(d.later);
  EXPECT_EQ(auth.complete(*d.later, m).authentication.verdict,
            "pass");  // DKIM aligned passes DMARC though SPF failed
  Authenticator lenient = authenticator(false);
  const auto unenforced =
      lenient.check({"192.0.2.9", "x"}, "a@reject.example", message("reject.example"), true);
  ASSERT_TRUE(unenforced.later);
  // Not enforcing, the DMARC policy was still taken along for the verdict.
  EXPECT_EQ(
      lenient.complete(*unenforced.later, message("reject.example")).authentication.dmarc->policy,
      "reject");
  // Not allowed to defer (as for a message with a forged Authentication-Results of ours, which
  // Ingest::checkedRecord checks at once): checked now.
  EXPECT_FALSE(auth.check({"192.0.2.9", "x"}, "a@none.example", m).later);
}

TEST_F(DeferredChecksTest, ASignatureIsJudgedAtTheTimeTheMessageArrived) {
  Authenticator auth = authenticator();
  const std::int64_t now = std::time(nullptr);
  // Expires (x=) an hour ago: valid when it arrived two hours ago, expired now.
  const std::string m = message("none.example", now - 3600);
  auto d = auth.check({"192.0.2.1", "x"}, "a@none.example", m, true);
  ASSERT_TRUE(d.later);
  d.later->arrived = now - 7200;
  EXPECT_EQ(auth.complete(*d.later, m).authentication.dkim[0].result, "pass");
  d.later->arrived = now;
  EXPECT_EQ(auth.complete(*d.later, m).authentication.dkim[0].result, "fail");
}

TEST_F(DeferredChecksTest, AFailureFoundWhenFiledIsQuarantinedNotRefused) {
  Authenticator auth = authenticator();
  // Answers that say p=reject, and neither SPF nor DKIM passed: check() would have refused it;
  // complete() cannot, and keeps it out of sight.
  DeferredChecks later;
  later.spf = SpfOutcome{"fail", "reject.example", "192.0.2.9", "x", "a@reject.example"};
  later.arrived = std::time(nullptr);
  later.answers.push_back({"_dmarc.reject.example", ns_t_txt,
                           DnsAnswer{DnsAnswer::Status::kOk, {"v=DMARC1; p=reject"}, 300}});
  const auto done = auth.complete(later, "From: a@reject.example\r\nSubject: hi\r\n\r\nHello.\r\n");
  EXPECT_EQ(done.authentication.dmarc->result, "fail");
  EXPECT_EQ(done.authentication.verdict, "fail");
  EXPECT_EQ(done.action, PolicyAction::kQuarantine);
  EXPECT_TRUE(done.refusal.empty());
  // An answer it does not hold is a DNS failure: temperror, never a question asked.
  later.answers.clear();
  const auto unknown =
      auth.complete(later, "From: a@reject.example\r\nSubject: hi\r\n\r\nHello.\r\n");
  EXPECT_EQ(unknown.authentication.dmarc->result, "temperror");
  EXPECT_TRUE(zone_.asked.empty());
}

TEST_F(DeferredChecksTest, ChecksThatCouldNotBeCompletedAreQuarantinedWhenEnforcing) {
  // The message may be the forgery DMARC would have caught: not trusted, not lost.
  const std::string m = message("reject.example");
  DeferredChecks later;
  later.spf = SpfOutcome{"pass", "reject.example", "192.0.2.1", "x", "a@reject.example"};
  const auto done = authenticator().incomplete(&later, m);
  EXPECT_EQ(done.action, PolicyAction::kQuarantine);
  EXPECT_EQ(done.authentication.verdict, "none");
  EXPECT_EQ(done.authentication.reason,
            "the checks could not be completed when the message was filed");
  ASSERT_TRUE(done.authentication.spf);
  EXPECT_EQ(done.authentication.spf->result, "pass");
  // The header says the checks failed for now, not that the message carries no signature.
  EXPECT_EQ(done.authentication.header,
            "Authentication-Results: mx.agents.test; spf=pass smtp.mailfrom=a@reject.example "
            "smtp.helo=x; dkim=temperror; dmarc=temperror header.from=reject.example");
  EXPECT_TRUE(zone_.asked.empty());
  // A record that could not be read at all; and not enforcing, the message is listed.
  const auto unread = authenticator(false).incomplete(nullptr, m);
  EXPECT_EQ(unread.action, PolicyAction::kAccept);
  EXPECT_FALSE(unread.authentication.spf);
  EXPECT_EQ(unread.authentication.verdict, "none");
}

TEST(DeferredChecksTextTest, AQuestionAskedTwiceIsAnsweredAsItWasWhenItWasAnswered) {
  // Two signatures of one key: the first lookup failed, the second had the record.
  std::vector<DnsResolver::Recorded> asked{
      {"s._domainkey.b.example", ns_t_txt, DnsAnswer{DnsAnswer::Status::kFailed, {}, 0, true}},
      {"S._domainkey.b.example", ns_t_txt, DnsAnswer{DnsAnswer::Status::kOk, {"v=DKIM1"}, 60}}};
  const auto replay = DnsResolver::replaying(asked);
  const DnsAnswer a = replay->query("s._domainkey.b.example", ns_t_txt);
  EXPECT_EQ(a.status, DnsAnswer::Status::kOk);
  EXPECT_EQ(a.records, std::vector<std::string>{"v=DKIM1"});
  EXPECT_EQ(replay->query("s._domainkey.b.example", ns_t_a).status, DnsAnswer::Status::kFailed);
  EXPECT_EQ(replay->query("other.b.example", ns_t_txt).status, DnsAnswer::Status::kFailed);
}

TEST(DeferredChecksTextTest, AnyBytesASenderOrARecordGaveComeBackAsTheyWere) {
  DeferredChecks c;
  c.arrived = 1790000000;
  c.spf = SpfOutcome{"pass", "", "192.0.2.1", std::string("mx \r\n\xff\0x", 8), "a@b.example"};
  c.answers.push_back({"s._domainkey.b.example", ns_t_txt,
                       DnsAnswer{DnsAnswer::Status::kOk, {"v=DKIM1; p=AB CD\n", ""}, 0}});
  c.answers.push_back({"_dmarc.b.example", ns_t_txt, DnsAnswer{DnsAnswer::Status::kFailed, {}, 0}});
  const std::string text = c.text();
  EXPECT_EQ(text.find_first_of("\r\n"), std::string::npos);
  const auto back = DeferredChecks::parse(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->arrived, c.arrived);
  EXPECT_EQ(back->spf.helo, c.spf.helo);
  EXPECT_EQ(back->spf.domain, "");
  EXPECT_EQ(back->spf.mail_from, "a@b.example");
  ASSERT_EQ(back->answers.size(), 2u);
  EXPECT_EQ(back->answers[0].name, "s._domainkey.b.example");
  EXPECT_EQ(back->answers[0].type, ns_t_txt);
  EXPECT_EQ(back->answers[0].answer.records, c.answers[0].answer.records);
  EXPECT_EQ(back->answers[1].answer.status, DnsAnswer::Status::kFailed);
  EXPECT_FALSE(DeferredChecks::parse(""));
  EXPECT_FALSE(DeferredChecks::parse("soon . . . . ."));
  EXPECT_FALSE(DeferredChecks::parse("1 . . ."));                       // SPF cut short
  EXPECT_FALSE(DeferredChecks::parse("1 . . . . . bmFtZQ 16 0 2 eA"));  // a record missing
  EXPECT_FALSE(DeferredChecks::parse("1 . . . . . bmFtZQ 16 9 0"));     // no such status
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
