// The identities plugin's dashboard page: the account's identities. Each identity links to the
// pages other plugins add for one identity (their only parameter is {identity}: email's inbox),
// found in the page through svc.links, so this plugin names none of them.
#pragma once

#include <svc/sdk/dashboard.h>

namespace svc::plugins::identities {

/// @return the page at `/identities`, in the navigation as "Identities".
sdk::DashboardPage identitiesDashboardPage();

}  // namespace svc::plugins::identities
