#include "whoami.h"

#include "auth_shapes.h"

#include <svc/sdk/util.h>

#include <Poco/UTF8String.h>

namespace svc::plugins::auth {

void WhoAmI::registerRoutes(sdk::RouteRegistry& routes) {
  routes.add({"GET",
              "/api/health/whoami/",
              sdk::AuthNeed::kAnyKey,
              sdk::BodyKind::kJson,
              0,
              "Who the presented credential is.",
              [this](sdk::Request& r) { return answer(r); },
              std::nullopt,
              std::vector<sdk::Param>{},
              {{200, whoamiSchema()}}});
}

sdk::Response WhoAmI::answer(const sdk::Request& r) {
  static const char* kinds[] = {"none", "user", "management", "identity"};
  auto q = [](const std::string& v) { return "\"" + Poco::UTF8::escape(v, true) + "\""; };
  std::string body;
  body.reserve(512);
  body += "{\"kind\":\"";
  body += kinds[static_cast<int>(r.principal.kind)];
  body += "\",\"account\":{\"id\":" + q(r.principal.account_id) + "},\"user\":";
  std::optional<User> user;
  if (!r.principal.user_id.empty()) user = cachedUser(r.principal.user_id);
  body += user ? "{\"id\":" + q(user->id) + ",\"email\":" + q(user->email) +
                     ",\"name\":" + q(user->name) + "}"
               : std::string("null");
  body += ",\"identity\":";
  body += r.identity ? "{\"uuid\":" + q(r.identity->uuid) + ",\"name\":" + q(r.identity->name) + "}"
                     : std::string("null");
  body += ",\"key\":";
  body += r.principal.key_id.empty()
              ? std::string("null")
              : "{\"id\":" + q(r.principal.key_id) + ",\"label\":" + q(r.principal.key_label) +
                    ",\"prefix\":" + q(r.principal.key_prefix) + "}";
  body += "}";
  return sdk::Response::text(200, std::move(body), "application/json");
}

// whoami names the user on every call; users change rarely, so a minute-old copy is fine and
// keeps the database off the hot path.
std::optional<User> WhoAmI::cachedUser(const std::string& id) {
  const std::int64_t now = sdk::nowMicros();
  {
    std::lock_guard lock(users_mutex_);
    auto it = users_.find(id);
    if (it != users_.end() && now - it->second.first < 60000000) return it->second.second;
  }
  auto user = store_.userById(id);
  if (!user) return std::nullopt;
  std::lock_guard lock(users_mutex_);
  if (users_.size() > 100000) users_.clear();
  users_[id] = {now, *user};
  return user;
}

}  // namespace svc::plugins::auth
