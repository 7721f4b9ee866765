// DMARC through libopendmarc: we look the record up (our resolver) and hand it over
// (opendmarc_policy_store_dmarc), so the library does no DNS of its own.
#include "auth/checks.h"

#include "mime.h"

#include <Poco/String.h>

#include <arpa/nameser.h>
#include <opendmarc/dmarc.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>

extern "C" {
// Exported by libopendmarc (its organizational-domain lookup) but left out of dmarc.h.
int opendmarc_get_tld(u_char* domain, u_char* tld, size_t tld_len);
}

namespace svc::plugins::email {

namespace {

constexpr const char* kSuffixList = "/usr/share/publicsuffix/public_suffix_list.dat";

bool suffix_list_loaded = false;

void initLibrary() {
  static std::once_flag once;
  std::call_once(once, [] {
    OPENDMARC_LIB_T lib{};
    // Without the list, the organizational domain is the domain itself (relaxed alignment
    // degrades to strict); Debian's publicsuffix package ships it.
    if (FILE* f = std::fopen(kSuffixList, "r")) {
      std::fclose(f);
      lib.tld_type = OPENDMARC_TLD_TYPE_MOZILLA;
      std::strncpy(reinterpret_cast<char*>(lib.tld_source_file), kSuffixList,
                   sizeof lib.tld_source_file - 1);
      suffix_list_loaded = true;
    }
    opendmarc_policy_library_init(&lib);
  });
}

struct Lookup {
  bool failed = false;
  std::optional<std::string> record;
};

Lookup dmarcRecord(DnsResolver& dns, const std::string& domain) {
  Lookup out;
  const DnsAnswer a = dns.query("_dmarc." + domain, ns_t_txt);
  if (a.status == DnsAnswer::Status::kFailed) {
    out.failed = true;
    return out;
  }
  for (const auto& r : a.records) {
    const std::string head = Poco::toLower(r.substr(0, 8));
    if (head == "v=dmarc1" && (r.size() == 8 || r[8] == ';' || r[8] == ' ')) {
      if (out.record) return Lookup{};  // two records: as if none (RFC 7489 section 6.6.3)
      out.record = r;
    }
  }
  return out;
}

const char* policyName(int p) {
  switch (p) {
    case DMARC_RECORD_P_REJECT:
      return "reject";
    case DMARC_RECORD_P_QUARANTINE:
      return "quarantine";
    case DMARC_RECORD_P_NONE:
      return "none";
    default:
      return "";
  }
}

int spfOutcome(const std::string& result) {
  if (result == "pass") return DMARC_POLICY_SPF_OUTCOME_PASS;
  if (result == "fail" || result == "softfail") return DMARC_POLICY_SPF_OUTCOME_FAIL;
  if (result == "temperror") return DMARC_POLICY_SPF_OUTCOME_TMPFAIL;
  return DMARC_POLICY_SPF_OUTCOME_NONE;
}

int dkimOutcome(const std::string& result) {
  if (result == "pass") return DMARC_POLICY_DKIM_OUTCOME_PASS;
  if (result == "fail") return DMARC_POLICY_DKIM_OUTCOME_FAIL;
  if (result == "temperror") return DMARC_POLICY_DKIM_OUTCOME_TMPFAIL;
  return DMARC_POLICY_DKIM_OUTCOME_NONE;
}

u_char* bytes(const std::string& s) {
  return reinterpret_cast<u_char*>(const_cast<char*>(s.c_str()));
}

}  // namespace

std::optional<std::string> missingSuffixList() {
  initLibrary();
  if (suffix_list_loaded) return std::nullopt;
  return std::string(kSuffixList);
}

std::string organizationalDomain(const std::string& domain) {
  initLibrary();
  u_char buf[256] = {};
  std::string copy = domain;
  if (opendmarc_get_tld(bytes(copy), buf, sizeof buf) != 0 || buf[0] == '\0') return domain;
  return Poco::toLower(std::string(reinterpret_cast<char*>(buf)));
}

std::string fromDomain(std::string_view data) {
  // Read as the message's views read it (topHeaders), so the domain judged is the one shown.
  // RFC 7489 section 6.6.1: a message without exactly one From of exactly one mailbox has no
  // domain to judge, and nothing of it can pass (authorAddress says "").
  const std::string from = authorAddress(topHeaders(data));
  const std::size_t at = from.rfind('@');
  return at == std::string::npos ? "" : Poco::toLower(from.substr(at + 1));
}

namespace {

// The record that applies (RFC 7489 6.6.3): the From domain's, else its organizational domain's.
// @param org set to the organizational domain when its record was asked for.
Lookup policyRecord(DnsResolver& dns, const std::string& from_domain, std::string& org) {
  Lookup found = dmarcRecord(dns, from_domain);
  if (!found.failed && !found.record) {
    org = organizationalDomain(from_domain);
    if (org != from_domain) return dmarcRecord(dns, org);
    org.clear();
  }
  return found;
}

}  // namespace

namespace {

// Read by the library that judges it (libopendmarc reads "p=rej" as reject, say), once per
// record text: a busy sender's record is the same every time.
bool recordMayReject(const std::string& record) {
  static std::mutex mutex;
  static std::unordered_map<std::string, bool> known;
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(record); it != known.end()) return it->second;
  }
  bool may = true;  // a record the library cannot read: as if it could reject
  if (DMARC_POLICY_T* pctx = opendmarc_policy_connect_init(bytes("0.0.0.0"), 0)) {
    std::string copy = record;
    std::string domain = "dmarc.invalid";
    if (opendmarc_policy_store_dmarc(pctx, bytes(copy), bytes(domain), nullptr) ==
        DMARC_PARSE_OKAY) {
      int p = 0, sp = 0;
      opendmarc_policy_fetch_p(pctx, &p);
      opendmarc_policy_fetch_sp(pctx, &sp);
      may = p == DMARC_RECORD_P_REJECT || sp == DMARC_RECORD_P_REJECT;
    }
    opendmarc_policy_connect_shutdown(pctx);
  }
  // Bounded by entries and by their size (real records are a line; an attacker's domains could
  // each publish 64 KiB): at most 1,000 of 512 bytes.
  if (record.size() > 512) return may;
  std::lock_guard lock(mutex);
  if (known.size() >= 1000) known.clear();
  known.emplace(record, may);
  return may;
}

}  // namespace

