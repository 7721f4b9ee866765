#include "harness.h"

#include <Poco/Data/MySQL/Connector.h>
#include <Poco/Data/Session.h>
#include <Poco/Environment.h>
#include <Poco/File.h>
#include <Poco/FileStream.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/StreamSocket.h>
#include <Poco/Path.h>
#include <Poco/StreamCopier.h>
#include <Poco/String.h>
#include <Poco/URI.h>
#include <Poco/UUIDGenerator.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

using namespace Poco::Data::Keywords;

namespace svc::testing {

std::string binDir() {
  return SVC_TEST_BIN_DIR;
}
std::string testPluginDir() {
  return SVC_TEST_PLUGIN_DIR;
}

Poco::JSON::Object::Ptr HttpReply::json() const {
  try {
    return Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
  } catch (...) {
    ADD_FAILURE() << "not a JSON object: " << body;
    return new Poco::JSON::Object;
  }
}

std::string HttpReply::code() const {
  try {
    auto o = Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
    return o->optValue<std::string>("code", "");
  } catch (...) {
    return "";
  }
}

std::string HttpReply::header(const std::string& name) const {
  auto it = headers.find(Poco::toLower(name));
  return it == headers.end() ? "" : it->second;
}

HttpReply http(int port, const std::string& method, const std::string& path,
               const std::string& body, std::map<std::string, std::string> headers) {
  Poco::Net::HTTPClientSession session("127.0.0.1", static_cast<Poco::UInt16>(port));
  session.setTimeout(Poco::Timespan(30, 0));
  Poco::Net::HTTPRequest request(method, path, Poco::Net::HTTPMessage::HTTP_1_1);
  for (auto& [k, v] : headers) request.set(k, v);
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    request.setContentLength(static_cast<std::streamsize>(body.size()));
  }
  std::ostream& out = session.sendRequest(request);
  out << body;
  Poco::Net::HTTPResponse response;
  std::istream& in = session.receiveResponse(response);
  HttpReply reply;
  reply.status = response.getStatus();
  for (auto& [k, v] : response) reply.headers[Poco::toLower(k)] = v;
  Poco::StreamCopier::copyToString(in, reply.body);
  return reply;
}

std::string rawExchange(int port, const std::string& bytes, int timeout_ms) {
  Poco::Net::StreamSocket socket;
  socket.connect(Poco::Net::SocketAddress("127.0.0.1", static_cast<Poco::UInt16>(port)));
  socket.setReceiveTimeout(Poco::Timespan(timeout_ms / 1000, (timeout_ms % 1000) * 1000));
  if (!bytes.empty()) socket.sendBytes(bytes.data(), static_cast<int>(bytes.size()));
  std::string out;
  char buf[4096];
  try {
    int n;
    while ((n = socket.receiveBytes(buf, sizeof buf)) > 0) out.append(buf, n);
  } catch (const Poco::TimeoutException&) {
  } catch (const Poco::Net::NetException&) {
  }
  return out;
}

