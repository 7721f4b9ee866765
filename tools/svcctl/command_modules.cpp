#include "command_modules.h"

#include <Poco/File.h>
#include <Poco/Path.h>

#include <boost/dll/runtime_symbol_info.hpp>

#include <algorithm>

namespace svcctl {

std::vector<std::string> CommandModules::load(const std::string& dir,
                                              svc::sdk::CliCommandTable& table) {
  std::vector<std::string> problems;
  Poco::File folder(dir);
  if (!folder.exists() || !folder.isDirectory()) return problems;
  std::vector<std::string> names;
  folder.list(names);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const std::string prefix = "svc_plugin_", suffix = ".so";
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string plugin =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    const std::string path = Poco::Path(dir).makeDirectory().setFileName(name).toString();
    boost::dll::shared_library lib;
    try {
      lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
      problems.push_back("cannot load " + path + ": " + e.what());
      continue;
    }
    if (!lib.has("svc_cli_commands")) continue;  // a plugin without commands
    if (!lib.has("svc_cli_abi")) {
      problems.push_back("the commands in " + path + " are refused: it exports no svc_cli_abi");
      continue;
    }
    // The handshake comes before any other call into the library.
    const svc::sdk::AbiInfo* abi = lib.get_alias<svc_cli_abi_fn>("svc_cli_abi")();
    const std::string mismatch =
        abi == nullptr ? "svc_cli_abi returned nothing" : svc::sdk::abiMismatch(*abi, path);
    if (!mismatch.empty()) {
      problems.push_back("the commands in " + path + " are refused: " + mismatch);
      continue;
    }
    std::vector<svc::sdk::CliCommand> commands;
    try {
      commands = lib.get_alias<svc_cli_commands_fn>("svc_cli_commands")();
    } catch (const std::exception& e) {
      problems.push_back("the commands in " + path + " failed: " + e.what());
      continue;
    }
    libraries_.push_back(std::move(lib));  // before the table holds its code
    auto left_out = table.add(commands, "plugin " + plugin);
    problems.insert(problems.end(), left_out.begin(), left_out.end());
  }
  return problems;
}

std::string defaultPluginsDir() {
  Poco::Path prefix(boost::dll::program_location().parent_path().string());
  prefix.makeDirectory().popDirectory();  // <prefix>/bin -> <prefix>
  return prefix.append("lib/svc/plugins").toString();
}

}  // namespace svcctl
