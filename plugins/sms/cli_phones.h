// The sms plugin's `svcctl phones ...` commands: an account's numbers, through the routes.
#pragma once

#include <svc/sdk/cli.h>

namespace svc::plugins::sms {

/// @return the `phones` group.
sdk::CliCommand phonesCommand(const sdk::CliOption& identity);

}  // namespace svc::plugins::sms
