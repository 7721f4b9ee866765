// The commands that are svcctl's own, about the kernel: plugins, health, metrics. Every other
// command comes from a plugin (command_modules.h).
#pragma once

#include <svc/sdk/cli.h>

#include <vector>

namespace svcctl {

/// @return the kernel's commands.
std::vector<svc::sdk::CliCommand> kernelCommands();

}  // namespace svcctl