bool dmarcMayReject(DnsResolver& dns, const std::string& from_domain) {
  if (from_domain.empty()) return false;  // no domain to judge: nothing can be refused for it
  initLibrary();
  std::string org;
  const Lookup found = policyRecord(dns, from_domain, org);
  if (found.failed) return true;
  return found.record && recordMayReject(*found.record);
}

DmarcOutcome checkDmarc(DnsResolver& dns, const std::string& from_domain, const SpfOutcome& spf,
                        const std::vector<DkimOutcome>& dkim) {
  initLibrary();
  DmarcOutcome out;
  out.from_domain = from_domain;
  if (from_domain.empty()) return out;
  std::string org;
  Lookup found = policyRecord(dns, from_domain, org);
  if (found.failed) {
    out.result = "temperror";
    return out;
  }
  // Without a record, a p=none stand-in still has the library work out alignment.
  const std::string record = found.record.value_or("v=DMARC1; p=none");
  DMARC_POLICY_T* pctx =
      opendmarc_policy_connect_init(bytes(spf.client_ip.empty() ? "0.0.0.0" : spf.client_ip),
                                    spf.client_ip.find(':') != std::string::npos);
  if (pctx == nullptr) {
    out.result = "temperror";
    return out;
  }
  std::string from = from_domain;
  opendmarc_policy_store_from_domain(pctx, bytes(from));
  if (opendmarc_policy_store_dmarc(pctx, bytes(record), bytes(from),
                                   org.empty() ? nullptr : bytes(org)) != DMARC_PARSE_OKAY) {
    opendmarc_policy_connect_shutdown(pctx);
    out.result = "permerror";  // a record that does not parse
    return out;
  }
  for (const auto& d : dkim) {
    if (d.domain.empty()) continue;
    opendmarc_policy_store_dkim(pctx, bytes(d.domain), bytes(d.selector), dkimOutcome(d.result),
                                nullptr);
  }
  if (!spf.domain.empty()) {
    opendmarc_policy_store_spf(
        pctx, bytes(spf.domain), spfOutcome(spf.result),
        spf.mail_from.empty() ? DMARC_POLICY_SPF_ORIGIN_HELO : DMARC_POLICY_SPF_ORIGIN_MAILFROM,
        nullptr);
  }
  const int decision = opendmarc_get_policy_to_enforce(pctx);
  int dkim_aligned = 0, spf_aligned = 0;
  opendmarc_policy_fetch_alignment(pctx, &dkim_aligned, &spf_aligned);
  out.dkim_aligned = dkim_aligned == DMARC_POLICY_DKIM_ALIGNMENT_PASS;
  out.spf_aligned = spf_aligned == DMARC_POLICY_SPF_ALIGNMENT_PASS;
  if (found.record) {
    int p = 0;
    if (opendmarc_get_policy_token_used(pctx) == DMARC_USED_POLICY_IS_SP) {
      opendmarc_policy_fetch_sp(pctx, &p);
    } else {
      opendmarc_policy_fetch_p(pctx, &p);
    }
    out.policy = policyName(p);
    // Only a DNS error about a domain aligned with From could have hidden a pass: an attacker's
    // own failing domain beside a forged From changes nothing.
    const std::string from_org = organizationalDomain(from_domain);
    const auto aligned = [&](const std::string& domain) {
      return !domain.empty() && organizationalDomain(Poco::toLower(domain)) == from_org;
    };
    bool transient = spf.result == "temperror" && aligned(spf.domain);
    for (const auto& d : dkim)
      transient = transient || (d.result == "temperror" && aligned(d.domain));
    if (decision == DMARC_POLICY_PASS) {
      out.result = "pass";
    } else {
      // A failure that a DNS error may have caused is not held against the sender.
      out.result = transient ? "temperror" : "fail";
    }
  }
  opendmarc_policy_connect_shutdown(pctx);
  return out;
}

}  // namespace svc::plugins::email