namespace {

// Reads from a new connection until done(what came so far) and then nothing more for settle_ms,
// the server closes, or timeout_ms passes.
std::string readWhile(int port, const std::string& bytes,
                      const std::function<bool(const std::string&)>& done, int timeout_ms,
                      int settle_ms = 0) {
  Poco::Net::StreamSocket socket;
  socket.connect(Poco::Net::SocketAddress("127.0.0.1", static_cast<Poco::UInt16>(port)));
  socket.setReceiveTimeout(Poco::Timespan(0, 100000));
  if (!bytes.empty()) socket.sendBytes(bytes.data(), static_cast<int>(bytes.size()));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string out;
  char buf[4096];
  auto last_byte = std::chrono::steady_clock::now();
  const auto finished = [&] {
    return done(out) &&
           std::chrono::steady_clock::now() - last_byte >= std::chrono::milliseconds(settle_ms);
  };
  while (!finished() && std::chrono::steady_clock::now() < deadline) {
    try {
      const int n = socket.receiveBytes(buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
      last_byte = std::chrono::steady_clock::now();
    } catch (const Poco::TimeoutException&) {
    } catch (const Poco::Net::NetException&) {
      break;
    }
  }
  return out;
}

}  // namespace

std::string readUntil(int port, const std::string& bytes, const std::vector<std::string>& needles,
                      int timeout_ms) {
  return readWhile(
      port, bytes,
      [&](const std::string& out) {
        return std::all_of(needles.begin(), needles.end(),
                           [&](const std::string& n) { return out.find(n) != std::string::npos; });
      },
      timeout_ms);
}

std::string eventStream(int port, const std::string& key, const std::string& query,
                        const std::vector<std::string>& needles, int settle_ms, int timeout_ms) {
  return readWhile(
      port,
      "GET /api/events/stream/?" + query + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key +
          "\r\n\r\n",
      [&](const std::string& out) {
        // Every needle, and the event holding the last of them whole (up to its blank line).
        std::size_t last = 0;
        for (const auto& n : needles) {
          const std::size_t at = out.find(n);
          if (at == std::string::npos) return false;
          last = std::max(last, at);
        }
        return out.find("\n\n", last) != std::string::npos;
      },
      timeout_ms, settle_ms);
}

int connectFrom(const std::string& source, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string readAvailable(int fd, int timeout_ms) {
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

std::string readUntilFd(int fd, const std::string& needle, int timeout_ms) {
  timeval tv{0, 100000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string out;
  char buf[4096];
  while (out.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      break;
    }
  }
  return out;
}

std::string metricsOf(Svcd& svcd) {
  auto m = http(svcd.adminPort(), "GET", "/metrics", "",
                {{"Authorization", "Bearer " + svcd.adminToken()}});
  EXPECT_EQ(m.status, 200) << m.body;
  return m.body;
}

double sample(const std::string& text, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("(^|\n)" + name + " ([^\n]+)\n"))) return NAN;
  return std::stod(m[2]);
}

bool waitForSample(Svcd& svcd, const std::string& name, double at_least, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (sample(metricsOf(svcd), name) >= at_least) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool raiseFileLimit(unsigned long want) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < want && limit.rlim_max >= want) {
    limit.rlim_cur = want;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  ::getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur >= want;
}

std::pair<int, std::string> runCommand(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = ::pclose(p);
  return {WEXITSTATUS(status), out};
}

std::string databaseKind() {
  return Poco::Environment::get("SVC_TEST_DB", "sqlite") == "mariadb" ? "mariadb" : "sqlite";
}

Svcd::Svcd() : Svcd(Options{}) {}

Svcd::Svcd(Options options) : options_(std::move(options)) {
  // A directory of its own, new: TemporaryFile's names repeat with the process id, and a failed
  // test keeps its directory, so a later run could find another's plugins and data in it.
  char made[] = "/tmp/svcd-XXXXXX";
  if (!::mkdtemp(made)) throw std::runtime_error("cannot make a directory in /tmp");
  root_ = made;
  data_dir_ = root_ + "/data";
  plugin_dir_ = root_ + "/plugins";
  log_file_ = root_ + "/svcd.log";
  // A test that restarts on another's data names it with --set data.dir=...: that is where the
  // operator token (and everything else) is.
  for (const auto& a : options_.args) {
    if (a.rfind("data.dir=", 0) == 0) data_dir_ = a.substr(9);
  }
  Poco::File(data_dir_).createDirectories();
  Poco::File(plugin_dir_).createDirectories();
  for (const auto& p : options_.plugins) {
    std::string file = "svc_plugin_" + p + ".so";
    std::string target = testPluginDir() + "/" + file;
    if (!Poco::File(target).exists()) target = SVC_BUNDLED_PLUGIN_DIR "/" + file;
    EXPECT_EQ(::symlink(target.c_str(), (plugin_dir_ + "/" + file).c_str()), 0) << target;
    // The manifest the build wrote beside it, when it has one (kernel/plugin_manifest.h).
    const std::string manifest = target.substr(0, target.size() - 3) + ".json";
    if (Poco::File(manifest).exists()) {
      const std::string link = plugin_dir_ + "/svc_plugin_" + p + ".json";
      EXPECT_EQ(::symlink(manifest.c_str(), link.c_str()), 0) << manifest;
    }
  }
  if (!options_.db_url.empty()) {
    db_url_ = options_.db_url;
  } else if (databaseKind() == "mariadb") {
    static std::once_flag once;
    std::call_once(once, [] { Poco::Data::MySQL::Connector::registerConnector(); });
    std::string server = Poco::Environment::get("SVC_TEST_MYSQL_URL");  // mysql://u:p@h:port
    Poco::URI uri(server);
    std::string info = uri.getUserInfo();
    std::string user = info.substr(0, info.find(':'));
    std::string pass = info.find(':') == std::string::npos ? "" : info.substr(info.find(':') + 1);
    mysql_db_ = "svc_t_" +
                Poco::replace(
                    Poco::UUIDGenerator::defaultGenerator().createRandom().toString().substr(0, 13),
                    "-", "");
    Poco::Data::Session s("MySQL", "host=" + uri.getHost() +
                                       ";port=" + std::to_string(uri.getPort()) + ";user=" + user +
                                       ";password=" + pass);
    s << "CREATE DATABASE " + mysql_db_ + " CHARACTER SET utf8mb4", now;
    db_url_ = "mysql://" + info + "@" + uri.getHost() + ":" + std::to_string(uri.getPort()) + "/" +
              mysql_db_;
  } else {
    db_url_ = "sqlite:" + data_dir_ + "/svc.db";
  }
}

Svcd::~Svcd() {
  if (pid_ > 0 && running()) kill9();
  // Every answer and event was checked against its declaration (server.check_responses): one
  // that did not fit (a 500 the test may not have looked at, or a logged event) fails it here.
  if (pid_ > 0) {
    std::istringstream lines(log());
    for (std::string line; std::getline(lines, line);) {
      const bool mismatch = line.find("response_mismatch") != std::string::npos ||
                            line.find("event_mismatch") != std::string::npos;
      if (mismatch) ADD_FAILURE() << line;
    }
  }
  if (!mysql_db_.empty()) {
    try {
      std::string server = Poco::Environment::get("SVC_TEST_MYSQL_URL");
      Poco::URI uri(server);
      std::string info = uri.getUserInfo();
      Poco::Data::Session s("MySQL", "host=" + uri.getHost() +
                                         ";port=" + std::to_string(uri.getPort()) +
                                         ";user=" + info.substr(0, info.find(':')) +
                                         ";password=" + info.substr(info.find(':') + 1));
      s << "DROP DATABASE IF EXISTS " + mysql_db_, now;
    } catch (...) {
    }
  }
  if (!::testing::Test::HasFailure()) {
    try {
      Poco::File(root_).remove(true);
    } catch (...) {
    }
  } else {
    std::cerr << "svcd log kept at " << log_file_ << "\n";
  }
}

void Svcd::launch() {
  std::ostringstream cmd;
  cmd << "exec env";
  for (auto& [k, v] : options_.env) cmd << " " << k << "='" << v << "'";
  cmd << " '" << binDir() << "/svcd' --port 0 --data-dir '" << data_dir_
      << "' --set 'plugins.dir=" << plugin_dir_ << "' --set 'db.url=" << db_url_
      << "' --set admin.listen=127.0.0.1:0 --set email.smtp.listen=127.0.0.1:0"
      // Tests ask no DNS server off this machine: nothing answers on port 9, so inbound mail's
      // checks say temperror at once; a test that wants answers names its own dnsmasq.
      << " --set email.dns.server=127.0.0.1:9"
      << " --set server.drain_seconds=5 --set server.check_responses=true"
      // No fsync on SQLite: what kill -9 tests check survives a crashed process either way
      // (a commit is in the WAL file); only a machine's crash needs the disk.
      << " --set db.sqlite.synchronous=off";
  for (auto& a : options_.args) cmd << " '" << a << "'";
  cmd << " >> '" << log_file_ << "' 2>&1";
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.str().c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
}

bool Svcd::start() {
  std::size_t before = log().size();
  launch();
  static const std::regex ready(
      R"(svcd ready: api https?://[^:]+:(\d+) admin (?:http://[^:]+:(\d+)|disabled))");
  // 60 s: a loaded machine under the sanitizers may take long to start it; ready is seen at once.
  for (int i = 0; i < 6000; ++i) {
    std::string text = log().substr(before);
    std::smatch m;
    if (std::regex_search(text, m, ready)) {
      port_ = std::stoi(m[1]);
      admin_port_ = m[2].matched ? std::stoi(m[2]) : 0;
      return true;
    }
    if (!running()) {
      ADD_FAILURE() << "svcd exited before it was ready:\n" << log();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "svcd was not ready within 60 s:\n" << log();
  return false;
}

int Svcd::startExpectingFailure() {
  launch();
  return waitExit(10000);
}

int Svcd::waitExit(int timeout_ms) {
  for (int i = 0; i < timeout_ms / 5; ++i) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

bool Svcd::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

int Svcd::terminate() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int code = waitExit(20000);
  if (code == -1 && pid_ > 0) kill9();
  return code;
}

void Svcd::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string Svcd::adminToken() const {
  std::ifstream in(data_dir_ + "/admin.token");
  std::string token;
  std::getline(in, token);
  return token;
}

std::string Svcd::waitForLog(const std::string& needle) const {
  std::string text;
  for (int i = 0; i < 3000; ++i) {
    text = log();
    if (text.find(needle) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return text;
}

Poco::JSON::Object::Ptr operatorLogin(Svcd& svcd, const std::string& email) {
  auto op = [&](const std::string& path, const std::string& body) {
    return http(svcd.adminPort(), "POST", path, body, bearer(svcd.adminToken()));
  };
  auto user =
      op("/admin/auth/users/", "{\"email\":\"" + email + "\",\"password\":\"correct horse\"}");
  EXPECT_EQ(user.status, 201) << user.body;
  auto d = svcd.post("/api/auth/device/", "").json();
  auto approved = op("/admin/auth/device/approve/", "{\"user_code\":\"" +
                                                        d->getValue<std::string>("user_code") +
                                                        "\",\"user\":\"" + email + "\"}");
  EXPECT_EQ(approved.status, 200) << approved.body;
  auto t = svcd.post("/api/auth/device/token/",
                     "{\"device_code\":\"" + d->getValue<std::string>("device_code") + "\"}");
  EXPECT_EQ(t.status, 200) << t.body;
  return t.status == 200 ? t.json() : Poco::JSON::Object::Ptr(new Poco::JSON::Object);
}

std::string Svcd::log() const {
  std::ifstream in(log_file_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs statements on a stopped svcd's database, as an operator's client would.
void runSql(const std::string& db_url, const std::vector<std::string>& statements) {
  if (databaseKind() == "sqlite") {
    for (const auto& sql : statements) {
      auto [rc, out] = runCommand("sqlite3 " + db_url.substr(7) + " \"" + sql + "\" 2>&1");
      ASSERT_EQ(rc, 0) << sql << ": " << out;
    }
    return;
  }
  Poco::URI uri(db_url);  // mysql://user:password@host:port/database
  const std::string info = uri.getUserInfo();
  Poco::Data::Session s(
      "MySQL", "host=" + uri.getHost() + ";port=" + std::to_string(uri.getPort()) + ";user=" +
                   info.substr(0, info.find(':')) + ";password=" + info.substr(info.find(':') + 1) +
                   ";db=" + uri.getPath().substr(1));
  for (const auto& sql : statements) s << sql, Poco::Data::Keywords::now;
}

std::string databaseBytes(const std::string& db_url) {
  if (databaseKind() == "sqlite") {
    std::string bytes;
    for (const std::string& file : {db_url.substr(7), db_url.substr(7) + "-wal"}) {
      std::ifstream in(file, std::ios::binary);
      bytes += std::string(std::istreambuf_iterator<char>(in), {});
    }
    return bytes;
  }
  Poco::URI uri(db_url);
  const std::string info = uri.getUserInfo();
  auto [rc, out] =
      runCommand("mariadb-dump --skip-extended-insert -h " + uri.getHost() + " -P " +
                 std::to_string(uri.getPort()) + " -u " + info.substr(0, info.find(':')) + " -p" +
                 info.substr(info.find(':') + 1) + " " + uri.getPath().substr(1));
  EXPECT_EQ(rc, 0) << out;
  return out;
}

}  // namespace svc::testing

// The MariaDB run cannot run without a server: fail when the test command promised one, and
// report "skipped" (exit 77, ctest's SKIP_RETURN_CODE) when run by hand without one.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (svc::testing::databaseKind() == "mariadb" && !Poco::Environment::has("SVC_TEST_MYSQL_URL")) {
    if (Poco::Environment::get("SVC_TEST_REQUIRE_MYSQL", "") == "1") {
      std::cerr << "SVC_TEST_MYSQL_URL is not set but SVC_TEST_REQUIRE_MYSQL=1\n";
      return 1;
    }
    std::cerr << "skipped: SVC_TEST_DB=mariadb needs SVC_TEST_MYSQL_URL (tools/test.sh sets it)\n";
    return 77;
  }
  return RUN_ALL_TESTS();
}
