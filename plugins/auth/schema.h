// The auth plugin's tables and their migrations: accounts, users, keys, device codes, refresh
// tokens, signing keys, provider links and browser sessions.
#pragma once

#include <svc/sdk/storage.h>

#include <vector>

namespace svc::plugins::auth {

/// @return the plugin's migrations, in version order.
std::vector<sdk::Migration> authMigrations();

}  // namespace svc::plugins::auth
