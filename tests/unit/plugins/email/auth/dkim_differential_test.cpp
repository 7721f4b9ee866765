// Our DKIM verifier (auth/dkim_verify) against libopendkim, the library the plugin used before:
// for every message here both must give each signature the same result, except where a case
// says why they differ (RFC 8301, or where libopendkim drops what it cannot parse).
#include "auth/dkim_verify.h"
#include "dkim.h"
#include "dkim_test_signer.h"
#include "opendkim_reference.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <svc/sdk/util.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>
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
EVP_PKEY* smallRsaKey() {
  static EVP_PKEY* key = EVP_RSA_gen(768);
  return key;
}
EVP_PKEY* edKey() {
  static EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  return key;
}

const std::string kMessage =
    "From: Alice <alice@example.org>\r\n"
    "To: bob@example.net\r\n"
    "Subject: Lunch\r\n"
    "Date: Fri, 27 Nov 2026 12:00:00 +0000\r\n"
    "Message-ID: <1@example.org>\r\n"
    "\r\n"
    "Hi Bob,\r\n"
    "  see you  at noon. \r\n"
    "\r\n"
    "\r\n";

std::vector<std::string> results(const std::vector<DkimVerdict>& verdicts) {
  std::vector<std::string> out;
  for (const auto& v : verdicts) out.push_back(v.result);
  return out;
}

std::string explain(const std::vector<DkimVerdict>& verdicts) {
  std::string out;
  for (const auto& v : verdicts)
    out += v.result + "(" + v.domain + "/" + v.selector + ": " + v.why + ") ";
  return out;
}

class DkimDifferentialTest : public ::testing::Test {
 protected:
  void SetUp() override { zone["sel._domainkey.example.org"] = keyRecord(rsaKey()); }

  DkimKeyLookup lookup() {
    return [this](const std::string& name) {
      if (broken.count(name) != 0) return DkimKeyAnswer{};
      auto it = zone.find(name);
      if (it == zone.end()) return DkimKeyAnswer{DkimKeyAnswer::Status::kNotFound, ""};
      return DkimKeyAnswer{DkimKeyAnswer::Status::kOk, it->second};
    };
  }
  std::vector<DkimVerdict> ours(const std::string& message) {
    DkimVerifyOptions options;
    options.now = static_cast<std::int64_t>(std::time(nullptr));
    return verifyDkim(message, lookup(), cache, options);
  }
  std::vector<DkimVerdict> theirs(const std::string& message) {
    return svc::testing::opendkimVerify(lookup(), message);
  }
  // Both give expected, signature by signature, with the same domains and selectors.
  void same(const std::string& message, const std::vector<std::string>& expected) {
    const auto a = ours(message), b = theirs(message);
    EXPECT_EQ(results(a), expected) << "ours: " << explain(a) << "\n" << message;
    EXPECT_EQ(results(b), expected) << "libopendkim: " << explain(b) << "\n" << message;
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].domain, b[i].domain);
      EXPECT_EQ(a[i].selector, b[i].selector);
    }
  }
  // A known difference, each side pinned, so a change on either is noticed.
  void differ(const std::string& message, const std::vector<std::string>& mine,
              const std::vector<std::string>& libopendkim, const char* why) {
    SCOPED_TRACE(why);
    const auto a = ours(message), b = theirs(message);
    EXPECT_EQ(results(a), mine) << "ours: " << explain(a);
    EXPECT_EQ(results(b), libopendkim) << "libopendkim: " << explain(b);
  }

  TestSignature sig(EVP_PKEY* key = rsaKey()) {
    TestSignature s;
    s.key = key;
    return s;
  }

  std::map<std::string, std::string> zone;
  std::set<std::string> broken;
  DkimKeyCache cache;
};

