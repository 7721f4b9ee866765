// What a message's checks left for filing need (Authenticator::check, complete): its SPF
// outcome, when it arrived, and every DNS answer asked for the rest before its 250 (the DMARC
// policy, the DKIM keys). Filing completes the checks from these alone: it asks no DNS server
// anything, so no sender's zones can slow it, and a refile after a crash judges what the first
// filing would have.
#pragma once

#include "auth/authentication.h"
#include "auth/dns_resolver.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::email {

struct DeferredChecks {
  SpfOutcome spf;
  std::int64_t arrived = 0;  ///< Seconds since the epoch: t= and x= are judged at this time.
  std::vector<DnsResolver::Recorded> answers;

  /// @return the checks as one line of tokens separated by spaces, every string in base64url:
  /// no space or line end inside, whatever bytes a sender or a DNS record gave.
  std::string text() const;
  /// @return the checks text() wrote; nullopt when text is not such a line.
  static std::optional<DeferredChecks> parse(std::string_view text);
};

}  // namespace svc::plugins::email
