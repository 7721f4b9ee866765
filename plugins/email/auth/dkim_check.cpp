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

DkimVerifyOptions verifyOptions(std::int64_t now) {
  DkimVerifyOptions options;
  options.now = now != 0 ? now : static_cast<std::int64_t>(std::time(nullptr));
  options.max_signatures = kMaxSignatures;
  return options;
}

}  // namespace

void prefetchDkimKeys(DnsResolver& dns, std::string_view data) {
  for (const auto& name : dkimKeyNames(data, verifyOptions(0))) dns.query(name, ns_t_txt);
}

std::vector<DkimOutcome> checkDkim(DnsResolver& dns, std::string_view data, std::int64_t now) {
  std::vector<DkimOutcome> out;
  const DkimKeyLookup lookup = [&dns](const std::string& name) {
    const DnsAnswer a = dns.query(name, ns_t_txt);
    if (a.status == DnsAnswer::Status::kFailed) return DkimKeyAnswer{};
    if (a.status != DnsAnswer::Status::kOk || a.records.empty()) {
      return DkimKeyAnswer{DkimKeyAnswer::Status::kNotFound, ""};
    }
    return DkimKeyAnswer{DkimKeyAnswer::Status::kOk, a.records.front()};
  };
  for (auto& v : verifyDkim(data, lookup, keyCache(), verifyOptions(now))) {
    out.push_back({std::move(v.result), std::move(v.domain), std::move(v.selector)});
  }
  return out;
}

}  // namespace svc::plugins::email