TEST_F(DkimDifferentialTest, OurSignerPasses) {
  char path[] = "/tmp/svc-dkim-diff-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  ASSERT_EQ(PEM_write_PrivateKey(f, rsaKey(), nullptr, nullptr, 0, nullptr, nullptr), 1);
  std::fclose(f);
  DkimSigner signer("sel", path);
  unlink(path);
  const std::string two_to = "To: carol@example.net\r\n" + kMessage;
  same(signer.sign(kMessage, "example.org", std::time(nullptr)), {"pass"});
  same(signer.sign(two_to, "example.org", std::time(nullptr)), {"pass"});
  // A To added below the signed ones is the one a verifier takes first: not a pass.
  std::string added = signer.sign(kMessage, "example.org", std::time(nullptr));
  added.insert(added.find("\r\n\r\n") + 2, "To: mallory@example.com\r\n");
  same(added, {"fail"});
}

TEST_F(DkimDifferentialTest, EveryCanonicalizationPassesAndCatchesWhatItShould) {
  for (const char* c : {"simple/simple", "simple/relaxed", "relaxed/simple", "relaxed/relaxed",
                        "simple", "relaxed"}) {
    SCOPED_TRACE(c);
    TestSignature s = sig();
    s.c = c;
    const std::string signed_message = signForTest(kMessage, s);
    same(signed_message, {"pass"});
    const std::string cs(c);
    const bool relaxed_head = cs.rfind("relaxed", 0) == 0;
    const bool relaxed_body = cs.size() > 8 && cs.substr(cs.size() - 7) == "relaxed";
    // Whitespace inside a signed header value: only relaxed forgives it.
    std::string spaced = signed_message;
    spaced.replace(spaced.find("Subject: Lunch"), 14, "Subject:  Lunch ");
    same(spaced, {relaxed_head ? "pass" : "fail"});
    // Case of a header name: only relaxed forgives it.
    std::string cased = signed_message;
    cased.replace(cased.find("Subject:"), 8, "SUBJECT:");
    same(cased, {relaxed_head ? "pass" : "fail"});
    // Whitespace in the body, and empty lines at its end (forgiven by both).
    std::string body = signed_message;
    body.replace(body.find("see you  at"), 11, "see  you at");
    same(body, {relaxed_body ? "pass" : "fail"});
    same(signed_message + "\r\n\r\n", {"pass"});
    // Other words: neither forgives.
    std::string tampered = signed_message;
    tampered.replace(tampered.find("noon"), 4, "nine");
    same(tampered, {"fail"});
    std::string header = signed_message;
    header.replace(header.find("Lunch"), 5, "Lunch!");
    same(header, {"fail"});
  }
}

TEST_F(DkimDifferentialTest, BodyLength) {
  TestSignature s = sig();
  s.l = 9;  // "Hi Bob,\r\n"
  const std::string signed_message = signForTest(kMessage, s);
  // The whole body signed through l=: both pass. Anything after the signed length is vouched
  // for by no one: ours says neutral (so DMARC cannot pass on it), libopendkim pass.
  differ(signed_message, {"neutral"}, {"pass"}, "l= shorter than the body: unsigned content");
  differ(signed_message + "Appended by someone else.\r\n", {"neutral"}, {"pass"},
         "l= shorter than the body: content appended");
  std::string tampered = signed_message;
  tampered.replace(tampered.find("Hi Bob"), 6, "Hi Rob");
  same(tampered, {"fail"});
  s.c = "simple/simple";
  differ(signForTest(kMessage, s) + "More.\r\n", {"neutral"}, {"pass"},
         "l= shorter than the body, simple");
  TestSignature whole = sig();
  whole.l = static_cast<int>(
      relaxedBody(std::string(kMessage).substr(std::string(kMessage).find("\r\n\r\n") + 4)).size());
  same(signForTest(kMessage, whole), {"pass"});
}

// What no signer writes is refused before any DNS question (a name no resolver can ask would
// be a DNS error, which DMARC does not hold against the sender) or any large work.
TEST_F(DkimDifferentialTest, NamesAndSizesNoSignerWrites) {
  TestSignature s = sig();
  s.s = std::string(64, 'a');  // a label over 63 octets
  auto mine = ours(signForTest(kMessage, s));
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].result, "permerror") << mine[0].why;
  s = sig();
  s.s = "sel ector";
  mine = ours(signForTest(kMessage, s));
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].result, "permerror") << mine[0].why;
  // Over 1,000 header fields: what the views read stops there, so does the verifier.
  std::string many = signForTest(kMessage, sig());
  std::string filler;
  for (int i = 0; i < 1001; ++i) filler += "X-Filler: " + std::to_string(i) + "\r\n";
  mine = ours(filler + many);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].result, "permerror") << mine[0].why;
  EXPECT_EQ(mine[0].why, "the header holds over 1,000 fields");
}

