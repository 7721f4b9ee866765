// The email plugin's dashboard pages: an identity's inbox and a thread read in full. They render
// in the browser from the API (read with the signed-in session), so they see exactly what the API
// lets this person see. The inbox declares the one parameter {identity}, so the identities page
// links each identity to it (svc.links) without knowing email.
#pragma once

#include <svc/sdk/dashboard.h>

#include <vector>

namespace svc::plugins::email {

/// @return the inbox (`/identities/{identity}/inbox`) and thread
/// (`/identities/{identity}/threads/{thread}`) pages; their parameters must be UUIDs.
std::vector<sdk::DashboardPage> dashboardPages();

}  // namespace svc::plugins::email
