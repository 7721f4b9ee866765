// DKIM through our own verifier (auth/dkim_verify), its key lookups through our resolver, its
// decoded keys in one cache for every SMTP session.
#include "auth/checks.h"
#include "auth/dkim_verify.h"

#include <arpa/nameser.h>

#include <ctime>

namespace svc::plugins::email {

namespace {

// Each signature costs a DNS lookup and a signature check: a message with hundreds of them would
// cost the server more than its sender. The first few are checked, the rest ignored.
constexpr std::size_t kMaxSignatures = 5;

DkimKeyCache& keyCache() {
  static DkimKeyCache cache(1000);
  return cache;
}

}  // namespace

std::vector<DkimOutcome> checkDkim(DnsResolver& dns, std::string_view data) {
  std::vector<DkimOutcome> out;
  const DkimKeyLookup lookup = [&dns](const std::string& name) {
    const DnsAnswer a = dns.query(name, ns_t_txt);
    if (a.status == DnsAnswer::Status::kFailed) return DkimKeyAnswer{};
    if (a.status != DnsAnswer::Status::kOk || a.records.empty()) {
      return DkimKeyAnswer{DkimKeyAnswer::Status::kNotFound, ""};
    }
    return DkimKeyAnswer{DkimKeyAnswer::Status::kOk, a.records.front()};
  };
  DkimVerifyOptions options;
  options.now = static_cast<std::int64_t>(std::time(nullptr));
  options.max_signatures = kMaxSignatures;
  for (auto& v : verifyDkim(data, lookup, keyCache(), options)) {
    out.push_back({std::move(v.result), std::move(v.domain), std::move(v.selector)});
  }
  return out;
}

}  // namespace svc::plugins::email