TEST_F(DkimDifferentialTest, Ed25519) {
  zone["ed._domainkey.example.org"] = keyRecord(edKey());
  TestSignature s = sig(edKey());
  s.a = "ed25519-sha256";
  s.s = "ed";
  const std::string signed_message = signForTest(kMessage, s);
  same(signed_message, {"pass"});
  std::string tampered = signed_message;
  tampered.replace(tampered.find("noon"), 4, "nine");
  same(tampered, {"fail"});
  // An RSA signature naming the ed25519 key, and the other way round.
  TestSignature rsa = sig();
  rsa.s = "ed";
  same(signForTest(kMessage, rsa), {"permerror"});
  s.s = "sel";
  same(signForTest(kMessage, s), {"permerror"});
}

TEST_F(DkimDifferentialTest, Rfc8301) {
  TestSignature s = sig();
  s.a = "rsa-sha1";
  differ(signForTest(kMessage, s), {"permerror"}, {"pass"},
         "RFC 8301 3.1: verifiers must not consider rsa-sha1 signatures valid; libopendkim does");
  zone["small._domainkey.example.org"] = keyRecord(smallRsaKey());
  TestSignature small = sig(smallRsaKey());
  small.s = "small";
  same(signForTest(kMessage, small), {"permerror"});  // under 1024 bits
}

TEST_F(DkimDifferentialTest, SeveralSignatures) {
  zone["ed._domainkey.example.org"] = keyRecord(edKey());
  TestSignature a = sig();
  TestSignature b = sig(edKey());
  b.a = "ed25519-sha256";
  b.s = "ed";
  TestSignature c = sig();
  c.d = "other.example";  // no key there
  std::string m = signForTest(signForTest(signForTest(kMessage, a), b), c);
  same(m, {"permerror", "pass", "pass"});
  // The bottom signature tampered with, the others intact.
  const std::size_t at = m.find("; b=", m.rfind("DKIM-Signature:")) + 4;
  m.replace(at, 4, m.compare(at, 4, "AAAA") == 0 ? "BBBB" : "AAAA");
  same(m, {"permerror", "pass", "fail"});
  // Past five, signatures are not checked (nor listed).
  std::string many = kMessage;
  for (int i = 0; i < 7; ++i) many = signForTest(many, a);
  same(many, {"pass", "pass", "pass", "pass", "pass"});
}

TEST_F(DkimDifferentialTest, RepeatedAndOverSignedFields) {
  const std::string two = "Received: x\r\nTo: carol@example.net\r\n" + kMessage;
  TestSignature s = sig();
  s.h = "from:to:to:subject";
  same(signForTest(two, s), {"pass"});
  // Only one To signed: the bottom one; a To added at the bottom then replaces it.
  s.h = "from:to:subject";
  const std::string one = signForTest(two, s);
  same(one, {"pass"});
  std::string reordered = one;
  reordered.insert(reordered.find("\r\n\r\n") + 2, "To: mallory@example.com\r\n");
  same(reordered, {"fail"});
  // Over-signed: Reply-To named though absent, so adding one breaks the signature.
  s.h = "from:to:subject:reply-to:reply-to";
  const std::string over = signForTest(kMessage, s);
  same(over, {"pass"});
  std::string added = over;
  added.insert(added.find("\r\n\r\n") + 2, "Reply-To: mallory@example.com\r\n");
  same(added, {"fail"});
  // A signature that leaves From out is no signature (RFC 6376 5.4).
  s.h = "to:subject";
  same(signForTest(kMessage, s), {"permerror"});
}

