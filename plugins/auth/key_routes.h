// The key routes of an account: create (management or identity), list and revoke.
#pragma once

#include "auth_store.h"
#include "keys.h"

#include <svc/sdk/routes.h>

namespace svc::plugins::auth {

class KeyRoutes {
 public:
  KeyRoutes(AuthStore& store, KeyManager& keys) : store_(store), keys_(keys) {}
  void registerRoutes(sdk::RouteRegistry& routes);

 private:
  sdk::Response create(sdk::Request& r, bool identity_key);
  sdk::Response list(sdk::Request& r);
  sdk::Response revoke(sdk::Request& r);

  AuthStore& store_;
  KeyManager& keys_;
};

}  // namespace svc::plugins::auth
