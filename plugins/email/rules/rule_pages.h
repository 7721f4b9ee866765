// The sender rules in the dashboard: an identity's page (`/identities/{identity}/rules`: its own
// rules, which it can add and delete, and the account's defaults, shown read-only) and the
// account's page (`/email-rules`, in the navigation: every rule, defaults added there). Both
// render in the browser from /api/email-rules/ with the signed-in session.
#pragma once

#include <svc/sdk/dashboard.h>

#include <vector>

namespace svc::plugins::email {

/// @return the two pages.
std::vector<sdk::DashboardPage> rulePages();

}  // namespace svc::plugins::email
