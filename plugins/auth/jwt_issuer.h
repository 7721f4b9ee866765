// Access tokens: RS256 JWTs signed with a key svcd creates on first start and keeps in the
// database (so every svcd process on one database signs and verifies alike).
#pragma once

#include <svc/sdk/storage.h>

#include <Poco/Crypto/RSAKey.h>
#include <Poco/JSON/Object.h>
#include <Poco/SharedPtr.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace svc::plugins::auth {

/// How long an access token lives.
inline constexpr int kAccessLifetimeSeconds = 3600;

struct AccessClaims {
  std::string user_id;
  std::string account_id;
  std::string jti;
  std::string family;  ///< `sid`: the refresh-token family (the sign-in) it was issued for
  std::int64_t expires_us = 0;
};

/// @return whether `jwt` is a JWS in compact form written canonically: three base64url parts,
/// unpadded, each the one encoding of its bytes (so no two spellings of a token both pass).
bool isCanonicalCompactJws(std::string_view jwt);

class JwtIssuer {
 public:
  /// @param issuer the `iss` claim. The signing key is loaded (or created, which takes a moment,
  /// so not at start-up) on first use.
  JwtIssuer(sdk::Database& db, std::string issuer);
  /// @param family the refresh-token family, as `sid`: revoking it ends the token's access.
  /// @return a signed access token valid for lifetime_seconds.
  std::string issue(const std::string& user_id, const std::string& account_id,
                    const std::string& family, int lifetime_seconds) const;
  /// Verifies the form (exactly three canonical base64url parts), signature (RS256 only: `none`
  /// and HMAC are refused), issuer and expiry.
  /// @return the claims, or nullopt when the token is not ours; expired tokens set `expired`.
  std::optional<AccessClaims> verify(const std::string& jwt, bool& expired) const;
  /// @return the JWKS document.
  Poco::JSON::Object::Ptr jwks() const;

 private:
  /// @return the signing key, loading or creating it once.
  const Poco::SharedPtr<Poco::Crypto::RSAKey>& key() const;

  sdk::Database& db_;
  std::string issuer_;
  mutable std::once_flag loaded_;
  mutable std::string kid_;
  mutable Poco::SharedPtr<Poco::Crypto::RSAKey> key_;
};

}  // namespace svc::plugins::auth
