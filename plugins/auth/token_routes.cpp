#include "token_routes.h"

#include "auth_http.h"

#include <svc/sdk/util.h>

#include <optional>

namespace svc::plugins::auth {

using sdk::sha256Hex;

std::string newRefreshToken() {
  return "svc_rt_" + sdk::randomToken(32);
}

void TokenRoutes::registerRoutes(sdk::RouteRegistry& routes) {
  using sdk::AuthNeed;
  using sdk::BodyKind;
  routes.add({"POST", "/api/auth/token/refresh/", AuthNeed::kNone, BodyKind::kJson, 0,
              "Exchange a refresh token for new tokens.",
              [this](sdk::Request& r) { return refresh(r); }});
  routes.add({"POST", "/api/auth/logout/", AuthNeed::kNone, BodyKind::kJson, 0,
              "Revoke a refresh token's family.", [this](sdk::Request& r) { return logout(r); }});
  routes.add({"GET", "/api/auth/jwks/", AuthNeed::kNone, BodyKind::kJson, 0,
              "Public keys of access tokens.",
              [this](sdk::Request&) { return sdk::Response::json(200, jwt_.jwks()); }});
}

// Rotation: each refresh token works once; presenting a retired one revokes its whole family.
sdk::Response TokenRoutes::refresh(sdk::Request& r) {
  std::string presented = boundedField(r, "refresh", 200, true);
  std::optional<sdk::HttpError> error;
  std::string user_id, account_id, next;
  db_.transaction([&](Poco::Data::Session& s) {
    auto t = store_.refreshByHash(s, sha256Hex(presented));
    const std::int64_t now = sdk::nowMicros();
    if (!t || t->revoked_us || t->expires_us <= now) {
      error = sdk::HttpError(401, "authentication_failed", "The refresh token is not valid.");
      return;
    }
    if (t->retired_us || !store_.retire(s, t->id)) {
      store_.revokeFamily(s, t->family_id);
      error = sdk::HttpError(401, "authentication_failed",
                             "The refresh token was already used; its session is revoked.");
      return;
    }
    user_id = t->user_id;
    account_id = t->account_id;
    next = newRefreshToken();
    store_.addRefresh(s, t->family_id, user_id, account_id, sha256Hex(next),
                      now + kRefreshLifetimeUs);
  });
  if (error) throw *error;
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("access", jwt_.issue(user_id, account_id, kAccessLifetimeSeconds));
  body->set("refresh", next);
  return noStore(200, body);
}

sdk::Response TokenRoutes::logout(sdk::Request& r) {
  std::string presented = boundedField(r, "refresh", 200, true);
  bool found = false;
  db_.transaction([&](Poco::Data::Session& s) {
    auto t = store_.refreshByHash(s, sha256Hex(presented));
    if (!t) return;
    found = true;
    store_.revokeFamily(s, t->family_id);
  });
  if (!found) {
    throw sdk::HttpError(401, "authentication_failed", "The refresh token is not valid.");
  }
  return sdk::Response::noContent();
}

}  // namespace svc::plugins::auth
