#include "config.h"

#include <Poco/DirectoryIterator.h>
#include <Poco/File.h>
#include <Poco/NumberParser.h>
#include <Poco/Path.h>
#include <Poco/String.h>
#include <Poco/URI.h>
#include <Poco/Util/PropertyFileConfiguration.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace svc::kernel {

namespace {
// Precedence in Poco's LayeredConfiguration: the lower number wins.
constexpr int kPrioSet = -500;
constexpr int kPrioEnv = -400;
constexpr int kPrioPluginFile = -300;
constexpr int kPrioMainFile = -200;
constexpr int kPrioDefaults = 500;
}  // namespace

const std::vector<sdk::ConfigKey>& kernelConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      {"server.host", "127.0.0.1", "address the HTTP API listens on", false, true},
      {"server.port", "8080", "port the HTTP API listens on", false, true},
      {"server.threads", "64", "worker threads in all (more serve while some are blocked)", false},
      {"server.concurrency", "0", "workers serving at once when none is blocked (0: two per core)",
       false},
      {"server.queue", "1024", "connections waiting to be accepted (the listen backlog)", false},
      {"server.max_body_bytes", "1048576", "largest request body accepted (413 above)", false},
      {"server.idle_timeout_seconds", "15", "an idle keep-alive connection is closed after", false},
      {"server.request_timeout_seconds", "30", "a request body must arrive whole within", false},
      {"server.header_timeout_seconds", "10", "a request head must arrive whole within", false},
      {"server.body_timeout_seconds", "10", "longest pause between two parts of a body", false},
      {"server.send_timeout_seconds", "30", "an answer the client does not read is dropped after",
       false},
      {"server.max_connections", "20000",
       "connections in all, held responses included (0: no limit; 503 beyond it)", false},
      {"server.max_connections_per_address", "256",
       "connections one client address may hold (0: no limit; 503 beyond it)", false},
      {"server.reuse_port", "false",
       "share the port with other processes (SO_REUSEPORT); otherwise a port in use stops svcd",
       false},
      {"server.drain_seconds", "10", "on SIGTERM, in-flight requests may finish within", false},
      {"server.stream_buffer_bytes", "1048576",
       "held-response bytes queued before a slow peer "
       "is disconnected",
       false},
      {"server.check_responses", "false",
       "tests: check every answer and event against its declaration (500 response_mismatch, "
       "logged event_mismatch)",
       false},
      {"server.tls.cert", "", "PEM certificate file; with server.tls.key, serve HTTPS", false},
      {"server.tls.key", "", "PEM private key file for server.tls.cert", false},
      {"data.dir", "", "directory for the database and files (default: <prefix>/var/lib/svc)",
       false, true},
      {"db.url", "sqlite:${data.dir}/svc.db", "sqlite:PATH or mysql://user:pass@host:port/db",
       true},
      {"db.pool_size", "0", "database sessions in the pool (0: server.threads + 4)", false},
      {"db.sqlite.synchronous", "full",
       "SQLite only: full (a commit is on disk before it is acknowledged), normal, or off "
       "(tests only: no fsync; a commit survives svcd's crash, not the machine's)",
       false},
      {"plugins.dir", "", "directory of plugin libraries (default: <prefix>/lib/svc/plugins)",
       false},
      {"plugins.enabled", "*", "comma list of plugins to load; * loads every one in plugins.dir",
       false},
      {"admin.listen", "127.0.0.1:8081", "host:port of the operator listener (loopback only)",
       false},
      {"admin.token", "", "operator token; empty: generated into data.dir/admin.token", true},
      {"public.base_url", "http://${server.host}:${server.port}", "the API's public URL", false,
       true},
      {"log.level", "information",
       "fatal, critical, error, warning, notice, information, debug, "
       "trace",
       false},
      {"log.format", "text", "text or json (one JSON object a line)", false},
      {"events.retention_days", "7", "how long the event log keeps events", false},
      {"testing.clock", "false",
       "tests only: POST /admin/clock/ on the operator listener moves the clock forward", false},
  };
  return keys;
}

