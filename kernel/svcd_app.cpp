#include "svcd_app.h"

#include "api_server.h"
#include "config.h"
#include "config_reference.h"
#include "database.h"
#include "event_log.h"
#include "kernel_routes.h"
#include "logging.h"
#include "mcp.h"
#include "memory_release.h"
#include "plugin_host.h"
#include "services.h"
#include "stop_signals.h"
#include "stream_hub.h"

#include <svc/sdk/util.h>
#include <svc/sdk/version.h>

#include <Poco/DigestEngine.h>
#include <Poco/Environment.h>
#include <Poco/File.h>
#include <Poco/FileStream.h>
#include <Poco/Net/Context.h>
#include <Poco/Net/SSLManager.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/Path.h>
#include <Poco/Process.h>
#include <Poco/Util/HelpFormatter.h>
#include <Poco/Util/MapConfiguration.h>
#include <Poco/Util/Option.h>
#include <Poco/Util/OptionSet.h>

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>

extern char** environ;

namespace svc::kernel {

namespace {

constexpr const char* kVersion = "0.1.0";

void raiseOpenFileLimit(Poco::Logger& log) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    rlim_t before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      log.debug("open-files limit raised from " + std::to_string(before) + " to " +
                std::to_string(limit.rlim_cur));
    }
  }
}

// Poco's ServerSocket(address, backlog) also sets SO_REUSEPORT, which lets a second server bind a
// port already served and silently share its traffic: here port sharing is the operator's choice,
// and otherwise a port in use fails the start.
Poco::Net::ServerSocket listenOn(const Poco::Net::SocketAddress& address, int backlog,
                                 bool reuse_port) {
  Poco::Net::ServerSocket socket;
  socket.bind(address, true, reuse_port);
  socket.listen(backlog);
  return socket;
}

std::map<std::string, std::string> processEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos && entry.rfind("SVC_", 0) == 0) {
      env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
  }
  return env;
}

// The SQLite database, its write-ahead log and its shared-memory index hold what plugins keep
// unencrypted (signing secrets, key hashes): each that exists must be svcd's alone, as a key
// file must be (sdk::privateFileProblem). @return "" or the fatal line, naming the file.
std::string sqliteFilesProblem(const std::string& db_url) {
  if (db_url.rfind("sqlite:", 0) != 0) return "";
  const std::string path = db_url.substr(7);
  for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
    // Absent, it is made 0600 under svcd's umask; one that cannot be opened fails the database's
    // own open, which says why.
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;
    const std::string problem = sdk::privateFileProblem(fd);
    ::close(fd);
    if (!problem.empty()) return "database file " + file + ": " + problem;
  }
  return "";
}

// The operator token: configured, or generated once and kept in data.dir/admin.token (0600) so
// svcctl on this machine can read it.
std::string operatorToken(const std::string& configured, const std::string& data_dir,
                          Poco::Logger& log) {
  if (!configured.empty()) return configured;
  std::string path = Poco::Path(data_dir).append("admin.token").toString();
  if (Poco::File(path).exists()) {
    Poco::FileInputStream in(path);
    std::string token;
    std::getline(in, token);
    if (token.size() >= 32) return token;
  }
  Poco::DigestEngine::Digest raw(32);
  if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) {
    throw std::runtime_error("no randomness for admin.token");
  }
  const std::string token = Poco::DigestEngine::digestToHex(raw);
  mode_t old = ::umask(077);
  {
    Poco::FileOutputStream out(path);
    out << token << "\n";
  }
  ::umask(old);
  ::chmod(path.c_str(), 0600);
  log.information("operator token written to " + path);
  return token;
}

// The API listener's socket, and its TLS context when server.tls.cert is set.
struct ApiSocket {
  Poco::Net::ServerSocket socket;
  Poco::Net::Context::Ptr tls;  // set: connections are TLS
  std::string scheme = "http";
};

