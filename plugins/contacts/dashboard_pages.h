// The contacts plugin's dashboard page: an identity's contacts, newest first, with a search box.
// It renders in the browser from the API (read with the signed-in session), so it sees exactly
// what the API lets this person see. Its one parameter {identity} makes the identities page link
// each identity to it (svc.links) without knowing contacts.
#pragma once

#include <svc/sdk/dashboard.h>

namespace svc::plugins::contacts {

/// @return the page `/identities/{identity}/contacts` ({identity} a UUID, lower-cased), ordered
/// after other plugins' identity pages.
sdk::DashboardPage contactsDashboardPage();

}  // namespace svc::plugins::contacts
