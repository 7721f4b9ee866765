// svcctl: the operator's and agent's command line for svcd.
//
// svcctl [global options] COMMAND [SUBCOMMAND...] [options] [ARGS]
//
// A table of commands: the kernel's own (kernel_commands.h) and those of every plugin library in
// the plugins directory that exports them (command_modules.h, <svc/sdk/cli.h>).
#include "command_list.h"
#include "command_modules.h"
#include "events_tail.h"
#include "kernel_commands.h"

#include <svc/sdk/cli.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  svc::sdk::CliOptions options = svc::sdk::CliOptions::fromEnvironment();
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> rest;
  try {
    rest = options.take(args);
  } catch (const svc::sdk::CliError& e) {
    std::cerr << "svcctl: " << e.what() << "\n";
    // The line did not parse, so --json may stand after what failed: look for it anyway.
    if (std::find(args.begin(), args.end(), "--json") != args.end()) std::cout << e.json() << "\n";
    return e.exit_code;
  }
  if (options.version) {
    std::cout << "svcctl " << SVCCTL_VERSION << " (SDK " << SVC_SDK_VERSION_MAJOR << "."
              << SVC_SDK_VERSION_MINOR << ", " << SVC_SDK_BUILD_SIGNATURE << ")\n";
    return 0;
  }
  svcctl::CommandModules modules;  // declared first: outlives the table holding their commands
  svc::sdk::CliCommandTable table;
  auto own = svcctl::kernelCommands();
  own.push_back(svcctl::eventsCommand());
  own.push_back(svcctl::commandListCommand(table));
  table.add(own, "kernel");
  const std::string dir =
      options.plugins_dir.empty() ? svcctl::defaultPluginsDir() : options.plugins_dir;
  for (const auto& problem : modules.load(dir, table)) std::cerr << "svcctl: " << problem << "\n";
  svc::sdk::CliContext context(options, std::cout, std::cerr, std::cin);
  return table.run(rest, context);
}