// With server.port=0 the bound port is written back into the configuration, so
// public.base_url (and the URLs made from it) name the real one. @throws Poco::Exception.
ApiSocket listenForApi(Poco::Util::LayeredConfiguration& conf) {
  ApiSocket api;
  Poco::Net::SocketAddress address(conf.getString("server.host"),
                                   static_cast<Poco::UInt16>(conf.getInt("server.port")));
  const std::string cert = conf.getString("server.tls.cert");
  const bool reuse_port = conf.getBool("server.reuse_port");
  if (!cert.empty()) {
    Poco::Net::initializeSSL();
    Poco::Net::Context::Ptr context =
        new Poco::Net::Context(Poco::Net::Context::TLS_SERVER_USE, conf.getString("server.tls.key"),
                               cert, "", Poco::Net::Context::VERIFY_NONE);
    context->disableProtocols(Poco::Net::Context::PROTO_SSLV2 | Poco::Net::Context::PROTO_SSLV3 |
                              Poco::Net::Context::PROTO_TLSV1 | Poco::Net::Context::PROTO_TLSV1_1);
    api.tls = context;
    api.scheme = "https";
  }
  api.socket = listenOn(address, conf.getInt("server.queue"), reuse_port);
  if (conf.getInt("server.port") == 0) {
    Poco::AutoPtr<Poco::Util::MapConfiguration> bound(new Poco::Util::MapConfiguration);
    bound->setInt("server.port", api.socket.address().port());
    conf.add(bound, -1000, false);
  }
  return api;
}

// The API listener's timeouts, from server.*_timeout_seconds.
ConnectionLimits apiConnectionLimits(const Poco::Util::AbstractConfiguration& conf) {
  ConnectionLimits limits;
  limits.idle = std::chrono::seconds(conf.getInt("server.idle_timeout_seconds"));
  limits.header = std::chrono::seconds(conf.getInt("server.header_timeout_seconds"));
  limits.body = std::chrono::seconds(conf.getInt("server.body_timeout_seconds"));
  limits.request = std::chrono::seconds(conf.getInt("server.request_timeout_seconds"));
  limits.send = std::chrono::seconds(conf.getInt("server.send_timeout_seconds"));
  return limits;
}

// The operator listener: the same pipeline on its own loopback socket, small and plain HTTP.
// @throws std::runtime_error for an address that is not loopback, Poco::Exception when it cannot
// listen.
std::unique_ptr<ApiServer> operatorServer(Runtime& runtime, const std::string& listen) {
  Poco::Net::SocketAddress address(listen);
  if (!address.host().isLoopback()) {
    throw std::runtime_error("admin.listen must be a loopback address, not " + listen);
  }
  static const ConnectionLimits admin_limits;
  return std::make_unique<ApiServer>(runtime, listenOn(address, 64, false), nullptr, 4, 2,
                                     admin_limits, 64, 0);
}

// The kernel's database, pool sized from db.pool_size (0: server.threads + 4), its own tables
// migrated. @throws std::exception when it cannot be opened or migrated.
std::unique_ptr<SqlDatabase> openDatabase(const Poco::Util::AbstractConfiguration& conf,
                                          int threads) {
  int pool_size = conf.getInt("db.pool_size");
  if (pool_size == 0) pool_size = threads + 4;
  auto db = std::make_unique<SqlDatabase>(conf.getString("db.url"), pool_size,
                                          conf.getString("db.sqlite.synchronous"));
  db->migrate("kernel", eventLogMigrations());
  db->migrate("kernel.access", accessWatchMigrations());
  return db;
}

