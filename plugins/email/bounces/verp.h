// The envelope sender of relayed mail (VERP): `bounces+<token>@<the sender's domain>`, where the
// token is 128 random bits, in lower-case hex, stored with the message it was made for. A bounce
// sent back to that address names its message without being read; the token cannot be guessed,
// so only those who received the message (who see it as the Return-Path) can write to it. Hex,
// because SMTP servers (ours included) may lower-case a local part. No inbox can have this
// address: `+` is outside the inbox local-part rule.
#pragma once

#include <optional>
#include <string>

namespace svc::plugins::email {

/// @return a new token: 32 lower-case hex digits from OpenSSL's random generator.
std::string newBounceToken();
/// @param token a token. @param domain the sending inbox's domain. @return the VERP address.
std::string verpAddress(const std::string& token, const std::string& domain);
/// @param address a recipient (any case). @return its token when it has the VERP form.
std::optional<std::string> verpToken(const std::string& address);

}  // namespace svc::plugins::email
