// One DNS answer as the inbound checks use it (see dns_resolver.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace svc::plugins::email {

struct DnsAnswer {
  /// kFailed stays last: a spooled record of deferred checks reads a status as a number up to
  /// it (deferred_checks.cpp).
  enum class Status { kOk, kNotFound, kNoData, kFailed };
  Status status = Status::kFailed;
  /// TXT: each record's strings joined; A and AAAA: the 4 or 16 address bytes; MX, PTR: names.
  std::vector<std::string> records;
  std::uint32_t ttl = 0;    ///< Seconds (the smallest of the records').
  bool unanswered = false;  ///< kFailed because the server said nothing within the time.
};

}  // namespace svc::plugins::email
