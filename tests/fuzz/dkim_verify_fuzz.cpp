// Fuzzes our DKIM verifier (auth/dkim_verify) against libopendkim, with one fixed key that the
// resolver answers for every selector.
//
// Input: byte 0 picks what the rest is. Below 128 it is a message as it arrives: ours must not
// crash, and where both list the same signatures, they must agree on pass or not. From 128 on
// it is a message the fuzzer signs itself (canonicalizations, l=, folding and over-signed names
// chosen by the next bytes) and then alters a little, or not; again both must agree on pass.
// Known differences are not findings (tests/unit/plugins/email/auth/dkim_differential_test.cpp
// pins each): a message not ending in CRLF (libopendkim verifies none), a bare CR or LF
// (libopendkim's body canonicalizations mishandle them), NUL, FF, VT,
// characters outside base64 in b= and bh= (libopendkim skips them), header fields libopendkim
// refuses to read (then it verifies nothing), and
// messages where the two list different signatures (libopendkim stops at a field it cannot
// parse).
#include "auth/dkim_verify.h"
#include "dkim_test_signer.h"
#include "fuzz_check.h"
#include "opendkim_reference.h"

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <svc/sdk/util.h>

#include <cstdio>
#include <ctime>
#include <set>
#include <string>

using namespace svc::plugins::email;

namespace {

EVP_PKEY* key() {
  static EVP_PKEY* k = EVP_RSA_gen(1024);  // small: signing runs for every input
  FUZZ_CHECK(k != nullptr, "generating the key");
  return k;
}

const DkimKeyLookup& lookup() {
  static const DkimKeyLookup l = [](const std::string&) {
    static const std::string record = testing::keyRecord(key());
    return DkimKeyAnswer{DkimKeyAnswer::Status::kOk, record};
  };
  return l;
}

DkimKeyCache& cache() {
  static DkimKeyCache c;
  return c;
}

// Bytes libopendkim reads differently (see the file's comment): a bare CR or LF, NUL (it keeps
// header fields as C strings, so a NUL ends one early), FF and VT (whitespace to its relaxed
// header canonicalization, which takes isspace() for RFC 6376's WSP).
bool readDifferently(const std::string& m) {
  // Mail over SMTP always ends with CRLF; libopendkim verifies nothing of a message that does not.
  if (m.size() < 2 || m.compare(m.size() - 2, 2, "\r\n") != 0) return true;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i] == '\0' || m[i] == '\f' || m[i] == '\v') return true;
    if (m[i] == '\r' && (i + 1 >= m.size() || m[i + 1] != '\n')) return true;
    if (m[i] == '\n' && (i == 0 || m[i - 1] != '\r')) return true;
  }
  return false;
}

