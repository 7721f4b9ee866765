// The email plugin's routes with their declared shapes (request, query, answers and errors):
// the kernel checks requests against them before a handler runs, and the API description is
// made of them.
#pragma once

#include "attachments.h"
#include "domains.h"
#include "inboxes.h"
#include "messages.h"
#include "outgoing.h"

#include <svc/sdk/routes.h>

#include <string>
#include <vector>

namespace svc::plugins::email {

/// The path prefixes the routes live under (PluginInfo::paths).
std::vector<std::string> emailPaths();

/// @return the query parameters GET /api/email-inbox/ takes (threadFilter reads them).
std::vector<sdk::Param> threadListQuery();
/// @return the query parameters GET /api/email-messages/ takes (messageFilter reads them).
std::vector<sdk::Param> messageListQuery();

/// The handler objects the routes call; each outlives the routes.
struct EmailHandlers {
  Domains& domains;
  Inboxes& inboxes;
  Messages& messages;
  Outgoing& outgoing;
  Attachments& attachments;
};

/// Registers every route of the plugin.
void registerEmailRoutes(sdk::RouteRegistry& routes, const EmailHandlers& h);

}  // namespace svc::plugins::email