// What the API listener's pipeline works with. @param access_log null: no access log.
Runtime apiRuntime(const Poco::Util::AbstractConfiguration& conf, Router& router,
                   ServiceTable& services, StreamHub& hub, Metrics& metrics,
                   AccessLog* access_log) {
  Runtime runtime;
  runtime.router = &router;
  runtime.services = &services;
  runtime.hub = &hub;
  runtime.metrics = &metrics;
  runtime.limits.max_body_bytes = static_cast<std::size_t>(conf.getInt("server.max_body_bytes"));
  runtime.base_url = conf.getString("public.base_url");
  runtime.access_log = access_log;
  runtime.error_log = &Poco::Logger::get("svcd");
  runtime.check_responses = conf.getBool("server.check_responses");
  return runtime;
}

// The kernel's own figures on /metrics: the database pool, event streams and held responses.
void addKernelGauges(Metrics& metrics, SqlDatabase& db, EventLog& events, StreamHub& hub) {
  metrics.gauge("svc_db_pool_capacity", "database sessions the pool may open",
                [&] { return static_cast<double>(db.poolCapacity()); });
  metrics.gauge("svc_db_pool_used", "database sessions in use",
                [&] { return static_cast<double>(db.poolUsed()); });
  metrics.gauge("svc_db_pool_idle", "database sessions idle in the pool",
                [&] { return static_cast<double>(db.poolIdle()); });
  metrics.gauge("svc_event_streams_open", "event streams open",
                [&] { return static_cast<double>(events.streamCount()); });
  metrics.gauge("svc_event_log_position", "the last event sequence handed out",
                [&] { return static_cast<double>(events.position()); });
  metrics.gauge("svc_held_responses_open", "long-lived responses held open",
                [&] { return static_cast<double>(hub.openCount()); });
}

// Ends the plugins' lives before the kernel objects they were given. Declared after the database,
// event log, hub, services, metrics and routers, it runs before their destructors whichever way
// serve() returns, a plugin refusing to configure, migrate or start included: the started
// plugins are stopped, the services offered dropped, then every plugin object destroyed.
class PluginsEndFirst {
 public:
  PluginsEndFirst(PluginHost& host, ServiceTable& services) : host_(host), services_(services) {}
  ~PluginsEndFirst() {
    host_.stop();
    services_.clear();
    host_.destroy();
  }
  PluginsEndFirst(const PluginsEndFirst&) = delete;
  PluginsEndFirst& operator=(const PluginsEndFirst&) = delete;

 private:
  PluginHost& host_;
  ServiceTable& services_;
};

// A plugin's refusal: 78 when its configuration is to blame, 70 when the plugin is.
int exitCodeFor(const PluginError& e) {
  return e.blame() == PluginError::Blame::kConfiguration ? Poco::Util::Application::EXIT_CONFIG
                                                         : Poco::Util::Application::EXIT_SOFTWARE;
}

}  // namespace

void SvcdApp::initialize(Poco::Util::Application& self) {
  // Configuration is layered by ConfigLayers in run(), not by Application's own file lookup.
  ServerApplication::initialize(self);
}

void SvcdApp::defineOptions(Poco::Util::OptionSet& options) {
  ServerApplication::defineOptions(options);
  using Poco::Util::Option;
  options.addOption(Option("help", "h", "print this help and exit"));
  options.addOption(Option("version", "", "print the version and exit"));
  options.addOption(Option("config", "",
                           "read configuration from FILE instead of "
                           "etc/svc/svcd.properties")
                        .argument("FILE"));
  options.addOption(Option("set", "", "set a configuration key (repeatable)")
                        .argument("key=value")
                        .repeatable(true));
  options.addOption(Option("port", "", "listen on port N (= --set server.port=N)").argument("N"));
  options.addOption(
      Option("data-dir", "", "keep data in DIR (= --set data.dir=DIR)").argument("DIR"));
  options.addOption(Option("check-config", "",
                           "validate the configuration and plugins, print the effective "
                           "configuration (secrets redacted), exit non-zero on any error"));
  options.addOption(Option("config-reference", "",
                           "print every key svcd and the plugins declare, with its default and "
                           "meaning, as Markdown (or as the man page svcd.properties(5) with =man)")
                        .argument("FORMAT", false));
}

