// The integration harness: starts the real build/bin/svcd on a free port with a temporary data
// directory and plugin directory, on SQLite or (when SVC_TEST_DB=mariadb) on a fresh MariaDB
// database, and talks HTTP to it over loopback.
#pragma once

#include <Poco/JSON/Object.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace svc::testing {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  ///< lower-case names
  std::string body;
  /// @return the body parsed as a JSON object (fails the test when it is not one).
  Poco::JSON::Object::Ptr json() const;
  /// @return the contract's error `code`, or "" when absent.
  std::string code() const;
  std::string header(const std::string& name) const;
};

/// One HTTP request over a new connection. @param headers extra headers.
HttpReply http(int port, const std::string& method, const std::string& path,
               const std::string& body = "", std::map<std::string, std::string> headers = {});

/// Sends raw bytes on a new connection and returns everything the server answers until it
/// closes or `timeout_ms` passes.
std::string rawExchange(int port, const std::string& bytes, int timeout_ms = 3000);

/// Sends raw bytes on a new connection and reads what the server answers until every one of
/// `needles` is in it, the server closes, or `timeout_ms` passes (a deadline for a slow machine:
/// it returns as soon as they are there). For streams, which do not close.
std::string readUntil(int port, const std::string& bytes, const std::vector<std::string>& needles,
                      int timeout_ms = 15000);
/// The event stream (GET /api/events/stream/?query) as `key` sees it, read as readUntil does
/// until every one of `needles` is in it with the event holding it whole. What comes after may
/// be cut off; with `settle_ms`, reading goes on until nothing came for that long (for a test
/// that looks for what must not be there: it can only miss a late event, not fail wrongly).
std::string eventStream(int port, const std::string& key, const std::string& query,
                        const std::vector<std::string>& needles, int settle_ms = 0,
                        int timeout_ms = 15000);

/// A blocking TCP connection to 127.0.0.1:port from the loopback address `source` (127.0.0.x, to
/// act as several clients). @return its descriptor, or -1.
int connectFrom(const std::string& source, int port);
/// @return what the peer sends until it closes or `timeout_ms` passes without a byte.
std::string readAvailable(int fd, int timeout_ms);
/// @return what the peer sends until `needle` is in it, it closes, or `timeout_ms` passes (a
/// deadline for a slow machine: it returns as soon as the needle is there).
std::string readUntilFd(int fd, const std::string& needle, int timeout_ms);
/// Raises this process's open-files soft limit. @return true when it is now at least `want`.
bool raiseFileLimit(unsigned long want);

/// @return headers for a JSON request with `Authorization: Bearer token`.
inline std::map<std::string, std::string> bearer(const std::string& token) {
  return {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
}

/// Runs a shell command. @return its exit code and everything it printed (stdout and stderr).
std::pair<int, std::string> runCommand(const std::string& cmd);

/// @return "sqlite" or "mariadb": which database this run uses.
std::string databaseKind();
/// Runs statements on a stopped svcd's database (its dbUrl()), as an operator's client would:
/// the sqlite3 command, or a MySQL session. Fails the test on an error.
void runSql(const std::string& db_url, const std::vector<std::string>& statements);
/// Everything a database holds, read past svcd: the SQLite file and its write-ahead log byte for
/// byte, or a dump of the MariaDB database. @param db_url svcd's database. @return the bytes.
std::string databaseBytes(const std::string& db_url);

class Svcd {
 public:
  struct Options {
    std::vector<std::string> plugins = {"testkit"};  ///< test plugins linked into plugins.dir
    std::vector<std::string> args;                   ///< extra svcd arguments
    std::map<std::string, std::string> env;          ///< extra environment
    std::string db_url;  ///< share this database (another Svcd's dbUrl()) instead of a new one
  };
  Svcd();
  explicit Svcd(Options options);
  ~Svcd();
  Svcd(const Svcd&) = delete;
  Svcd& operator=(const Svcd&) = delete;

  /// Starts svcd and waits until it says it is ready. @return false when it exited instead.
  bool start();
  /// Starts svcd expecting it to refuse. @return its exit code (-1 if it did not exit in time).
  int startExpectingFailure();
  /// Starts svcd and returns at once, without waiting for it to be ready.
  void startInBackground() { launch(); }
  /// SIGTERM, then wait. @return the exit code.
  int terminate();
  /// SIGKILL, then reap.
  void kill9();
  /// @return whether the process is still running.
  bool running();

  HttpReply get(const std::string& path, std::map<std::string, std::string> headers = {}) {
    return http(port_, "GET", path, "", std::move(headers));
  }
  HttpReply post(const std::string& path, const std::string& body,
                 std::map<std::string, std::string> headers = {}) {
    headers.emplace("Content-Type", "application/json");
    return http(port_, "POST", path, body, std::move(headers));
  }
  int port() const { return port_; }
  int adminPort() const { return admin_port_; }
  std::string adminToken() const;
  std::string log() const;
  /// Waits (up to 30 s) until the log contains needle; the access log is written every 100 ms.
  /// @return the log.
  std::string waitForLog(const std::string& needle) const;
  const std::string& dataDir() const { return data_dir_; }
  const std::string& pluginDir() const { return plugin_dir_; }
  const std::string& dbUrl() const { return db_url_; }
  pid_t pid() const { return pid_; }

 private:
  void launch();
  int waitExit(int timeout_ms);
  Options options_;
  std::string root_, data_dir_, plugin_dir_, log_file_, db_url_, mysql_db_;
  pid_t pid_ = -1;
  int port_ = 0;
  int admin_port_ = 0;
};

/// @return svcd's admin /metrics text (a failure to read it fails the test).
std::string metricsOf(Svcd& svcd);
/// @return the value of an unlabelled sample in a /metrics text, or NaN when absent.
double sample(const std::string& text, const std::string& name);
/// Waits until svcd's unlabelled sample `name` is at least `at_least` (a held response open, an
/// event stream subscribed...), polling its /metrics; `timeout_ms` is a deadline for a slow
/// machine, it returns as soon as it is there. @return whether it got there.
bool waitForSample(Svcd& svcd, const std::string& name, double at_least, int timeout_ms = 30000);

/// A new account the way an installation without a browser makes one: the operator adds a local
/// user and approves a device login for them. @return the device-token answer (access, refresh,
/// management_key...), or an empty object after reporting a failure.
Poco::JSON::Object::Ptr operatorLogin(Svcd& svcd, const std::string& email);

/// The directory holding build/bin (svcd, svcctl).
std::string binDir();
/// The directory holding the test plugins.
std::string testPluginDir();

}  // namespace svc::testing
