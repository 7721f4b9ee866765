// `svcctl events tail`: follows the event stream (GET /api/events/stream/, Server-Sent Events),
// one line per event, resuming with Last-Event-ID after a dropped connection.
#pragma once

#include <svc/sdk/cli.h>

namespace svcctl {

/// @return the `events` group.
svc::sdk::CliCommand eventsCommand();

}  // namespace svcctl
