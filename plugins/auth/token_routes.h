// Access and refresh tokens: refreshing (with rotation), logging out, and the JWKS by which
// others verify access tokens.
#pragma once

#include "auth_store.h"
#include "jwt_issuer.h"
#include "revocations.h"

#include <svc/sdk/routes.h>

#include <cstdint>
#include <functional>
#include <string>

namespace svc::plugins::auth {

/// How long a refresh token lives.
inline constexpr std::int64_t kRefreshLifetimeUs = 90LL * 24 * 3600 * 1000000;

/// @return a new refresh token (`svc_rt_` and 32 random bytes).
std::string newRefreshToken();

class TokenRoutes {
 public:
  /// @param revoker ends what a revoked family holds open. @param families its access tokens.
  TokenRoutes(sdk::Database& db, AuthStore& store, JwtIssuer& jwt, Revoker& revoker,
              RevokedFamilies& families)
      : db_(db), store_(store), jwt_(jwt), revoker_(revoker), families_(families) {}
  /// Registers refresh, logout and the JWKS.
  void registerRoutes(sdk::RouteRegistry& routes);

 private:
  sdk::Response refresh(sdk::Request& r);
  sdk::Response logout(sdk::Request& r);
  /// Revokes a family in the transaction s: its refresh tokens, access tokens and held requests.
  /// @return a function to call once the transaction has committed.
  std::function<void()> revokeFamily(Poco::Data::Session& s, const AuthStore::Refresh& token,
                                     const std::string& why);

  sdk::Database& db_;
  AuthStore& store_;
  JwtIssuer& jwt_;
  Revoker& revoker_;
  RevokedFamilies& families_;
};

}  // namespace svc::plugins::auth
