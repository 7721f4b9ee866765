// What the webhooks routes take and answer, as the kernel checks and publishes them.
#pragma once

#include <svc/sdk/schema.h>

#include <string>
#include <vector>

namespace svc::plugins::webhooks {

inline constexpr std::size_t kMaxDescription = 500;

/// @param types the event types the loaded plugins declare (none: any string, checked by name
/// in the handler). @return what create takes; PATCH takes it partial().
sdk::Schema webhookInputSchema(const std::vector<std::string>& types);
/// @return a webhook as the API shows it to its owner (never its secret).
sdk::Schema webhookSchema();
/// @return a webhook as its `webhook.*` events carry it: the URL's scheme and host only
/// (`url_host`), since other webhooks and the event stream receive them.
sdk::Schema webhookEventSchema();
/// @return a webhook with its `secret`: the answers of create and rotate-secret.
sdk::Schema webhookWithSecretSchema();
/// @return one delivery of the delivery log.
sdk::Schema deliverySchema();

}  // namespace svc::plugins::webhooks