std::string envNameForKey(const std::string& key) {
  std::string name = "SVC_";
  for (char c : key) {
    name.push_back(c == '.' || c == '-'
                       ? '_'
                       : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return name;
}

ConfigLayers::ConfigLayers(Poco::Util::LayeredConfiguration& target, std::string exe_dir,
                           std::map<std::string, std::string> environment)
    : target_(target),
      exe_dir_(std::move(exe_dir)),
      environment_(std::move(environment)),
      defaults_(new Poco::Util::MapConfiguration),
      env_(new Poco::Util::MapConfiguration),
      sets_layer_(new Poco::Util::MapConfiguration) {}

bool ConfigLayers::addSet(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  sets_.emplace_back(Poco::trim(assignment.substr(0, eq)), assignment.substr(eq + 1));
  return true;
}

std::vector<std::string> ConfigLayers::build() {
  std::vector<std::string> problems;
  Poco::Path prefix(exe_dir_);
  prefix.makeDirectory().popDirectory();  // <prefix>/bin -> <prefix>
  for (const auto& key : kernelConfigKeys()) {
    declared_[key.key] = key;
    defaults_->setString(key.key, key.default_value);
  }
  defaults_->setString("data.dir", Poco::Path(prefix).append("var/lib/svc").toString());
  defaults_->setString("plugins.dir", Poco::Path(prefix).append("lib/svc/plugins").toString());
  target_.add(defaults_, kPrioDefaults, false);

  std::string main_file = config_file_;
  if (main_file.empty()) {
    main_file = Poco::Path(prefix).append("etc/svc/svcd.properties").toString();
    if (!Poco::File(main_file).exists()) main_file.clear();
  }
  if (!main_file.empty()) {
    try {
      Poco::AutoPtr<Poco::Util::PropertyFileConfiguration> file(
          new Poco::Util::PropertyFileConfiguration(main_file));
      target_.add(file, kPrioMainFile, false);
      config_dir_ = Poco::Path(main_file).makeAbsolute().parent().toString();
    } catch (const Poco::Exception& e) {
      problems.push_back("cannot read configuration file " + main_file + ": " + e.displayText());
    }
  } else {
    config_dir_ = Poco::Path(prefix).append("etc/svc/").toString();
  }

  Poco::File plugin_conf(Poco::Path(config_dir_).append("plugins/").toString());
  if (plugin_conf.exists() && plugin_conf.isDirectory()) {
    std::vector<std::string> files;
    for (Poco::DirectoryIterator it(plugin_conf); it != Poco::DirectoryIterator(); ++it) {
      if (Poco::endsWith(it.name(), std::string(".properties"))) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      try {
        target_.add(new Poco::Util::PropertyFileConfiguration(f), kPrioPluginFile, false);
      } catch (const Poco::Exception& e) {
        problems.push_back("cannot read plugin configuration file " + f + ": " + e.displayText());
      }
    }
  }

  target_.add(env_, kPrioEnv, false);
  applyEnvironment();

  for (auto& [key, value] : sets_) sets_layer_->setString(key, value);
  target_.add(sets_layer_, kPrioSet, false);
  return problems;
}

void ConfigLayers::applyEnvironment() {
  // Environment names lose the dots, so they are matched against the keys we know of: declared
  // ones and those any file sets. SVC_SERVER_MAX_BODY_BYTES is then unambiguous.
  std::set<std::string> known;
  for (auto& [key, decl] : declared_) known.insert(key);
  Poco::Util::AbstractConfiguration::Keys roots;
  std::vector<std::string> stack;
  target_.keys(roots);
  for (auto& r : roots) stack.push_back(r);
  while (!stack.empty()) {
    std::string key = stack.back();
    stack.pop_back();
    Poco::Util::AbstractConfiguration::Keys children;
    target_.keys(key, children);
    if (children.empty()) known.insert(key);
    for (auto& c : children) stack.push_back(key + "." + c);
  }
  for (const auto& key : known) {
    auto it = environment_.find(envNameForKey(key));
    if (it != environment_.end()) env_->setString(key, it->second);
  }
}

void ConfigLayers::addDeclaredKeys(const std::vector<sdk::ConfigKey>& keys) {
  for (const auto& key : keys) {
    declared_[key.key] = key;
    if (!defaults_->hasProperty(key.key)) defaults_->setString(key.key, key.default_value);
    auto it = environment_.find(envNameForKey(key.key));
    if (it != environment_.end()) env_->setString(key.key, it->second);
  }
}

bool ConfigLayers::isSecret(const std::string& key) const {
  // A declared key says what it is: auth.rate.token_per_minute is a number, not a token.
  auto it = declared_.find(key);
  if (it != declared_.end()) return it->second.secret;
  // Nothing loaded knows this key (a disabled plugin's, a typo): judge by its name, erring on
  // the side of hiding.
  std::string lower = Poco::toLower(key);
  for (const char* word : {"password", "passphrase", "secret", "token", "credential", "api_key",
                           "apikey", "private"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

namespace {

bool isInt(const std::string& s, int min, int max) {
  int v = 0;
  return Poco::NumberParser::tryParse(s, v) && v >= min && v <= max;
}

// db.url keeps its shape but not its password.
std::string redactUrl(const std::string& url) {
  if (url.rfind("mysql://", 0) != 0) return url;
  auto at = url.find('@');
  auto colon = url.find(':', 8);
  if (at == std::string::npos || colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

}  // namespace

std::vector<std::string> ConfigLayers::validate() const {
  std::vector<std::string> problems;
  auto get = [&](const std::string& k) { return target_.getString(k, ""); };
  if (!isInt(get("server.port"), 0, 65535)) {
    problems.push_back("server.port must be 0-65535 (0: any free port)");
  }
  if (!isInt(get("server.threads"), 1, 1024)) problems.push_back("server.threads must be 1-1024");
  if (!isInt(get("server.concurrency"), 0, 1024)) {
    problems.push_back("server.concurrency must be 0-1024");
  }
  if (!isInt(get("server.queue"), 1, 100000)) problems.push_back("server.queue must be 1-100000");
  if (!isInt(get("server.max_body_bytes"), 1, 1 << 30)) {
    problems.push_back("server.max_body_bytes must be 1-1073741824");
  }
  for (const char* k : {"server.idle_timeout_seconds", "server.request_timeout_seconds",
                        "server.header_timeout_seconds", "server.body_timeout_seconds",
                        "server.send_timeout_seconds", "server.drain_seconds"}) {
    if (!isInt(get(k), 1, 86400)) problems.push_back(std::string(k) + " must be 1-86400");
  }
  if (!isInt(get("server.max_connections"), 0, 10000000)) {
    problems.push_back("server.max_connections must be 0-10000000");
  }
  if (!isInt(get("server.max_connections_per_address"), 0, 1000000)) {
    problems.push_back("server.max_connections_per_address must be 0-1000000");
  }
  for (const char* key : {"server.reuse_port", "server.check_responses"}) {
    if (get(key) != "true" && get(key) != "false") {
      problems.push_back(std::string(key) + " must be true or false");
    }
  }
  if (!isInt(get("server.stream_buffer_bytes"), 1024, 1 << 30)) {
    problems.push_back("server.stream_buffer_bytes must be 1024-1073741824");
  }
  if (!isInt(get("db.pool_size"), 0, 4096)) problems.push_back("db.pool_size must be 0-4096");
  bool cert = !get("server.tls.cert").empty(), key = !get("server.tls.key").empty();
  if (cert != key) problems.push_back("server.tls.cert and server.tls.key must be set together");
  for (const char* k : {"server.tls.cert", "server.tls.key"}) {
    std::string path = get(k);
    if (!path.empty() && !Poco::File(path).exists()) {
      problems.push_back(std::string(k) + ": file " + path + " does not exist");
    }
  }
  std::string url = get("db.url");
  if (url.rfind("sqlite:", 0) == 0) {
    if (url.size() == 7) problems.push_back("db.url: sqlite: needs a path");
  } else if (url.rfind("mysql://", 0) == 0) {
    try {
      Poco::URI uri(url);
      if (uri.getHost().empty() || uri.getPath().size() < 2) {
        problems.push_back("db.url: mysql://user:pass@host:port/db needs a host and a database");
      }
    } catch (const Poco::Exception& e) {
      problems.push_back("db.url is not a valid URL: " + e.displayText());
    }
  } else {
    problems.push_back("db.url must start with sqlite: or mysql://");
  }
  std::string level = get("log.level");
  static const std::set<std::string> levels = {
      "none", "fatal", "critical", "error", "warning", "notice", "information", "debug", "trace"};
  if (!levels.count(level)) problems.push_back("log.level '" + level + "' is not a log level");
  std::string format = get("log.format");
  if (format != "text" && format != "json") problems.push_back("log.format must be text or json");
  const std::string synchronous = Poco::toLower(get("db.sqlite.synchronous"));
  if (synchronous != "full" && synchronous != "normal" && synchronous != "off") {
    problems.push_back("db.sqlite.synchronous must be full, normal or off");
  }
  std::string admin = get("admin.listen");
  if (!admin.empty() && admin.rfind("unix:", 0) != 0) {
    auto colon = admin.rfind(':');
    if (colon == std::string::npos || !isInt(admin.substr(colon + 1), 0, 65535)) {
      problems.push_back("admin.listen must be host:port, unix:PATH, or empty to disable");
    }
  }
  Poco::File plugins(get("plugins.dir"));
  if (!plugins.exists() || !plugins.isDirectory()) {
    problems.push_back("plugins.dir " + get("plugins.dir") + " is not a directory");
  }
  return problems;
}

std::string ConfigLayers::dump() const {
  std::set<std::string> keys;
  std::vector<std::string> stack;
  Poco::Util::AbstractConfiguration::Keys roots;
  target_.keys(roots);
  for (auto& r : roots) {
    if (r != "system" && r != "application") stack.push_back(r);
  }
  while (!stack.empty()) {
    std::string key = stack.back();
    stack.pop_back();
    Poco::Util::AbstractConfiguration::Keys children;
    target_.keys(key, children);
    if (target_.hasProperty(key)) keys.insert(key);
    for (auto& c : children) stack.push_back(key + "." + c);
  }
  std::ostringstream out;
  for (const auto& key : keys) {
    std::string value;
    try {
      value = target_.getString(key);
    } catch (const Poco::Exception&) {
      value = target_.getRawString(key, "");
    }
    if (key == "db.url") {
      value = redactUrl(value);
    } else if (isSecret(key) && !value.empty()) {
      value = "***";
    }
    out << key << " = " << value << "\n";
  }
  return out.str();
}

}  // namespace svc::kernel
