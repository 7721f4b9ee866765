// The operator's routes (/admin/auth/...): add a local user, approve or deny a device code for
// a user, set an account's plan.
#pragma once

#include "auth_store.h"
#include "device_flow.h"

#include <svc/sdk/routes.h>

namespace svc::plugins::auth {

class OperatorRoutes {
 public:
  OperatorRoutes(AuthStore& store, DeviceFlow& device) : store_(store), device_(device) {}
  void registerRoutes(sdk::RouteRegistry& routes);

 private:
  sdk::Response addUser(sdk::Request& r);
  sdk::Response decide(sdk::Request& r, bool approve);
  sdk::Response setPlan(sdk::Request& r);

  AuthStore& store_;
  DeviceFlow& device_;
};

}  // namespace svc::plugins::auth
