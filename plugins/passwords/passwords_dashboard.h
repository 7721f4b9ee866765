// The passwords plugin's dashboard page: an identity's password entries by name (domain and
// dates); a username, password or notes value only when the person asks for it (reveal, copy,
// edit), opened and sealed in the page by the vault's script. The page declares the one parameter
// {identity}, so the identities page links each identity to it (svc.links). (Named for its
// plugin: the unit tests see every plugin's headers, and other plugins have a dashboard_pages.h.)
#pragma once

#include <svc/sdk/dashboard.h>

#include <vector>

namespace svc::plugins::passwords {

/// @return the entries page (`/identities/{identity}/passwords`); {identity} must be a UUID and
/// is lower-cased.
std::vector<sdk::DashboardPage> dashboardPages();

}  // namespace svc::plugins::passwords
