#include "plugin_host.h"

#include "plugin_manifest.h"

#include <Poco/DirectoryIterator.h>
#include <Poco/File.h>
#include <Poco/Path.h>
#include <Poco/String.h>
#include <Poco/StringTokenizer.h>

#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

namespace svc::kernel {

namespace {

constexpr const char* kFilePrefix = "svc_plugin_";
constexpr const char* kFileSuffix = ".so";

// Libraries stay loaded until the process exits; this list is deliberately never destroyed.
std::vector<boost::dll::shared_library>& keptLibraries() {
  static auto* libraries = new std::vector<boost::dll::shared_library>;
  return *libraries;
}

std::mutex& keptLibrariesMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

std::string nameFromFile(const std::string& path) {
  std::string file = Poco::Path(path).getFileName();
  std::string prefix = kFilePrefix, suffix = kFileSuffix;
  if (file.rfind(prefix, 0) == 0 && Poco::endsWith(file, suffix)) {
    return file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  }
  return file;
}

class ContextImpl : public sdk::PluginContext {
 public:
  ContextImpl(Poco::AutoPtr<ScopedConfiguration> config, const std::string& name, sdk::Database& db,
              sdk::EventBus& events, sdk::ServiceRegistry& services, std::string data_dir,
              sdk::MetricRegistry& metrics, sdk::Listeners& listeners)
      : config_(std::move(config)),
        logger_(Poco::Logger::get("plugin." + name)),
        db_(db),
        events_(events),
        services_(services),
        data_dir_(std::move(data_dir)),
        metrics_(metrics),
        listeners_(listeners) {}
  const Poco::Util::AbstractConfiguration& config() const override { return *config_; }
  Poco::Logger& logger() const override { return logger_; }
  sdk::Database& database() const override { return db_; }
  sdk::EventBus& events() const override { return events_; }
  sdk::ServiceRegistry& services() const override { return services_; }
  std::string dataDir() const override { return data_dir_; }
  sdk::MetricRegistry& metrics() const override { return metrics_; }
  sdk::Listeners& listeners() const override { return listeners_; }

 private:
  Poco::AutoPtr<ScopedConfiguration> config_;
  Poco::Logger& logger_;
  sdk::Database& db_;
  sdk::EventBus& events_;
  sdk::ServiceRegistry& services_;
  std::string data_dir_;
  sdk::MetricRegistry& metrics_;
  sdk::Listeners& listeners_;
};

class RecordingRoutes : public sdk::RouteRegistry {
 public:
  RecordingRoutes(Router& router, Router& operator_router, LoadedPlugin& plugin)
      : router_(router), operator_router_(operator_router), plugin_(plugin) {}
  void add(sdk::Route route) override {
    const bool for_operator = route.auth == sdk::AuthNeed::kOperator;
    const auto& paths = plugin_.plugin->info().paths;
    const bool inside = std::any_of(paths.begin(), paths.end(), [&](const std::string& prefix) {
      return route.pattern.rfind(prefix, 0) == 0;
    });
    if (!for_operator && !paths.empty() && !inside) {
      // A disabled plugin's paths answer feature_not_enabled; a route outside them would not.
      throw std::invalid_argument("route " + route.method + " " + route.pattern +
                                  " lies outside the plugin's declared paths");
    }
    std::string label = route.method + " " + route.pattern + (for_operator ? " (operator)" : "");
    static const char* needs[] = {"none", "user", "account", "any", "identity", "operator"};
    plugin_.route_info.push_back(
        {route.method, route.pattern, needs[static_cast<int>(route.auth)], route.summary});
    (for_operator ? operator_router_ : router_).add(std::move(route), plugin_.name);
    plugin_.routes.push_back(label);
  }

