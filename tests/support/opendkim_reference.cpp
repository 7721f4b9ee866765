// libopendkim with its key lookups handed to the caller's lookup (dkim_set_key_lookup). This is
// the checker the email plugin used before it verified DKIM itself, kept to compare against.
#include "opendkim_reference.h"

#include <Poco/String.h>

#include <arpa/nameser.h>
// dkim.h is C99: its _Bool is C++'s bool.
#define _Bool bool
#include <opendkim/dkim.h>
#undef _Bool

#include <cstring>
#include <set>

namespace svc::testing {

using plugins::email::DkimKeyAnswer;
using plugins::email::DkimKeyLookup;
using plugins::email::DkimVerdict;

namespace {

struct LookupContext {
  const DkimKeyLookup* lookup;
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
  const DkimKeyAnswer a = (*ctx->lookup)(name);
  if (a.status == DkimKeyAnswer::Status::kFailed) {
    ctx->failed.insert(name);
    return DKIM_CBSTAT_TRYAGAIN;
  }
  if (a.status != DkimKeyAnswer::Status::kOk) return DKIM_CBSTAT_NOTFOUND;
  if (a.record.size() + 1 > buflen) return DKIM_CBSTAT_ERROR;
  std::memcpy(buf, a.record.c_str(), a.record.size() + 1);
  return DKIM_CBSTAT_CONTINUE;
}

// The plugin checked the first 5 signatures; libopendkim then leaves the rest out of its list.
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

}  // namespace

std::vector<DkimVerdict> opendkimVerify(const DkimKeyLookup& lookup, std::string_view data) {
  std::vector<DkimVerdict> out;
  DKIM_LIB* lib = library();
  if (lib == nullptr) return out;
  DKIM_STAT status = DKIM_STAT_OK;
  DKIM* dkim = dkim_verify(lib, reinterpret_cast<const unsigned char*>("svc"), nullptr, &status);
  if (dkim == nullptr) return out;
  LookupContext ctx{&lookup, {}};
  dkim_set_user_context(dkim, &ctx);
  // The message as one chunk, then its end; libopendkim finds headers and body itself.
  // (It only reads the buffer it is given, whatever its prototype says.)
  auto* bytes = reinterpret_cast<u_char*>(const_cast<char*>(data.data()));
  status = dkim_chunk(dkim, bytes, data.size());
  if (status == DKIM_STAT_OK) status = dkim_chunk(dkim, nullptr, 0);
  // A header libopendkim cannot parse (dkim_header's rules) ends its reading there: nothing is
  // verified, and every signature stays unprocessed.
  const std::string refused =
      status == DKIM_STAT_OK
          ? ""
          : std::string("refused the message: ") + (dkim_geterror(dkim) ? dkim_geterror(dkim) : "");
  std::string eom_error;
  if (status == DKIM_STAT_OK) {
    const DKIM_STAT eom = dkim_eom(dkim, nullptr);
    if (eom != DKIM_STAT_OK && eom != DKIM_STAT_BADSIG && eom != DKIM_STAT_NOSIG) {
      eom_error = std::string("dkim_eom: ") + (dkim_geterror(dkim) ? dkim_geterror(dkim) : "?");
    }
  }
  DKIM_SIGINFO** sigs = nullptr;
  int count = 0;
  if (dkim_getsiglist(dkim, &sigs, &count) == DKIM_STAT_OK) {
    for (int i = 0; i < count; ++i) {
      if ((dkim_sig_getflags(sigs[i]) & DKIM_SIGFLAG_IGNORE) != 0) continue;
      DkimVerdict o;
      const auto* d = dkim_sig_getdomain(sigs[i]);
      const auto* s = dkim_sig_getselector(sigs[i]);
      o.domain = d ? Poco::toLower(std::string(reinterpret_cast<const char*>(d))) : "";
      o.selector = s ? std::string(reinterpret_cast<const char*>(s)) : "";
      o.result = resultOf(sigs[i], ctx);
      if (!refused.empty()) {
        o.why = refused;
      } else if (o.result != "pass") {
        const char* e = dkim_sig_geterrorstr(dkim_sig_geterror(sigs[i]));
        o.why = eom_error + std::string(e ? e : "") +
                (dkim_sig_getbh(sigs[i]) == DKIM_SIGBH_MISMATCH ? " (body hash mismatch)" : "");
      }
      out.push_back(std::move(o));
    }
  }
  dkim_free(dkim);
  return out;
}

}  // namespace svc::testing
