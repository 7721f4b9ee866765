#include "token_routes.h"

#include "auth_http.h"
#include "auth_shapes.h"

#include <svc/sdk/util.h>

#include <optional>

namespace svc::plugins::auth {

using sdk::sha256Hex;

std::string newRefreshToken() {
  return "svc_rt_" + sdk::randomToken(32);
}

void TokenRoutes::registerRoutes(sdk::RouteRegistry& routes) {
  const std::vector<sdk::Param> none;  // takes no query parameter: the kernel refuses any
  using sdk::AuthNeed;
  using sdk::BodyKind;
  using sdk::Schema;
  const sdk::RouteError refused{401, "authentication_failed",
                                "the refresh token is unknown, expired, revoked or already used "
                                "(then its whole session is revoked)"};
  routes.add({"POST",
              "/api/auth/token/refresh/",
              AuthNeed::kNone,
              BodyKind::kJson,
              0,
              "Exchange a refresh token for new tokens.",
              [this](sdk::Request& r) { return refresh(r); },
              refreshInputSchema(),
              none,
              {{200, tokenPairSchema()}},
              {refused}});
  routes.add({"POST",
              "/api/auth/logout/",
              AuthNeed::kNone,
              BodyKind::kJson,
              0,
              "Revoke a refresh token's family.",
              [this](sdk::Request& r) { return logout(r); },
              refreshInputSchema(),
              none,
              {{204, Schema::any()}},
              {{401, "authentication_failed", "the refresh token is unknown"}}});
  routes.add({"GET",
              "/api/auth/jwks/",
              AuthNeed::kNone,
              BodyKind::kJson,
              0,
              "Public keys of access tokens.",
              [this](sdk::Request&) { return sdk::Response::json(200, jwt_.jwks()); },
              std::nullopt,
              none,
              {{200, jwksSchema()}}});
}

std::function<void()> TokenRoutes::revokeFamily(Poco::Data::Session& s,
                                                const AuthStore::Refresh& token,
                                                const std::string& why) {
  store_.revokeFamily(s, token.family_id);
  revoker_.revoke(s, token.account_id, familyCredential(token.family_id), why);
  // This process refuses the family's access tokens from the commit on; the others from their
  // next look at the store (AuthService's poller).
  return [this, family = token.family_id] { families_.add(family, sdk::nowMicros()); };
}

// Rotation: each refresh token works once; presenting a retired one revokes its whole family.
sdk::Response TokenRoutes::refresh(sdk::Request& r) {
  const std::string presented = r.requiredString("refresh");
  std::optional<sdk::HttpError> error;
  std::string user_id, account_id, family, next;
  std::function<void()> committed;
  db_.transaction([&](Poco::Data::Session& s) {
    auto t = store_.refreshByHash(s, sha256Hex(presented));
    const std::int64_t now = sdk::nowMicros();
    if (!t || t->revoked_us || t->expires_us <= now) {
      error = sdk::HttpError(401, "authentication_failed", "The refresh token is not valid.");
      return;
    }
    if (t->retired_us || !store_.retire(s, t->id)) {
      committed = revokeFamily(s, *t, "The sign-in was revoked: its refresh token was reused.");
      error = sdk::HttpError(401, "authentication_failed",
                             "The refresh token was already used; its session is revoked.");
      return;
    }
    user_id = t->user_id;
    account_id = t->account_id;
    family = t->family_id;
    next = newRefreshToken();
    store_.addRefresh(s, t->family_id, user_id, account_id, sha256Hex(next),
                      now + kRefreshLifetimeUs);
  });
  if (committed) committed();
  if (error) throw *error;
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("access", jwt_.issue(user_id, account_id, family, kAccessLifetimeSeconds));
  body->set("refresh", next);
  return noStore(200, body);
}

sdk::Response TokenRoutes::logout(sdk::Request& r) {
  const std::string presented = r.requiredString("refresh");
  bool found = false;
  std::function<void()> committed;
  db_.transaction([&](Poco::Data::Session& s) {
    auto t = store_.refreshByHash(s, sha256Hex(presented));
    if (!t) return;
    found = true;
    committed = revokeFamily(s, *t, "The sign-in was ended (logout).");
  });
  if (!found) {
    throw sdk::HttpError(401, "authentication_failed", "The refresh token is not valid.");
  }
  if (committed) committed();
  return sdk::Response::noContent();
}

}  // namespace svc::plugins::auth
