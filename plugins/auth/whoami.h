// GET /api/health/whoami/: who the presented credential is. The hottest authenticated route, so
// it is written straight to a string and names the user from a minute-old copy.
#pragma once

#include "auth_store.h"

#include <svc/sdk/routes.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace svc::plugins::auth {

class WhoAmI {
 public:
  explicit WhoAmI(AuthStore& store) : store_(store) {}
  void registerRoutes(sdk::RouteRegistry& routes);
  sdk::Response answer(const sdk::Request& r);

 private:
  std::optional<User> cachedUser(const std::string& id);

  AuthStore& store_;
  std::mutex users_mutex_;
  std::unordered_map<std::string, std::pair<std::int64_t, User>> users_;
};

}  // namespace svc::plugins::auth
