// `svcctl commands`: every leaf command with the API operations it calls, and the operations no
// command calls on purpose, each with its reason. A test holds this listing against the server's
// own description (GET /api/schema/), so a route without a command is found, not hoped absent.
#pragma once

#include <svc/sdk/cli.h>

namespace svcctl {

/// @param table the table the command lists; it must outlive the command.
/// @return the `commands` command.
svc::sdk::CliCommand commandListCommand(const svc::sdk::CliCommandTable& table);

}  // namespace svcctl
