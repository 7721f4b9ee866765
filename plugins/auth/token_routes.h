// Access and refresh tokens: refreshing (with rotation), logging out, and the JWKS by which
// others verify access tokens.
#pragma once

#include "auth_store.h"
#include "jwt_issuer.h"

#include <svc/sdk/routes.h>

#include <cstdint>
#include <string>

namespace svc::plugins::auth {

/// How long an access token lives.
inline constexpr int kAccessLifetimeSeconds = 3600;
/// How long a refresh token lives.
inline constexpr std::int64_t kRefreshLifetimeUs = 90LL * 24 * 3600 * 1000000;

/// @return a new refresh token (`svc_rt_` and 32 random bytes).
std::string newRefreshToken();

class TokenRoutes {
 public:
  TokenRoutes(sdk::Database& db, AuthStore& store, JwtIssuer& jwt)
      : db_(db), store_(store), jwt_(jwt) {}
  /// Registers refresh, logout and the JWKS.
  void registerRoutes(sdk::RouteRegistry& routes);

 private:
  sdk::Response refresh(sdk::Request& r);
  sdk::Response logout(sdk::Request& r);

  sdk::Database& db_;
  AuthStore& store_;
  JwtIssuer& jwt_;
};

}  // namespace svc::plugins::auth
