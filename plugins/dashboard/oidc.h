// A relying party for OpenID Connect sign-in: discovery, the authorization code flow with PKCE,
// and ID tokens verified against the provider's published keys (OpenID Connect Core 1.0 §3.1).
#pragma once

#include <openssl/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

namespace svc::plugins::dashboard {

/// A sign-in the provider refused or we could not verify; what() is safe to show the person.
class OidcError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a verified ID token says about the person.
struct OidcClaims {
  std::string subject, email, name;
  bool email_verified = false;
};

class OidcClient {
 public:
  /// @param issuer the provider's issuer URL. @param client_id, client_secret our registration
  /// (an empty secret makes us a public client). @param redirect_uri our callback.
  OidcClient(std::string issuer, std::string client_id, std::string client_secret,
             std::string redirect_uri);

  const std::string& issuer() const { return issuer_; }

  /// @return the URL to send the browser to. @param state, nonce, code_challenge (S256) fresh
  /// values the caller keeps for the callback.
  std::string authorizationUrl(const std::string& state, const std::string& nonce,
                               const std::string& code_challenge);
  /// Exchanges an authorization code and verifies the ID token it brings (signature against the
  /// provider's JWKS, RS256 only; iss, aud, azp, exp, iat, nonce).
  /// @throws OidcError when anything does not check out.
  OidcClaims finish(const std::string& code, const std::string& code_verifier,
                    const std::string& nonce);
  /// Verifies an ID token (public for tests). @throws OidcError.
  OidcClaims verifyIdToken(const std::string& id_token, const std::string& nonce);

  /// @return the S256 code challenge of a PKCE verifier (RFC 7636 §4.2).
  static std::string codeChallenge(const std::string& verifier);

 private:
  struct Discovery {
    std::string authorization_endpoint, token_endpoint, jwks_uri, userinfo_endpoint;
    std::int64_t fetched_us = 0;
  };
  Discovery discovery();
  /// @return the provider's key with this kid, fetching the JWKS again (at most once a minute)
  /// when it is not known; null when there is none.
  std::shared_ptr<EVP_PKEY> key(const std::string& kid);

  std::string issuer_, client_id_, client_secret_, redirect_uri_;
  std::mutex mutex_;
  std::optional<Discovery> discovery_;
  std::map<std::string, std::shared_ptr<EVP_PKEY>> keys_;  // by kid
  std::int64_t keys_fetched_us_ = 0;
};

/// HTTP(S) GET or POST to an absolute URL, with a timeout; @return (status, body).
/// @throws OidcError when the provider cannot be reached.
std::pair<int, std::string> httpExchange(const std::string& method, const std::string& url,
                                         const std::string& body = "",
                                         const std::string& content_type = "",
                                         const std::string& authorization = "");

}  // namespace svc::plugins::dashboard
