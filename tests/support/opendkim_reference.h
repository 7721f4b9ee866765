// libopendkim's verdicts on a message's DKIM signatures, mapped to RFC 8601 names as the email
// plugin mapped them while it used libopendkim: the reference our own verifier (auth/dkim_verify)
// is compared with, in the unit tests, the fuzzer and the microbenchmark. Test code only: the
// plugin no longer links libopendkim.
#pragma once

#include "auth/dkim_verify.h"

#include <string_view>
#include <vector>

namespace svc::testing {

/// @param lookup answers `<selector>._domainkey.<domain>`. @return one verdict per signature
/// libopendkim lists (it leaves out fields it cannot parse, and those past the first 5), with
/// domain and selector; `why` is libopendkim's error, and starts with "refused the message"
/// when it could not read the header at all.
std::vector<plugins::email::DkimVerdict> opendkimVerify(const plugins::email::DkimKeyLookup& lookup,
                                                        std::string_view message);

}  // namespace svc::testing
