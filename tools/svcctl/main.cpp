// svcctl: the operator's and agent's command line for svcd.
//
// svcctl [global options] COMMAND [SUBCOMMAND...] [options] [ARGS]
//
// A table of commands: the kernel's own (kernel_commands.h) and those of every plugin library in
// the plugins directory that exports them (command_modules.h, <svc/sdk/cli.h>).
#include "command_modules.h"
#include "kernel_commands.h"

#include <svc/sdk/cli.h>

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  svc::sdk::CliOptions options = svc::sdk::CliOptions::fromEnvironment();
  std::vector<std::string> rest;
  try {
    rest = options.take(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const svc::sdk::CliError& e) {
    std::cerr << "svcctl: " << e.what() << "\n";
    return e.exit_code;
  }
  svcctl::CommandModules modules;  // declared first: outlives the table holding their commands
  svc::sdk::CliCommandTable table;
  table.add(svcctl::kernelCommands(), "kernel");
  const std::string dir =
      options.plugins_dir.empty() ? svcctl::defaultPluginsDir() : options.plugins_dir;
  for (const auto& problem : modules.load(dir, table)) std::cerr << "svcctl: " << problem << "\n";
  svc::sdk::CliContext context(options, std::cout, std::cerr, std::cin);
  return table.run(rest, context);
}
