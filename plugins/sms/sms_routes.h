// The sms plugin's routes with their declared shapes (request, query, answers and errors): the
// kernel checks requests against them before a handler runs, and the API description is made of
// them. The carrier's webhooks are the provider's (twilio_webhooks.h).
#pragma once

#include "outgoing.h"
#include "phones.h"
#include "sms_messages.h"

#include <svc/sdk/routes.h>

#include <string>
#include <vector>

namespace svc::plugins::sms {

/// The path prefixes the routes live under (PluginInfo::paths), the webhooks' included.
std::vector<std::string> smsPaths();

/// Registers the plugin's own routes (not the provider's webhooks).
void registerSmsRoutes(sdk::RouteRegistry& routes, Phones& phones, SmsMessages& messages,
                       SmsOutgoing& outgoing);

}  // namespace svc::plugins::sms