void SvcdApp::handleOption(const std::string& name, const std::string& value) {
  ServerApplication::handleOption(name, value);
  if (name == "help") {
    help_ = true;
    stopOptionsProcessing();
  } else if (name == "version") {
    version_ = true;
  } else if (name == "config") {
    config_file_ = value;
  } else if (name == "set") {
    sets_.push_back(value);
  } else if (name == "port") {
    sets_.push_back("server.port=" + value);
  } else if (name == "data-dir") {
    sets_.push_back("data.dir=" + value);
  } else if (name == "check-config") {
    check_config_ = true;
  } else if (name == "config-reference") {
    config_reference_ = value.empty() ? "markdown" : value;
  }
}

int SvcdApp::main(const std::vector<std::string>& /*args*/) {
  if (help_) {
    Poco::Util::HelpFormatter help(options());
    help.setUnixStyle(true);
    help.setCommand("svcd");
    help.setUsage(
        "[--config FILE] [--set key=value ...] [--port N] [--data-dir DIR] "
        "[--check-config] [--config-reference[=man]]");
    help.setHeader("svcd: the agent identity service. Loads its plugins, serves the REST API.");
    help.setFooter("Every key can also be set as SVC_<KEY> (dots as underscores, upper-case).");
    help.format(std::cout);
    return EXIT_OK;
  }
  if (version_) {
    std::cout << "svcd " << kVersion << " (SDK " << SVC_SDK_VERSION_MAJOR << "."
              << SVC_SDK_VERSION_MINOR << ", " << SVC_SDK_BUILD_SIGNATURE << ")\n";
    return EXIT_OK;
  }
  try {
    return serve();
  } catch (const std::exception& e) {
    Poco::Logger::get("svcd").fatal(e.what());
    return EXIT_SOFTWARE;
  }
}

bool SvcdApp::layerConfiguration(ConfigLayers& layers, std::vector<std::string>& problems) {
  if (!config_file_.empty()) {
    if (!Poco::File(config_file_).exists()) {
      std::cerr << "svcd: configuration file " << config_file_ << " does not exist\n";
      return false;
    }
    layers.setConfigFile(config_file_);
  }
  for (const auto& s : sets_) {
    if (!layers.addSet(s)) {
      std::cerr << "svcd: --set needs key=value, got '" << s << "'\n";
      return false;
    }
  }
  problems = layers.build();
  auto validation = layers.validate();
  problems.insert(problems.end(), validation.begin(), validation.end());
  const auto& conf = config();
  configureLogging(conf.getString("log.format") == "json" ? "json" : "text",
                   problems.empty() ? conf.getString("log.level") : "information");
  return true;
}

int SvcdApp::checkConfig(ConfigLayers& layers, PluginHost& host,
                         const std::vector<std::string>& problems) {
  std::cout << layers.dump();
  for (const auto& p : problems) std::cerr << "error: " << p << "\n";
  if (problems.empty()) {
    std::cerr << "configuration OK (" << host.plugins().size() << " plugins)\n";
  }
  return problems.empty() ? EXIT_OK : EXIT_CONFIG;
}

int SvcdApp::printConfigReference(PluginHost& host, const std::vector<std::string>& problems) {
  if (config_reference_ != "markdown" && config_reference_ != "man") {
    std::cerr << "svcd: --config-reference takes no value or =man, got '" << config_reference_
              << "'\n";
    return EXIT_USAGE;
  }
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << "error: " << p << "\n";
    return EXIT_CONFIG;
  }
  std::vector<KeyOwner> owners = {
      {"svcd", "The kernel: HTTP server, database, plugin loading, operator listener, logging.",
       &kernelConfigKeys()}};
  for (const auto& p : host.plugins()) {
    const auto& info = p->plugin->info();
    owners.push_back({info.name, info.description, &info.config});
  }
  // By name, not load order: the reference reads the same whatever the directory's order.
  std::sort(owners.begin() + 1, owners.end(),
            [](const KeyOwner& a, const KeyOwner& b) { return a.name < b.name; });
  std::cout << configReference(
      owners, config_reference_ == "man" ? ReferenceFormat::kMan : ReferenceFormat::kMarkdown);
  return EXIT_OK;
}

