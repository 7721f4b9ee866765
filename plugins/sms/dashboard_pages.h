// The sms plugin's dashboard pages: an identity's number and SMS conversations, and a conversation
// read in full. They render in the browser from the API (read with the signed-in session), so they
// see exactly what the API lets this person see. The conversations page declares the one parameter
// {identity}, so the identities page links each identity to it (svc.links) without knowing sms.
#pragma once

#include <svc/sdk/dashboard.h>

#include <vector>

namespace svc::plugins::sms {

/// @return the conversations page (`/identities/{identity}/sms`, with a button that provisions a
/// number when the identity has none) and the conversation page
/// (`/identities/{identity}/sms/{conversation}`, with a reply form and a button that marks its
/// unread messages read). {identity} must be a UUID, {conversation} a conversation id
/// (`{phone_id}_{number}`); both are lower-cased where the API compares them lower-case.
std::vector<sdk::DashboardPage> dashboardPages();

}  // namespace svc::plugins::sms
