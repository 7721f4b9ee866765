// svcd: the kernel as a Poco ServerApplication.
#pragma once

#include <Poco/Util/ServerApplication.h>

#include <string>
#include <vector>

namespace svc::kernel {

class ConfigLayers;
class PluginHost;

class SvcdApp : public Poco::Util::ServerApplication {
 protected:
  void initialize(Poco::Util::Application& self) override;
  void defineOptions(Poco::Util::OptionSet& options) override;
  void handleOption(const std::string& name, const std::string& value) override;
  int main(const std::vector<std::string>& args) override;

 private:
  /// Runs svcd until asked to stop. @return the exit code.
  int serve();
  /// Layers the configuration (file, --set, environment) and sets up logging.
  /// @return false when the command line is unusable (reported on stderr); otherwise problems
  /// holds what is wrong with the configuration.
  bool layerConfiguration(ConfigLayers& layers, std::vector<std::string>& problems);
  /// --check-config: prints the effective configuration and the problems. @return the exit code.
  int checkConfig(ConfigLayers& layers, PluginHost& host, const std::vector<std::string>& problems);
  /// --config-reference: prints the declared keys. @return the exit code.
  int printConfigReference(PluginHost& host, const std::vector<std::string>& problems);
  bool help_ = false;
  bool version_ = false;
  bool check_config_ = false;
  std::string config_reference_;  ///< "", "markdown" or "man"
  std::string config_file_;
  std::vector<std::string> sets_;
};

}  // namespace svc::kernel