TEST_F(DkimDifferentialTest, SignatureTimesAndIdentity) {
  const long now = static_cast<long>(std::time(nullptr));
  TestSignature s = sig();
  s.extra = "t=" + std::to_string(now - 100) + "; x=" + std::to_string(now + 1000) + "; ";
  same(signForTest(kMessage, s), {"pass"});
  s.extra = "t=" + std::to_string(now - 5000) + "; x=" + std::to_string(now - 1000) + "; ";
  same(signForTest(kMessage, s), {"fail"});  // expired
  s.extra = "t=" + std::to_string(now + 5000) + "; ";
  same(signForTest(kMessage, s), {"fail"});  // signed in the future
  s.extra = "t=" + std::to_string(now + 100) + "; ";
  same(signForTest(kMessage, s), {"pass"});  // within the clocks' drift
  s.extra = "i=alice@mail.example.org; ";
  same(signForTest(kMessage, s), {"pass"});
  s.extra = "i=@example.org; ";
  same(signForTest(kMessage, s), {"pass"});
  s.extra = "i=alice@example.com; ";
  same(signForTest(kMessage, s), {"permerror"});
  s.extra = "i=alice@badexample.org; ";
  same(signForTest(kMessage, s), {"permerror"});
}

TEST_F(DkimDifferentialTest, KeyRecords) {
  const std::string m = signForTest(kMessage, sig());
  auto with = [&](const std::string& record) {
    zone["sel._domainkey.example.org"] = record;
    return m;
  };
  const std::string good = keyRecord(rsaKey());
  const std::string p = good.substr(good.find("p="));
  same(with("k=rsa; " + p), {"pass"});
  same(with(p), {"pass"});  // v= and k= are optional
  same(with("v=DKIM1; h=sha256; s=email; " + p), {"pass"});
  same(with("v=DKIM1; h=sha1:sha256; s=*; n=notes; " + p), {"pass"});
  same(with("v=DKIM1; p="), {"fail"});  // revoked
  same(with("v=DKIM1; h=sha1; " + p), {"permerror"});
  same(with("v=DKIM1; s=other; " + p), {"permerror"});
  same(with("v=DKIM1; k=dsa; " + p), {"permerror"});
  same(with("v=DKIM1; p=!!not-base64!!"), {"permerror"});
  same(with("v=DKIM1; p=" + p.substr(2, 40)), {"permerror"});  // base64, not a key
  same(with("v=DKIM2; " + p), {"permerror"});
  same(with("v=DKIM1; k=rsa"), {"permerror"});  // no p=
  same(with("v=DKIM1; t=y; " + p), {"pass"});   // testing mode: still verified
  // t=s: i= must be d= itself.
  TestSignature sub = sig();
  sub.extra = "i=alice@mail.example.org; ";
  zone["sel._domainkey.example.org"] = "v=DKIM1; t=s; " + p;
  same(signForTest(kMessage, sub), {"permerror"});
  same(m, {"pass"});
  // No record, and a DNS failure.
  zone.erase("sel._domainkey.example.org");
  same(m, {"permerror"});
  broken.insert("sel._domainkey.example.org");
  differ(m, {"temperror"}, {},
         "libopendkim gives up on the whole message when a key lookup says try again, and "
         "lists no signature; a DNS failure must be temperror (issue 20)");
}

