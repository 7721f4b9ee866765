// The envelope sender of relayed mail (VERP): `bounces+<token>@<the sender's domain>`, where the
// token is 128 random bits, in lower-case hex, stored with the message it was made for. A bounce
// sent back to that address names its message without being read; the token cannot be guessed,
// so only those who received the message (who see it as the Return-Path) can write to it. Hex,
// because SMTP servers (ours included) may lower-case a local part. No inbox can have this
// address: `+` is outside the inbox local-part rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace svc::plugins::email {

/// How long a token is honoured: reports come within days (a relay gives up after five at
/// most); later mail to the address is ordinary mail, and the token rows are pruned.
constexpr std::int64_t kTokenLifetimeUs = 30LL * 86400 * 1000000;

/// @return a new token: 32 lower-case hex digits from OpenSSL's random generator.
std::string newBounceToken();
/// @param token a token. @param domain the sending inbox's domain. @return the VERP address.
std::string verpAddress(const std::string& token, const std::string& domain);
/// @param token a token. @param sender the sending inbox's address. @return the VERP address on
/// its domain, or the sender itself when that would be longer than an address may be (254
/// octets, RFC 5321 section 4.5.3.1.3: domains over about 213 characters): reports then come to
/// the sender's own address, which still finds the message by its Message-ID.
std::string envelopeAddress(const std::string& token, const std::string& sender);
/// @param address a recipient (any case). @return its token when it has the VERP form.
std::optional<std::string> verpToken(const std::string& address);

}  // namespace svc::plugins::email
