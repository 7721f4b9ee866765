// DKIM verification (RFC 6376) of an inbound message's signatures, with RFC 8301's rules
// (rsa-sha256 only among RSA hashes, keys of at least 1024 bits) and RFC 8463's ed25519-sha256.
// It verifies what libopendkim verifies (tests/unit/plugins/email/auth/dkim_differential_test.cpp
// compares the two on a corpus, tests/fuzz/dkim_verify_fuzz.cpp on arbitrary messages), but
// keeps each decoded key (DkimKeyCache), so a signer seen before costs one signature check.
#pragma once

#include "auth/dkim_key.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::email {

struct DkimKeyAnswer {
  enum class Status { kOk, kNotFound, kFailed };  ///< kFailed: DNS failed (temperror).
  Status status = Status::kFailed;
  std::string record;  ///< The TXT record, when kOk.
};
/// Looks up `<selector>._domainkey.<domain>` (lower-case).
using DkimKeyLookup = std::function<DkimKeyAnswer(const std::string& name)>;

struct DkimVerdict {
  /// RFC 8601: pass, fail, neutral, temperror, permerror.
  std::string result;
  std::string domain;    ///< d=, lower-case ("" when the field has none).
  std::string selector;  ///< s= as written.
  std::string why;       ///< What decided a result other than pass, for tests and logs.
};

struct DkimVerifyOptions {
  std::int64_t now = 0;            ///< Seconds since the epoch, for t= and x=.
  std::size_t max_signatures = 5;  ///< Fields past this many are not checked (nor listed).
  /// A message with more DKIM-Signature fields than this was built to load the server, not to be
  /// read: one permerror, nothing checked.
  std::size_t max_signature_fields = 50;
};

/// @param message the message, CRLF line ends (a bare LF is an ordinary byte, as for
/// libopendkim). @return one verdict for each of the first max_signatures DKIM-Signature fields,
/// top first. Never throws for what a sender wrote.
std::vector<DkimVerdict> verifyDkim(std::string_view message, const DkimKeyLookup& lookup,
                                    DkimKeyCache& keys, const DkimVerifyOptions& options);

/// @return the key records (`<selector>._domainkey.<domain>`, lower-case) verifyDkim may look up
/// for the message, top first: those of the signatures it would check that name a key, whatever
/// else they hold. So they can be in a cache before verifyDkim runs.
std::vector<std::string> dkimKeyNames(std::string_view message, const DkimVerifyOptions& options);

}  // namespace svc::plugins::email