// Every byte readable: \r, \n (and a line break after it), \xNN for the rest.
std::string escaped(const std::string& m) {
  std::string out;
  for (unsigned char c : m) {
    char hex[8];
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n\n";
    } else if (c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
    } else {
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

void compare(const std::string& message) {
  DkimVerifyOptions options;
  options.now = static_cast<std::int64_t>(std::time(nullptr));
  const auto ours = verifyDkim(message, lookup(), cache(), options);
  for (const auto& v : ours) {
    FUZZ_CHECK(v.result == "pass" || v.result == "fail" || v.result == "neutral" ||
                   v.result == "temperror" || v.result == "permerror",
               "a verdict that is no RFC 8601 DKIM result");
    FUZZ_CHECK(v.result != "pass" || (!v.domain.empty() && v.why.empty()),
               "a pass without its domain, or with a reason against it");
  }
  if (readDifferently(message)) return;
  const auto theirs = svc::testing::opendkimVerify(lookup(), message);
  if (ours.size() != theirs.size()) return;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    // libopendkim's base64 decoder skips what is not base64; RFC 6376 allows only FWS.
    if (ours[i].why == "b= or bh= is not base64") continue;
    // A header field it cannot parse makes libopendkim verify nothing.
    if (theirs[i].why.rfind("refused the message", 0) == 0) continue;
    // Where ours refuses on purpose what libopendkim passes (dkim_differential_test pins each):
    // l= leaving part of the body unsigned, and what no signer writes (names no resolver asks,
    // over 16 KiB, over 256 names, keys over 4096 bits, bh= that is no SHA-256, a header of
    // more fields than the views read, or of over fifty signatures).
    static const std::set<std::string> kOnPurpose = {"l= leaves part of the body unsigned",
                                                     "d= or s= is no DNS name",
                                                     "the field is over 16 KiB",
                                                     "h= names over 256 fields",
                                                     "RSA key over 4096 bits",
                                                     "bh= is no SHA-256 hash",
                                                     "the header holds over 1,000 fields",
                                                     "the header holds over 50 DKIM-Signature "
                                                     "fields"};
    if (kOnPurpose.count(ours[i].why) != 0) continue;
    if ((ours[i].result == "pass") != (theirs[i].result == "pass")) {
      std::fprintf(stderr, "signature %zu: ours %s (%s), libopendkim %s (%s)\n", i,
                   ours[i].result.c_str(), ours[i].why.c_str(), theirs[i].result.c_str(),
                   theirs[i].why.c_str());
      std::fprintf(stderr, "the message:\n%s\n", escaped(message).c_str());
      FUZZ_CHECK(false, "ours and libopendkim disagree on pass");
    }
  }
}

// @return the header's field names, joined by ':' ("" when the head is not plain fields the
// test signer can read).
std::string fieldNames(const std::string& head) {
  std::string names;
  for (std::size_t pos = 0; pos < head.size();) {
    const std::size_t eol = head.find("\r\n", pos);
    const std::string line = head.substr(pos, eol - pos);
    pos = eol + 2;
    if (line.empty()) return "";
    if (line[0] == ' ' || line[0] == '\t') {
      if (names.empty()) return "";
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0) return "";
    for (std::size_t i = 0; i < colon; ++i) {
      const auto c = static_cast<unsigned char>(line[i]);
      if (c <= 0x20 || c >= 0x7f || c == ';' || c == '=') return "";
    }
    names += (names.empty() ? "" : ":") + line.substr(0, colon);
  }
  return names;
}

void signAndCompare(svc::fuzz::Rng& rng, const std::string& message) {
  const std::size_t split = message.find("\r\n\r\n");
  if (split == std::string::npos || readDifferently(message)) return;
  std::string names = fieldNames(message.substr(0, split + 2));
  if (names.empty()) return;
  static const char* kCanons[] = {"simple/simple",   "simple/relaxed", "relaxed/simple",
                                  "relaxed/relaxed", "simple",         "relaxed"};
  testing::TestSignature sig;
  sig.key = key();
  sig.c = kCanons[rng.range(0, 5)];
  sig.h = names + ":from" + (rng.range(0, 1) ? ":reply-to:reply-to" : "");
  if (rng.range(0, 3) == 0) sig.l = rng.range(0, message.size() - split);
  if (rng.range(0, 1)) sig.separator = "\r\n\t";
  std::string m = testing::signForTest(message, sig);
  // Then, or not, a small change somewhere: what a forwarder or an attacker might do.
  static const char kBytes[] = " \t:;=aA\r\n";
  const std::size_t at = rng.range(0, m.size() - 1);
  switch (rng.range(0, 4)) {
    case 0:
      m.insert(at, 1, kBytes[rng.range(0, sizeof kBytes - 2)]);
      break;
    case 1:
      m.erase(at, 1);
      break;
    case 2:
      m.insert(at, "\r\n");
      break;
    default:
      break;
  }
  compare(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  const std::string in(reinterpret_cast<const char*>(data + 5), size - 5);
  if (data[0] < 128) {
    compare(in);
  } else {
    svc::fuzz::Rng rng(static_cast<std::uint32_t>(data[1]) | data[2] << 8 | data[3] << 16 |
                       static_cast<std::uint32_t>(data[4]) << 24);
    signAndCompare(rng, in);
  }
  return 0;
}