TEST_F(DkimDifferentialTest, TagListOddities) {
  TestSignature s = sig();
  s.separator = "\r\n\t";  // every tag folded onto its own line
  same(signForTest(kMessage, s), {"pass"});
  s.separator = "  ";
  s.extra = "z=unknown-tag; xx=42; ";
  same(signForTest(kMessage, s), {"pass"});
  s.separator = " ";
  s.extra = "";
  s.h = "From : To : Subject";
  same(signForTest(kMessage, s), {"pass"});
  s.h = "from:to:subject";
  // A required tag missing, an unknown algorithm or canonicalization, a broken version.
  std::string m = signForTest(kMessage, s);
  std::string no_bh = m;
  no_bh.erase(no_bh.find("bh="), no_bh.find(';', no_bh.find("bh=")) - no_bh.find("bh=") + 1);
  differ(no_bh, {"permerror"}, {"permerror"}, "both: no bh=");
  std::string bad_v = m;
  bad_v.replace(bad_v.find("v=1"), 3, "v=2");
  same(bad_v, {"permerror"});
  s.a = "rsa-sha512";
  std::string unknown_a = signForTest(kMessage, sig());
  unknown_a.replace(unknown_a.find("a=rsa-sha256"), 12, "a=rsa-sha512");
  same(unknown_a, {"permerror"});
  std::string unknown_c = signForTest(kMessage, sig());
  unknown_c.replace(unknown_c.find("c=relaxed/relaxed"), 17, "c=relaxed/strange");
  same(unknown_c, {"permerror"});
  std::string bad_l = signForTest(kMessage, sig());
  bad_l.replace(bad_l.find("h=from"), 6, "l=12x; h=from");
  same(bad_l, {"permerror"});
  // b= without its padding (RFC 6376's base64string makes it optional), or folded anywhere.
  std::string unpadded = m;
  const std::size_t pad = unpadded.find("==\r\n");
  ASSERT_NE(pad, std::string::npos);
  unpadded.erase(pad, 2);
  same(unpadded, {"pass"});
  std::string folded = m;
  folded.insert(folded.find("; b=") + 10, "\r\n\t ");
  same(folded, {"pass"});
  // A character outside base64 in b=: libopendkim skips it.
  std::string colon = m;
  colon.insert(colon.find("; b=") + 10, ":");
  differ(colon, {"permerror"}, {"pass"},
         "libopendkim's base64 decoder skips characters outside the alphabet (and stops at the "
         "first =); RFC 6376's base64string allows only the alphabet and FWS");
  // A tag given twice: RFC 6376 3.2 makes it an error.
  TestSignature twice = sig();
  twice.extra = "d=example.org; ";
  differ(signForTest(kMessage, twice), {"permerror"}, {"pass"},
         "RFC 6376 3.2: a tag twice is a verifier error; libopendkim keeps the last");
  // Not a tag list at all: libopendkim leaves the field out of its list.
  const std::string garbage = "DKIM-Signature: this is not; a tag list\r\n" + m;
  differ(garbage, {"permerror", "pass"}, {},
         "one DKIM-Signature libopendkim cannot parse makes it stop reading the header, so it "
         "lists no signature at all; we report that one as permerror and check the others");
}

TEST_F(DkimDifferentialTest, LineEnds) {
  const std::string m = signForTest(kMessage, sig());
  std::string lf;
  for (char c : m) {
    if (c != '\r') lf += c;
  }
  // Without CRLF the whole message is one header field to us.
  differ(lf, {"permerror"}, {},
         "with no CRLF, libopendkim finds no header block; to us it is one field, whose b= is "
         "not base64: not a pass either way");
  // A bare LF inside the body is an ordinary byte to both.
  std::string bare = kMessage;
  bare.replace(bare.find("Hi Bob,\r\n"), 9, "Hi Bob,\n");
  same(signForTest(bare, sig()), {"pass"});
  TestSignature simple = sig();
  simple.c = "simple/simple";
  differ(signForTest(bare, simple), {"pass"}, {"fail"},
         "libopendkim's simple body canonicalization does not count a bare LF (dkim-canon.c, "
         "DKIM_CANON_SIMPLE: wlen is not advanced), so it hashes that line short; RFC 6376 "
         "3.4.3 and dkimpy keep it as an ordinary byte, as we do");
  // A bare CR in a relaxed body: libopendkim drops it.
  std::string cr = kMessage;
  cr.replace(cr.find("see you"), 7, "see\ryou");
  differ(signForTest(cr, sig()), {"pass"}, {"fail"},
         "libopendkim's relaxed body canonicalization drops a CR not followed by LF; RFC 6376 "
         "3.4.4 keeps it (it is not WSP)");
  same(signForTest(cr, simple), {"pass"});
  // A body whose last line has no CRLF (SMTP always adds one).
  std::string open_end = signForTest(kMessage + "no end", sig());
  differ(open_end, {"pass"}, {"neutral"},
         "libopendkim verifies nothing when the body does not end in CRLF (dkim_eom: CRLF at end "
         "of body missing); RFC 6376 3.4.3 and 3.4.4 canonicalize it by adding one");
  // A form feed in a signed header value, relaxed: not WSP (RFC 5234), so not squeezed.
  std::string ff = kMessage;
  ff.replace(ff.find("Lunch"), 5, "Lu\f\fnch");
  differ(signForTest(ff, sig()), {"pass"}, {"fail"},
         "libopendkim's relaxed header canonicalization squeezes every isspace() byte (FF, VT) "
         "as if it were WSP; RFC 6376 3.4.2 and dkimpy only SP and HTAB");
  // A NUL in a signed header field (no message should carry one, RFC 5322).
  std::string nul = kMessage;
  nul.replace(nul.find("Lunch"), 5, std::string("Lu\0nch", 6));
  differ(signForTest(nul, sig()), {"pass"}, {"fail"},
         "libopendkim keeps header fields as C strings, so a NUL ends the field early; we "
         "hash the bytes the signer signed");
}