 private:
  Router& router_;
  Router& operator_router_;
  LoadedPlugin& plugin_;
};

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Poco::Exception& e) {
    return e.displayText();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace

const char* statusName(LoadedPlugin::Status status) {
  switch (status) {
    case LoadedPlugin::Status::kLoaded:
      return "loaded";
    case LoadedPlugin::Status::kConfigured:
      return "configured";
    case LoadedPlugin::Status::kMigrated:
      return "migrated";
    case LoadedPlugin::Status::kRegistered:
      return "registered";
    case LoadedPlugin::Status::kStarted:
      return "started";
    case LoadedPlugin::Status::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::unique_ptr<LoadedPlugin> loadPluginFile(const std::string& path,
                                             const std::string& expected_name) {
  return loadPluginFileAgainstForTest(path, expected_name, sdk::kernelAbi());
}

std::unique_ptr<LoadedPlugin> loadPluginFileAgainstForTest(const std::string& path,
                                                           const std::string& expected_name,
                                                           const sdk::AbiInfo& kernel_abi) {
  std::string label = expected_name.empty() ? nameFromFile(path) : expected_name;
  if (!Poco::File(path).exists()) throw PluginError(label, "file " + path + " not found");
  boost::dll::shared_library lib;
  try {
    lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw PluginError(label, "cannot load " + path + ": " + e.what());
  }
  for (const char* symbol : {"svc_plugin_abi", "svc_plugin_create"}) {
    if (!lib.has(symbol)) {
      throw PluginError(label, std::string("missing export ") + symbol + " in " + path +
                                   " (was it built with SVC_PLUGIN?)");
    }
  }
  const sdk::AbiInfo* abi = lib.get_alias<svc_plugin_abi_fn>("svc_plugin_abi")();
  if (abi == nullptr) throw PluginError(label, "svc_plugin_abi returned nothing");
  std::string mismatch = sdk::abiMismatch(*abi, kernel_abi, path);
  if (!mismatch.empty()) throw PluginError(label, mismatch);

  auto loaded = std::make_unique<LoadedPlugin>();
  loaded->file = path;
  try {
    loaded->plugin.reset(lib.get_alias<svc_plugin_create_fn>("svc_plugin_create")());
    if (!loaded->plugin) throw std::runtime_error("svc_plugin_create returned nothing");
    loaded->name = loaded->plugin->info().name;
  } catch (...) {
    throw PluginError(label, "failed while being created: " + describe(std::current_exception()));
  }
  if (!expected_name.empty() && loaded->name != expected_name) {
    throw PluginError(label, "file " + path + " holds plugin '" + loaded->name + "'");
  }
  std::lock_guard lock(keptLibrariesMutex());
  keptLibraries().push_back(std::move(lib));
  return loaded;
}

void orderByDependency(std::vector<std::unique_ptr<LoadedPlugin>>& plugins) {
  std::map<std::string, LoadedPlugin*> by_name;
  for (auto& p : plugins) by_name[p->name] = p.get();
  for (auto& p : plugins) {
    for (const auto& dep : p->plugin->info().requires_plugins) {
      if (!by_name.count(dep)) {
        throw PluginError(p->name, "requires plugin '" + dep + "', which is not enabled");
      }
    }
  }
  std::map<std::string, int> state;  // 0 new, 1 visiting, 2 done
  std::vector<std::string> order, path;
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    if (state[name] == 2) return;
    if (state[name] == 1) {
      auto start = std::find(path.begin(), path.end(), name);
      std::string cycle;
      for (auto it = start; it != path.end(); ++it) cycle += *it + " -> ";
      throw PluginError(name, "dependency cycle: " + cycle + name);
    }
    state[name] = 1;
    path.push_back(name);
    auto deps = by_name[name]->plugin->info().requires_plugins;
    std::sort(deps.begin(), deps.end());
    for (const auto& dep : deps) visit(dep);
    path.pop_back();
    state[name] = 2;
    order.push_back(name);
  };
  for (auto& [name, p] : by_name) visit(name);
  std::map<std::string, std::size_t> rank;
  for (std::size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  std::sort(plugins.begin(), plugins.end(),
            [&](const auto& a, const auto& b) { return rank[a->name] < rank[b->name]; });
}

PluginHost::PluginHost(Poco::Util::LayeredConfiguration& config, ConfigLayers& layers,
                       std::string data_dir)
    : config_(config),
      layers_(layers),
      data_dir_(std::move(data_dir)),
      listeners_(Poco::Logger::get("listeners")) {}

PluginHost::~PluginHost() {
  destroy();
}

void PluginHost::destroy() {
  stop();
  // Objects go before libraries would (which never happens): destroy in reverse order, the
  // plugin before its context, services and metrics (valid until the plugin is destroyed).
  while (!plugins_.empty()) {
    plugins_.back()->plugin.reset();
    plugins_.pop_back();
  }
}

void PluginHost::load(const std::string& dir, const std::string& enabled) {
  std::vector<std::string> files;
  std::vector<std::string> names;
  std::string list = Poco::trim(enabled);
  if (list == "*") {
    Poco::File folder(dir);
    if (folder.exists() && folder.isDirectory()) {
      for (Poco::DirectoryIterator it(folder); it != Poco::DirectoryIterator(); ++it) {
        std::string file = it.name();
        if (file.rfind(kFilePrefix, 0) == 0 && Poco::endsWith(file, std::string(kFileSuffix))) {
          files.push_back(it->path());
        }
      }
    }
    std::sort(files.begin(), files.end());
    names.assign(files.size(), std::string());
  } else if (!list.empty()) {
    Poco::StringTokenizer tokens(
        list, ",", Poco::StringTokenizer::TOK_TRIM | Poco::StringTokenizer::TOK_IGNORE_EMPTY);
    std::set<std::string> seen;
    for (const auto& name : tokens) {
      if (!seen.insert(name).second) continue;
      files.push_back(Poco::Path(dir).append(kFilePrefix + name + kFileSuffix).toString());
      names.push_back(name);
    }
  }
  std::vector<std::unique_ptr<LoadedPlugin>> loaded;
  for (std::size_t i = 0; i < files.size(); ++i)
    loaded.push_back(loadPluginFile(files[i], names[i]));
  add(std::move(loaded));
  if (list != "*") noteDormant(dir, files);
}

void PluginHost::noteDormant(const std::string& dir, const std::vector<std::string>& enabled) {
  Poco::File folder(dir);
  if (!folder.exists() || !folder.isDirectory()) return;
  // A prefix one of the enabled plugins serves within (or around) stays theirs: a typo under it
  // is not_found, not a feature to enable.
  std::vector<std::string> served;
  for (const auto& p : plugins_) {
    served.insert(served.end(), p->plugin->info().paths.begin(), p->plugin->info().paths.end());
  }
  const auto overlaps = [&](const std::string& prefix) {
    return std::any_of(served.begin(), served.end(), [&](const std::string& mine) {
      return mine.rfind(prefix, 0) == 0 || prefix.rfind(mine, 0) == 0;
    });
  };
  for (Poco::DirectoryIterator it(folder); it != Poco::DirectoryIterator(); ++it) {
    const std::string file = it.name();
    if (file.rfind(kFilePrefix, 0) != 0 || !Poco::endsWith(file, std::string(kFileSuffix)))
      continue;
    if (std::find(enabled.begin(), enabled.end(), it->path()) != enabled.end()) continue;
    // Read from the manifest the build wrote: a plugin that is not enabled is never loaded.
    auto manifest = readManifest(manifestPathFor(it->path()));
    if (!manifest) continue;
    for (const auto& prefix : manifest->paths) {
      if (!overlaps(prefix)) dormant_paths_.emplace_back(prefix, manifest->name);
    }
  }
}

void checkDeclaredKeys(const std::vector<std::unique_ptr<LoadedPlugin>>& plugins) {
  auto firstSegment = [](const std::string& key) { return key.substr(0, key.find('.')); };
  std::set<std::string> kernel_keys, kernel_spaces;
  for (const auto& k : kernelConfigKeys()) {
    kernel_keys.insert(k.key);
    kernel_spaces.insert(firstSegment(k.key));
  }
  std::map<std::string, std::string> declared_by;
  for (const auto& p : plugins) {
    if (kernel_spaces.count(p->name)) {
      throw PluginError(p->name, "its name is the namespace of svcd's own keys (" + p->name +
                                     ".*); rename the plugin");
    }
    for (const auto& k : p->plugin->info().config) {
      const std::string space = firstSegment(k.key);
      if (kernel_keys.count(k.key) || kernel_spaces.count(space)) {
        throw PluginError(p->name, "declares '" + k.key + "', a key of svcd's own");
      }
      auto [it, fresh] = declared_by.emplace(k.key, p->name);
      if (!fresh && it->second != p->name) {
        throw PluginError(
            p->name, "declares '" + k.key + "', which plugin '" + it->second + "' declares too");
      }
    }
  }
}

std::unique_ptr<LoadedPlugin> adoptPlugin(std::unique_ptr<sdk::Plugin> plugin) {
  auto adopted = std::make_unique<LoadedPlugin>();
  adopted->name = plugin->info().name;
  adopted->file = "(linked in)";
  adopted->plugin = std::move(plugin);
  return adopted;
}

void PluginHost::add(std::vector<std::unique_ptr<LoadedPlugin>> loaded) {
  std::map<std::string, std::string> seen_names;
  for (auto& p : loaded) {
    auto [it, inserted] = seen_names.emplace(p->name, p->file);
    if (!inserted) {
      throw PluginError(p->name, "duplicate plugin name: both " + it->second + " and " + p->file +
                                     " are named '" + p->name + "'");
    }
    plugins_.push_back(std::move(p));
  }
  orderByDependency(plugins_);
  checkDeclaredKeys(plugins_);
  for (auto& p : plugins_) {
    layers_.addDeclaredKeys(p->plugin->info().config);
    for (const auto& type : p->plugin->info().events) {
      try {
        event_types_.declare(p->name, type);
      } catch (const std::invalid_argument& e) {
        throw PluginError(p->name, e.what());
      }
    }
  }
}

Poco::AutoPtr<ScopedConfiguration> PluginHost::scopedConfig(const LoadedPlugin& plugin) const {
  std::vector<const std::vector<sdk::ConfigKey>*> sources = {&kernelConfigKeys()};
  for (const auto& p : plugins_) sources.push_back(&p->plugin->info().config);
  return new ScopedConfiguration(config_, plugin.name,
                                 readableKeys(plugin.plugin->info().config, sources));
}

void PluginHost::prepare(SqlDatabase& db, sdk::EventBus& events, ServiceTable& services,
                         Router& router, Router& operator_router, Metrics* metrics) {
  for (auto& p : plugins_) {
    p->services = std::make_unique<OwnedServices>(services, p->name, &p->plugin->info());
    p->metrics = (metrics ? *metrics : unserved_metrics_).registryFor(p->name);
    std::string dir = Poco::Path(data_dir_).append(p->name + "/").toString();
    try {
      Poco::File(dir).createDirectories();
    } catch (const Poco::Exception& e) {
      throw PluginError(p->name, "cannot make its directory " + dir + ": " + e.displayText());
    }
    p->context = std::make_unique<ContextImpl>(scopedConfig(*p), p->name, db, events, *p->services,
                                               dir, *p->metrics, listeners_);
    try {
      p->plugin->configure(*p->context);
    } catch (...) {
      throw PluginError(p->name, "failed to configure: " + describe(std::current_exception()),
                        PluginError::Blame::kConfiguration);
    }
    p->status = LoadedPlugin::Status::kConfigured;
    try {
      db.migrate(p->name, p->plugin->migrations());
    } catch (...) {
      throw PluginError(p->name, "failed to migrate: " + describe(std::current_exception()));
    }
    p->status = LoadedPlugin::Status::kMigrated;
    try {
      RecordingRoutes routes(router, operator_router, *p);
      p->plugin->registerRoutes(routes);
      p->plugin->registerServices(*p->services);
    } catch (...) {
      throw PluginError(p->name, "failed to register: " + describe(std::current_exception()));
    }
    p->status = LoadedPlugin::Status::kRegistered;
  }
}

void PluginHost::start() {
  for (auto& p : plugins_) {
    try {
      p->plugin->start();
    } catch (...) {
      throw PluginError(p->name, "failed to start: " + describe(std::current_exception()),
                        PluginError::Blame::kConfiguration);
    }
    p->status = LoadedPlugin::Status::kStarted;
  }
}

void PluginHost::stop() {
  for (auto it = plugins_.rbegin(); it != plugins_.rend(); ++it) {
    auto& p = *it;
    if (p->status != LoadedPlugin::Status::kStarted) continue;
    try {
      p->plugin->stop();
    } catch (...) {
      Poco::Logger::get("svcd").error("plugin '" + p->name +
                                      "': failed to stop: " + describe(std::current_exception()));
    }
    p->status = LoadedPlugin::Status::kStopped;
  }
}

}  // namespace svc::kernel
