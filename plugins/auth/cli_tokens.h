// The auth plugin's svcctl commands about credentials themselves: `whoami` and `tokens ...`
// (refresh and revoke a refresh token, the signing keys of access tokens).
#pragma once

#include <svc/sdk/cli.h>

#include <vector>

namespace svc::plugins::auth {

/// @return `whoami` and the `tokens` group.
std::vector<sdk::CliCommand> tokenCommands();

}  // namespace svc::plugins::auth
