// Configuration in layers, lowest precedence first: built-in defaults (the kernel's and each
// plugin's declared keys), the main file (etc/svc/svcd.properties or --config FILE), one file per
// plugin (etc/svc/plugins/<name>.properties), SVC_* environment variables, --set key=value flags.
// Everything lands in one Poco LayeredConfiguration; this class only decides the layers.
#pragma once

#include <svc/sdk/plugin.h>

#include <Poco/AutoPtr.h>
#include <Poco/Util/LayeredConfiguration.h>
#include <Poco/Util/MapConfiguration.h>

#include <map>
#include <string>
#include <vector>

namespace svc::kernel {

/// The kernel's own keys with their defaults.
const std::vector<sdk::ConfigKey>& kernelConfigKeys();

/// @param key a configuration key. @return its environment variable name (`SVC_SERVER_PORT`).
std::string envNameForKey(const std::string& key);

class ConfigLayers {
 public:
  /// @param target the configuration to fill (usually the application's).
  /// @param exe_dir the directory of the running executable, for path defaults.
  /// @param environment the process environment (name → value).
  ConfigLayers(Poco::Util::LayeredConfiguration& target, std::string exe_dir,
               std::map<std::string, std::string> environment);

  /// Uses this file instead of the default main file (it must exist).
  void setConfigFile(const std::string& path) { config_file_ = path; }
  /// Adds a `--set key=value` (also what --port and --data-dir become).
  /// @return false when the text is not key=value.
  bool addSet(const std::string& assignment);
  /// Builds every layer. @return problems (unreadable files); empty when fine.
  std::vector<std::string> build();
  /// Adds a plugin's declared keys to the defaults, and their SVC_* variables to the env layer.
  void addDeclaredKeys(const std::vector<sdk::ConfigKey>& keys);
  /// Checks the kernel's keys. @return one sentence per problem; empty when valid.
  std::vector<std::string> validate() const;
  /// @return every effective key=value, sorted, secrets redacted.
  std::string dump() const;
  /// @param key a key. @return true when its value must never be printed: a declared key's
  /// `secret` flag, else whether its name sounds secret (password, token...).
  bool isSecret(const std::string& key) const;
  /// @return the directory the main configuration file is in (for plugin files).
  const std::string& configDir() const { return config_dir_; }

 private:
  void applyEnvironment();

  Poco::Util::LayeredConfiguration& target_;
  std::string exe_dir_;
  std::map<std::string, std::string> environment_;
  std::string config_file_;
  std::string config_dir_;
  std::vector<std::pair<std::string, std::string>> sets_;
  std::map<std::string, sdk::ConfigKey> declared_;
  Poco::AutoPtr<Poco::Util::MapConfiguration> defaults_;
  Poco::AutoPtr<Poco::Util::MapConfiguration> env_;
  Poco::AutoPtr<Poco::Util::MapConfiguration> sets_layer_;
};

}  // namespace svc::kernel