int SvcdApp::serve() {
  const auto started = std::chrono::steady_clock::now();
  Poco::Logger& log = Poco::Logger::get("svcd");
  Poco::Util::LayeredConfiguration& conf = config();
  std::string exe_dir =
      Poco::Path(conf.getString("application.dir", Poco::Path::current())).toString();
  ConfigLayers layers(conf, exe_dir, processEnvironment());
  std::vector<std::string> problems;
  if (!layerConfiguration(layers, problems)) return EXIT_CONFIG;
  PluginHost host(conf, layers, conf.getString("data.dir"));
  if (problems.empty()) {
    try {
      host.load(conf.getString("plugins.dir"), conf.getString("plugins.enabled"));
    } catch (const PluginError& e) {
      problems.push_back(e.what());
    }
  }
  if (check_config_) return checkConfig(layers, host, problems);
  if (!config_reference_.empty()) return printConfigReference(host, problems);
  stop_signals::serving();
  if (!problems.empty()) {
    for (const auto& p : problems) log.fatal(p);
    bool plugin_problem = problems.back().rfind("plugin '", 0) == 0;
    return plugin_problem ? EXIT_SOFTWARE : EXIT_CONFIG;
  }
  raiseOpenFileLimit(log);

  // Whatever umask svcd was started with, what it makes is its user's alone: the data directory
  // 0700; the database, keys, spool and blobs 0600 (SQLite gives its -wal and -shm files the
  // database's mode).
  ::umask(077);
  const std::string data_dir = conf.getString("data.dir");
  Poco::File(data_dir).createDirectories();
  if (const std::string problem = sqliteFilesProblem(conf.getString("db.url")); !problem.empty()) {
    log.fatal(problem);
    return EXIT_CONFIG;
  }
  const int threads = conf.getInt("server.threads");
  std::unique_ptr<SqlDatabase> db;
  try {
    db = openDatabase(conf, threads);
  } catch (const std::exception& e) {
    log.fatal("database: " + databaseErrorText(e));
    return EXIT_CONFIG;
  }

  // Listen before the plugins configure: with server.port=0 the port is only known now.
  ApiSocket api_socket;
  try {
    api_socket = listenForApi(conf);
  } catch (const Poco::Exception& e) {
    log.fatal("cannot listen on " + conf.getString("server.host") + ":" +
              conf.getString("server.port") + ": " + e.displayText());
    return EXIT_CONFIG;
  }
  Poco::Net::ServerSocket& socket = api_socket.socket;

  Router router;
  ServiceTable services;
  // Shared with the plugins that revoke access: it lives as long as the last of them holds it.
  auto access = std::make_shared<AccessWatch>(*db);
  services.offer(sdk::kAccessRevocationsService, access);
  EventLog events(*db, conf.getInt("events.retention_days"));
  EventTypeRegistry& event_types = host.eventTypes();
  events.setEventTypes(&event_types);
  events.checkObjects(conf.getBool("server.check_responses"));
  Metrics metrics;
  StreamHub hub(static_cast<std::size_t>(conf.getInt("server.stream_buffer_bytes")),
                std::chrono::seconds(conf.getInt("server.send_timeout_seconds")));

  const ApiInfo api_info{kVersion, conf.getString("public.base_url")};
  addKernelRoutes(router, events, event_types, host, *db, api_info);
  McpServer mcp(router, api_info);
  addMcpRoutes(router, mcp);

  // The operator listener's routes: the kernel's, then any plugin's kOperator routes.
  Router operator_router;
  const std::string admin_listen = conf.getString("admin.listen");
  std::string admin_token;
  if (!admin_listen.empty()) {
    admin_token = operatorToken(conf.getString("admin.token"), data_dir, log);
    const bool testing_clock = conf.getBool("testing.clock");
    if (testing_clock) {
      log.warning("testing.clock is on: the operator listener can move this server's clock");
    }
    addOperatorRoutes(operator_router, metrics, host, testing_clock);
  }

  // The kernel's gauges are registered before the plugins configure, so a plugin's series can
  // never take one of their names.
  addKernelGauges(metrics, *db, events, hub);

  const PluginsEndFirst plugins_end_first(host, services);
  try {
    host.prepare(*db, events, services, router, operator_router, &metrics);
  } catch (const PluginError& e) {
    log.fatal(e.what());
    return exitCodeFor(e);
  }

  std::unique_ptr<AccessLog> access_log;
  if (Poco::Logger::get("access").information()) {
    access_log = std::make_unique<AccessLog>(conf.getString("log.format") == "json");
  }
  Runtime runtime = apiRuntime(conf, router, services, hub, metrics, access_log.get());
  runtime.dormant_paths = host.dormantPaths();
  runtime.access = access.get();
  mcp.setRuntime(&runtime);

  std::unique_ptr<ApiServer> api;
  try {
    api = std::make_unique<ApiServer>(runtime, socket, api_socket.tls, threads,
                                      conf.getInt("server.concurrency"), apiConnectionLimits(conf),
                                      conf.getInt("server.max_connections"),
                                      conf.getInt("server.max_connections_per_address"));
  } catch (const Poco::Exception& e) {
    log.fatal("cannot serve on " + socket.address().toString() + ": " + e.displayText());
    return EXIT_CONFIG;
  }

  // The operator listener: the same pipeline on its own loopback socket, every route needing the
  // operator token.
  Runtime operator_runtime = runtime;
  operator_runtime.router = &operator_router;
  operator_runtime.operator_token = admin_token;
  std::unique_ptr<ApiServer> admin;
  if (!admin_listen.empty()) {
    try {
      admin = operatorServer(operator_runtime, admin_listen);
    } catch (const Poco::Exception& e) {
      log.fatal("cannot start the operator listener on " + admin_listen + ": " + e.displayText());
      return EXIT_CONFIG;
    } catch (const std::exception& e) {
      log.fatal("cannot start the operator listener on " + admin_listen + ": " + e.what());
      return EXIT_CONFIG;
    }
  }

  hub.start();
  events.start();
  access->start();
  try {
    host.start();
  } catch (const PluginError& e) {
    log.fatal(e.what());
    events.stop();
    access->stop();
    host.stop();
    hub.stop();
    return exitCodeFor(e);
  }
  api->start();
  if (admin) admin->start();
  MemoryRelease memory_release;
  memory_release.start();
  const double ready_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  log.information("svcd ready: api " + api_socket.scheme + "://" + conf.getString("server.host") +
                  ":" + std::to_string(api->port()) +
                  (admin ? " admin http://" +
                               Poco::Net::SocketAddress(admin_listen).host().toString() + ":" +
                               std::to_string(admin->port())
                         : std::string(" admin disabled")) +
                  " plugins " + std::to_string(host.plugins().size()) + " in " +
                  std::to_string(static_cast<int>(ready_ms)) + " ms");

  stop_signals::wait();

  log.information("svcd stopping: draining in-flight requests");
  bool drained = api->drain(std::chrono::seconds(conf.getInt("server.drain_seconds")));
  if (!drained) log.warning("some requests did not finish within server.drain_seconds");
  events.stop();
  access->stop();
  hub.stop();
  if (admin) admin->drain(std::chrono::seconds(1));
  host.stop();
  services.clear();
  api.reset();
  log.information("svcd stopped");
  if (access_log) access_log->flush();
  return EXIT_OK;
}

}  // namespace svc::kernel
