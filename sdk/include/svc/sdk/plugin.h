// The plugin interface, its metadata, the context the kernel gives it, and the export macro.
//
// Lifecycle, driven by the kernel in this order: load all → handshake → order by dependency →
// configure() → migrations applied → registerRoutes()/registerServices() → start() → serve →
// stop() in reverse order → objects destroyed. Libraries stay loaded until the process exits, so
// nothing a plugin made can outlive its code.
//
// configure → migrate → register runs one plugin at a time in dependency order, so in configure() a
// plugin finds the services of the plugins it requires; every other service is found from start()
// on (services.h says more). The lifecycle methods run on one thread; route handlers and the
// services a plugin offers are then called from many worker threads at once and must be
// thread-safe.
#pragma once

#include <svc/sdk/auth.h>
#include <svc/sdk/events.h>
#include <svc/sdk/http.h>
#include <svc/sdk/listeners.h>
#include <svc/sdk/metrics.h>
#include <svc/sdk/routes.h>
#include <svc/sdk/services.h>
#include <svc/sdk/storage.h>
#include <svc/sdk/version.h>

#include <Poco/Logger.h>
#include <Poco/Util/AbstractConfiguration.h>

#include <boost/dll/alias.hpp>

#include <optional>
#include <string>
#include <vector>

namespace svc::sdk {

/// A configuration key a plugin reads, with its default.
struct ConfigKey {
  std::string key;            ///< The full key, for example `email.smtp.listen`.
  std::string default_value;  ///< Its default (always a string, as in a .properties file).
  std::string description;    ///< One line for --check-config and the docs.
  bool secret = false;        ///< Redacted when printed; never readable by other plugins.
  /// Other plugins may read it too (the dashboard's `dashboard.url`, which auth needs). A plugin
  /// reads only its own keys (its namespace and what it declares) and shared, non-secret ones.
  bool shared = false;
};

/// An event type a plugin publishes. The kernel knows no event type in advance: `?types=` on the
/// event stream accepts exactly the types the loaded plugins declare (and the kernel's own
/// `stream.truncated`), and publishing an undeclared type is logged as a programming error.
struct EventType {
  std::string name;         ///< `<noun>.<past-tense verb>`, lower-case: `email.received`.
  std::string description;  ///< One line: what happened, and what `object` is.
  /// Fields of `object` that identify it besides `id`, `uuid` and `identity` (which the kernel
  /// always keeps): when a published object is too large to be an event (over 60 KB), the kernel
  /// keeps only these fields and sets `"truncated": true`. For example `{"thread_id"}`.
  std::vector<std::string> key_fields;
  /// What `object` looks like (the API description's event types; the test suites check
  /// published objects against it). nullopt: not described.
  std::optional<Schema> object{};
};

/// What a plugin says about itself.
struct PluginInfo {
  std::string name;                           ///< Unique, lower-case: `auth`, `email`.
  std::string version;                        ///< The plugin's own version.
  std::string description;                    ///< One line.
  std::vector<std::string> requires_plugins;  ///< Plugins that must be loaded and start first.
  std::vector<ConfigKey> config;              ///< The keys it reads, with defaults.
  std::vector<EventType> events;              ///< The event types it publishes.
  /// The services it offers (names such as sdk::kAuthenticatorService.name), which
  /// `GET /admin/plugins` (`svcctl plugins --json`) shows. Offering happens in registerServices();
  /// offering a service not listed here is refused, and the plugin with it.
  std::vector<std::string> offers_services;
  /// The services it looks up, whoever offers them (shown as above). Looking up one not listed
  /// here or in offers_services still works, but the kernel logs it once as a warning.
  std::vector<std::string> uses_services;
  /// The path prefixes its routes live under (`/api/things/`). A server that has the plugin
  /// installed but not enabled answers requests under them 404 `feature_not_enabled` naming it,
  /// not a bare `not_found`; the kernel refuses a route outside them when any are listed.
  std::vector<std::string> paths;
};

/// What the kernel gives a plugin at configure time; valid until the plugin is destroyed.
class PluginContext {
 public:
  virtual ~PluginContext();
  /// @return the configuration this plugin may read: every key in its own namespace
  /// (`<name>.`) and every key it declares, plus the keys the kernel and other plugins declare
  /// shared and not secret (`public.base_url`, `data.dir`, `server.host`, `server.port`, ...).
  /// Any other key reads as unset. Values come expanded (`${data.dir}/x` works). Read-only.
  virtual const Poco::Util::AbstractConfiguration& config() const = 0;
  /// @return the plugin's logger (named `plugin.<name>`).
  virtual Poco::Logger& logger() const = 0;
  /// @return the kernel's database.
  virtual Database& database() const = 0;
  /// @return the event bus.
  virtual EventBus& events() const = 0;
  /// @return the service registry, for lookups: in configure() for the required plugins' services,
  /// in start() and later for the rest (offers happen in registerServices()).
  virtual ServiceRegistry& services() const = 0;
  /// @return the plugin's own directory for files, `<data.dir>/<name>/` (with a trailing slash),
  /// made by the kernel before configure().
  virtual std::string dataDir() const = 0;
  /// @return where the plugin registers its own metrics (names `svc_<plugin>_...`), which
  /// `GET /metrics` serves beside the kernel's.
  virtual MetricRegistry& metrics() const = 0;
  /// @return where the plugin opens TCP listeners for a protocol of its own (listeners.h): in
  /// start(), closed in stop().
  virtual Listeners& listeners() const = 0;
};

/// A plugin. Implement it, then export it with SVC_PLUGIN(YourClass).
class Plugin {
 public:
  virtual ~Plugin();
  /// @return the plugin's metadata (called before anything else, possibly several times).
  virtual const PluginInfo& info() const = 0;
  /// Reads configuration and keeps the context. Throw to refuse start.
  /// @param context the kernel's services for this plugin.
  virtual void configure(PluginContext& context) = 0;
  /// @return the plugin's migrations, in version order.
  virtual std::vector<Migration> migrations() const = 0;
  /// Registers the plugin's routes. @param routes the registry.
  virtual void registerRoutes(RouteRegistry& routes) = 0;
  /// Offers the plugin's services. @param services the registry.
  virtual void registerServices(ServiceRegistry& services) = 0;
  /// Starts background work (listeners, senders). Throw to refuse start.
  virtual void start() = 0;
  /// Stops background work; called once, in reverse start order, for each plugin whose start()
  /// returned (a start() that throws must undo what it began itself).
  virtual void stop() = 0;
};

}  // namespace svc::sdk

/// The signature of `svc_plugin_create`.
using svc_plugin_create_fn = svc::sdk::Plugin*();
/// The signature of `svc_plugin_abi`.
using svc_plugin_abi_fn = const svc::sdk::AbiInfo*();

/// Exports a plugin class: defines `svc_plugin_abi` (the handshake, built from the headers this
/// plugin was compiled with) and `svc_plugin_create` (a factory returning a new instance).
#define SVC_PLUGIN(PluginClass)                                                         \
  namespace svc_plugin_export {                                                         \
  const ::svc::sdk::AbiInfo* abi() {                                                    \
    static const ::svc::sdk::AbiInfo info{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR, \
                                          SVC_SDK_BUILD_SIGNATURE};                     \
    return &info;                                                                       \
  }                                                                                     \
  ::svc::sdk::Plugin* create() {                                                        \
    return new PluginClass();                                                           \
  }                                                                                     \
  }                                                                                     \
  BOOST_DLL_ALIAS(svc_plugin_export::abi, svc_plugin_abi)                               \
  BOOST_DLL_ALIAS(svc_plugin_export::create, svc_plugin_create)
