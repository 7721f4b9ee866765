// Loading plugins and driving their lifecycle.
//
// load → handshake → dependency order → configure → migrate → register → start; stop in reverse.
// Any failure refuses start with a PluginError that names the plugin and the cause. Libraries are
// never unloaded: every object, std::function or exception a plugin made must not outlive its code.
#pragma once

#include "config.h"
#include "database.h"
#include "event_types.h"
#include "listeners.h"
#include "metrics.h"
#include "router.h"
#include "scoped_config.h"
#include "services.h"

#include <svc/sdk/plugin.h>

#include <Poco/Util/LayeredConfiguration.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace svc::kernel {

/// Why a plugin could not be used; what() is one log line naming the plugin and the cause.
class PluginError : public std::runtime_error {
 public:
  /// Whose fault: the plugin's (its file, handshake, declarations or migrations), or the
  /// configuration's (the plugin refused its settings, or could not get what they name at start:
  /// a port in use, a host that does not resolve, a file it cannot read). svcd exits 70 or 78.
  enum class Blame { kPlugin, kConfiguration };
  PluginError(const std::string& plugin, const std::string& cause, Blame blame = Blame::kPlugin)
      : std::runtime_error("plugin '" + plugin + "': " + cause), plugin_(plugin), blame_(blame) {}
  const std::string& plugin() const { return plugin_; }
  Blame blame() const { return blame_; }

 private:
  std::string plugin_;
  Blame blame_;
};

/// One loaded plugin.
struct LoadedPlugin {
  enum class Status { kLoaded, kConfigured, kMigrated, kRegistered, kStarted, kStopped };
  std::string name;
  std::string file;
  std::unique_ptr<sdk::Plugin> plugin;
  Status status = Status::kLoaded;
  std::vector<std::string> routes;  ///< "METHOD pattern", filled at register.
  struct RouteInfo {
    std::string method, pattern, auth, summary;
  };
  std::vector<RouteInfo> route_info;  ///< The same routes, with what credential each needs.
  std::unique_ptr<sdk::PluginContext> context;
  std::unique_ptr<OwnedServices> services;
  std::unique_ptr<sdk::MetricRegistry> metrics;  ///< its view of the kernel's metrics
};

/// @return the status as a word for `svcctl plugins`.
const char* statusName(LoadedPlugin::Status status);

/// Loads one plugin library and checks its handshake; the library stays loaded for good.
/// @param path the file. @param expected_name the name it should have (from the file), or empty.
/// @throws PluginError for a missing file or export, or an ABI mismatch (one line naming the file,
/// what it was built with and what the kernel needs).
std::unique_ptr<LoadedPlugin> loadPluginFile(const std::string& path,
                                             const std::string& expected_name);

/// loadPluginFile with the handshake checked against another kernel side (tests: a plugin built
/// for an older minor version than the kernel's). @param kernel_abi what the kernel would need.
std::unique_ptr<LoadedPlugin> loadPluginFileAgainstForTest(const std::string& path,
                                                           const std::string& expected_name,
                                                           const sdk::AbiInfo& kernel_abi);

/// Puts plugins in dependency order (dependencies first; otherwise by name).
/// @throws PluginError for a missing dependency or a cycle (naming the cycle).
void orderByDependency(std::vector<std::unique_ptr<LoadedPlugin>>& plugins);

/// Keeps each plugin to keys of its own: none of svcd's keys or namespaces (`admin.token`,
/// `db.*`), none another plugin declares (so no plugin reaches another's secret by declaring it),
/// and no plugin named after one of svcd's namespaces. A key outside the plugin's namespace is
/// allowed otherwise (a plugin may declare keys the contract names outside its namespace).
/// @throws PluginError naming the plugin and the key.
void checkDeclaredKeys(const std::vector<std::unique_ptr<LoadedPlugin>>& plugins);

/// Wraps a plugin object that is linked into the process instead of loaded from a library (the
/// SDK's test kit); it needs no handshake, having been compiled with the kernel's own headers.
std::unique_ptr<LoadedPlugin> adoptPlugin(std::unique_ptr<sdk::Plugin> plugin);

class PluginHost {
 public:
  PluginHost(Poco::Util::LayeredConfiguration& config, ConfigLayers& layers, std::string data_dir);
  ~PluginHost();

  /// Loads the enabled plugins from dir (`*`: every svc_plugin_*.so there), checks handshakes,
  /// rejects duplicate names, orders by dependency, adds their declared keys to the config and
  /// their declared event types to eventTypes() (a malformed or doubly declared type refuses
  /// start).
  void load(const std::string& dir, const std::string& enabled);
  /// What load() does once the libraries are open: rejects duplicate names, orders by
  /// dependency and takes the declarations. Call it once, with every plugin.
  void add(std::vector<std::unique_ptr<LoadedPlugin>> loaded);
  /// configure → migrate → register (routes, services) for each, in order. Routes that need the
  /// operator go to operator_router (the admin listener), the rest to router. Plugins register
  /// their metrics in metrics (nullptr: in a registry of the host's own, never served).
  void prepare(SqlDatabase& db, sdk::EventBus& events, ServiceTable& services, Router& router,
               Router& operator_router, Metrics* metrics = nullptr);
  /// start each, in order.
  void start();
  /// stop each started plugin, in reverse order; never throws.
  void stop();
  /// Stops the started plugins, then destroys every plugin object in reverse order, each before
  /// the context it was given. Call it while everything prepare() handed the plugins (database,
  /// event bus, services, routers, metrics) still exists: a plugin may use them until it is
  /// destroyed, whatever stage it reached or failed at. plugins() is empty afterwards.
  void destroy();

  const std::vector<std::unique_ptr<LoadedPlugin>>& plugins() const { return plugins_; }
  /// @return the event types the loaded plugins declare, and the kernel's own.
  EventTypeRegistry& eventTypes() { return event_types_; }
  /// @return the path prefixes of plugins installed in the plugins directory but not enabled,
  /// each with the plugin's name (requests there answer 404 `feature_not_enabled`).
  const std::vector<std::pair<std::string, std::string>>& dormantPaths() const {
    return dormant_paths_;
  }

 private:
  /// Notes the paths of the plugins in dir that are not among the enabled files.
  void noteDormant(const std::string& dir, const std::vector<std::string>& enabled);
  /// @return what plugin may read of the configuration (see scoped_config.h).
  Poco::AutoPtr<ScopedConfiguration> scopedConfig(const LoadedPlugin& plugin) const;

  Poco::Util::LayeredConfiguration& config_;
  ConfigLayers& layers_;
  std::string data_dir_;
  ListenerLoop listeners_;  // outlives the plugins, whose listeners it drives
  std::vector<std::unique_ptr<LoadedPlugin>> plugins_;
  EventTypeRegistry event_types_;
  std::vector<std::pair<std::string, std::string>> dormant_paths_;
  Metrics unserved_metrics_;
};

}  // namespace svc::kernel
