// The secrets plugin's dashboard page: an identity's secrets by key name; a value or notes only
// when the person asks for them (reveal, copy, edit), opened and sealed in the page by the vault's
// script (sdk::kVaultDashboardScript). It renders in the browser from the API (read with the
// signed-in session), so it sees exactly what the API lets this person see. It declares the one
// parameter {identity}, so the identities page links each identity to it (svc.links) without
// knowing secrets.
#pragma once

#include <svc/sdk/dashboard.h>

#include <vector>

namespace svc::plugins::secrets {

/// @return the secrets page (`/identities/{identity}/secrets`): keys and their times;
/// {identity} must be a UUID (lower-cased).
std::vector<sdk::DashboardPage> dashboardPages();

}  // namespace svc::plugins::secrets
