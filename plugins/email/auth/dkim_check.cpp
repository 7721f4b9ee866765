// DKIM through libopendkim, its key lookups handed to our resolver (dkim_set_key_lookup).
#include "auth/checks.h"

#include <Poco/String.h>

#include <arpa/nameser.h>
// dkim.h is C99: its _Bool is C++'s bool.
#define _Bool bool
#include <opendkim/dkim.h>
#undef _Bool

#include <cstring>
#include <set>

namespace svc::plugins::email {

namespace {

struct LookupContext {
  DnsResolver* dns;
  std::set<std::string> failed;  // selector._domainkey.domain names whose lookup failed
};

std::string keyName(DKIM_SIGINFO* sig) {
  const auto* s = dkim_sig_getselector(sig);
  const auto* d = dkim_sig_getdomain(sig);
  if (s == nullptr || d == nullptr) return "";
  return Poco::toLower(std::string(reinterpret_cast<const char*>(s)) + "._domainkey." +
                       reinterpret_cast<const char*>(d));
}

DKIM_CBSTAT keyLookup(DKIM* dkim, DKIM_SIGINFO* sig, u_char* buf, size_t buflen) {
  auto* ctx = static_cast<LookupContext*>(dkim_get_user_context(dkim));
  const std::string name = keyName(sig);
  if (ctx == nullptr || name.empty()) return DKIM_CBSTAT_ERROR;
  const DnsAnswer a = ctx->dns->query(name, ns_t_txt);
  if (a.status == DnsAnswer::Status::kFailed) {
    ctx->failed.insert(name);
    return DKIM_CBSTAT_TRYAGAIN;
  }
  if (a.status != DnsAnswer::Status::kOk || a.records.empty()) return DKIM_CBSTAT_NOTFOUND;
  const std::string& key = a.records.front();
  if (key.size() + 1 > buflen) return DKIM_CBSTAT_ERROR;
  std::memcpy(buf, key.c_str(), key.size() + 1);
  return DKIM_CBSTAT_CONTINUE;
}

// Each signature costs a DNS lookup and a key decode (most of a millisecond of CPU with
// OpenSSL 3): a message with hundreds of them would cost the server more than its sender. The
// first few are checked, the rest ignored (libopendkim then leaves them out of its list).
constexpr int kMaxSignatures = 5;

DKIM_CBSTAT prescreen(DKIM*, DKIM_SIGINFO** sigs, int count) {
  for (int i = kMaxSignatures; i < count; ++i) dkim_sig_ignore(sigs[i]);
  return DKIM_CBSTAT_CONTINUE;
}

DKIM_LIB* library() {
  static DKIM_LIB* lib = [] {
    DKIM_LIB* l = dkim_init(nullptr, nullptr);
    if (l != nullptr) {
      dkim_set_key_lookup(l, keyLookup);
      dkim_set_prescreen(l, prescreen);
    }
    return l;
  }();
  return lib;
}

std::string resultOf(DKIM_SIGINFO* sig, const LookupContext& ctx) {
  const unsigned flags = dkim_sig_getflags(sig);
  if ((flags & DKIM_SIGFLAG_PASSED) != 0 && dkim_sig_getbh(sig) == DKIM_SIGBH_MATCH) return "pass";
  if (ctx.failed.count(keyName(sig)) != 0) return "temperror";
  switch (dkim_sig_geterror(sig)) {
    case DKIM_SIGERROR_KEYFAIL:
      return "temperror";
    case DKIM_SIGERROR_BADSIG:
    case DKIM_SIGERROR_EXPIRED:
    case DKIM_SIGERROR_FUTURE:
    case DKIM_SIGERROR_KEYREVOKED:
      return "fail";
    case DKIM_SIGERROR_OK:
    case DKIM_SIGERROR_UNKNOWN:
      if ((flags & DKIM_SIGFLAG_PROCESSED) == 0) return "neutral";  // never got to it
      return dkim_sig_getbh(sig) == DKIM_SIGBH_MISMATCH ? "fail" : "neutral";
    default:
      return "permerror";  // a broken signature or key record (RFC 8601: permerror)
  }
}

// libopendkim parses every signature and sets up hashing for each before the prescreen can
// ignore any: a message of hundreds of thousands of DKIM-Signature fields would cost memory and
// time in proportion. Beyond this many, the message is not given to it at all.
constexpr std::size_t kMaxSignatureFields = 50;

// @return how many DKIM-Signature fields the header block holds (stopping past the cap).
std::size_t signatureFields(std::string_view data) {
  static constexpr std::string_view kName = "dkim-signature:";
  std::size_t count = 0;
  for (std::size_t at = 0; at < data.size() && count <= kMaxSignatureFields;) {
    const std::size_t end = data.find('\n', at);
    const std::string_view line = data.substr(at, end == std::string_view::npos ? end : end - at);
    if (line.empty() || line == "\r") break;  // the blank line: the body starts
    if (line.size() >= kName.size() &&
        Poco::icompare(std::string(line.substr(0, kName.size())), std::string(kName)) == 0) {
      ++count;
    }
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return count;
}

}  // namespace

std::vector<DkimOutcome> checkDkim(DnsResolver& dns, std::string_view data) {
  std::vector<DkimOutcome> out;
  if (signatureFields(data) > kMaxSignatureFields) {
    out.push_back({"permerror", "", ""});  // a message built to load the server, not to be read
    return out;
  }
  DKIM_LIB* lib = library();
  if (lib == nullptr) return out;
  DKIM_STAT status = DKIM_STAT_OK;
  DKIM* dkim = dkim_verify(lib, reinterpret_cast<const unsigned char*>("svc"), nullptr, &status);
  if (dkim == nullptr) return out;
  LookupContext ctx{&dns, {}};
  dkim_set_user_context(dkim, &ctx);
  // The message as one chunk, then its end; libopendkim finds headers and body itself.
  // (It only reads the buffer it is given, whatever its prototype says.)
  auto* bytes = reinterpret_cast<u_char*>(const_cast<char*>(data.data()));
  status = dkim_chunk(dkim, bytes, data.size());
  if (status == DKIM_STAT_OK) status = dkim_chunk(dkim, nullptr, 0);
  if (status == DKIM_STAT_OK) dkim_eom(dkim, nullptr);
  DKIM_SIGINFO** sigs = nullptr;
  int count = 0;
  if (dkim_getsiglist(dkim, &sigs, &count) == DKIM_STAT_OK) {
    for (int i = 0; i < count; ++i) {
      if ((dkim_sig_getflags(sigs[i]) & DKIM_SIGFLAG_IGNORE) != 0) continue;
      DkimOutcome o;
      const auto* d = dkim_sig_getdomain(sigs[i]);
      const auto* s = dkim_sig_getselector(sigs[i]);
      o.domain = d ? Poco::toLower(std::string(reinterpret_cast<const char*>(d))) : "";
      o.selector = s ? std::string(reinterpret_cast<const char*>(s)) : "";
      o.result = resultOf(sigs[i], ctx);
      out.push_back(std::move(o));
    }
  }
  dkim_free(dkim);
  return out;
}

}  // namespace svc::plugins::email
