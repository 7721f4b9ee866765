// The plugins' svcctl commands: each plugin library in the plugins directory that exports
// `svc_cli_commands` (SVC_CLI_COMMANDS in <svc/sdk/cli.h>) adds its commands to the table.
#pragma once

#include <svc/sdk/cli.h>

#include <boost/dll/shared_library.hpp>

#include <string>
#include <vector>

namespace svcctl {

/// The loaded libraries; they stay loaded as long as this object, which must outlive the table
/// their commands were added to.
class CommandModules {
 public:
  /// Opens every `svc_plugin_*.so` in `dir`, in name order, and adds the commands of those that
  /// export them to `table`. A library built for another SDK version or build signature, or that
  /// cannot be opened, adds nothing.
  /// @return one line per library refused and per command left out, for the operator.
  std::vector<std::string> load(const std::string& dir, svc::sdk::CliCommandTable& table);

 private:
  std::vector<boost::dll::shared_library> libraries_;
};

/// @return where svcd looks for plugins by default: `<prefix>/lib/svc/plugins`, the prefix being
/// the directory above the one svcctl runs from (build/bin → build/lib/svc/plugins).
std::string defaultPluginsDir();

}  // namespace svcctl
