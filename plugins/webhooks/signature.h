// Standard Webhooks signatures (https://www.standardwebhooks.com): a delivery carries
// `webhook-id` (the event's id), `webhook-timestamp` (seconds since the epoch, when it was sent)
// and `webhook-signature`: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed with the
// secret's decoded bytes. Several signatures, space-separated, let a receiver verify with either
// of two secrets while one replaces the other (rotation).
//
// A secret is `whsec_` and the base64 of 32 random bytes, shown to the client once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::webhooks {

inline constexpr std::string_view kSecretPrefix = "whsec_";

/// @return a new secret: `whsec_` and the base64 of 32 bytes from OpenSSL's DRBG.
std::string newSecret();
/// @param secret a `whsec_...` secret (the prefix may be absent, as Standard Webhooks allows).
/// @return its key bytes, or nullopt when it is not base64 of at least 24 bytes.
std::optional<std::string> secretKey(const std::string& secret);
/// @param key a secret's key bytes. @param id the message id. @param timestamp seconds since the
/// epoch. @param body the exact bytes sent. @return `v1,<base64 signature>`.
std::string sign(std::string_view key, std::string_view id, std::int64_t timestamp,
                 std::string_view body);
/// @param secrets the secrets to sign with (the current first, then one being replaced).
/// @return the `webhook-signature` header: one `v1,...` per secret, space-separated.
std::string signatureHeader(const std::vector<std::string>& secrets, std::string_view id,
                            std::int64_t timestamp, std::string_view body);

}  // namespace svc::plugins::webhooks