TEST_F(DkimDifferentialTest, TheKeyCacheDecodesARecordOnce) {
  DkimKeyCache keys(2);
  const std::string a = keyRecord(rsaKey());
  const auto first = keys.get(a);
  EXPECT_EQ(keys.get(a), first);  // the same decoded key
  keys.get(keyRecord(edKey()));
  keys.get("v=DKIM1; p=");
  EXPECT_EQ(keys.size(), 2u);     // bounded: the least recently used went
  EXPECT_NE(keys.get(a), first);  // and is decoded again
}

}  // namespace
}  // namespace svc::plugins::email

namespace svc::plugins::email {
namespace {

// A sender can write a header of 50,000 fields and a signature naming 50,000 of them (and as
// many tags). Such a message is refused before any work in proportion to it; one just within the
// bounds is checked through to its signature.
std::string bigMessage(int fields, int names, int tags) {
  std::string header, h, extra;
  for (int i = 0; i < fields; ++i) header += "X-F" + std::to_string(i) + ": v\r\n";
  for (int i = 0; i < names; ++i) h += "x-f" + std::to_string(i) + ":";
  for (int i = 0; i < tags; ++i) extra += "t" + std::to_string(i) + "=1; ";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest("body\r\n", 6, digest, &len, EVP_sha256(), nullptr);
  const std::string bh = sdk::base64(std::string_view(reinterpret_cast<char*>(digest), len));
  return "DKIM-Signature: v=1; a=rsa-sha256; d=example.org; s=sel; " + extra + "h=" + h +
         "from; bh=" + bh + "; b=AAAA\r\n" + header + "From: a@example.org\r\n\r\nbody\r\n";
}

TEST(DkimVerifyCost, WhatNoSignerWritesIsRefusedBeforeItCosts) {
  DkimKeyCache cache;
  const DkimKeyLookup lookup = [](const std::string&) {
    return DkimKeyAnswer{DkimKeyAnswer::Status::kOk, keyRecord(rsaKey())};
  };
  const auto verify = [&](const std::string& m) {
    auto v = verifyDkim(m, lookup, cache, {std::time(nullptr), 5});
    return v.size() == 1 ? v[0].why : "verdicts: " + std::to_string(v.size());
  };
  EXPECT_EQ(verify(bigMessage(50000, 0, 0)), "the header holds over 1,000 fields");
  EXPECT_EQ(verify(bigMessage(10, 0, 5000)), "the field is over 16 KiB");
  EXPECT_EQ(verify(bigMessage(10, 300, 0)), "h= names over 256 fields");
  // Within every bound: checked as far as the signature (b=AAAA is none).
  EXPECT_EQ(verify(bigMessage(990, 250, 100)), "signature mismatch");
  // Signatures: the first five are checked; over fifty, none is.
  const std::string one = bigMessage(1, 0, 0);
  const std::string field = one.substr(0, one.find("\r\n") + 2);
  std::string forty_nine;
  for (int i = 0; i < 49; ++i) forty_nine += field;
  EXPECT_EQ(verify(forty_nine + one), "verdicts: 5");  // fifty
  EXPECT_EQ(verify(forty_nine + field + one), "the header holds over 50 DKIM-Signature fields");
}

}  // namespace
}  // namespace svc::plugins::email
