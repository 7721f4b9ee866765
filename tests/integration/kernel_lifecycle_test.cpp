// The real svcd's life: plugin loading and refusals, configuration layers, the operator listener,
// draining on SIGTERM, durability across kill -9, many held responses at once, and connections that
// wait in epoll rather than in workers.
#include "harness.h"

#include <Poco/File.h>
#include <Poco/Net/AcceptCertificateHandler.h>
#include <Poco/Net/Context.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/HTTPSClientSession.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/SSLManager.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/StreamSocket.h>
#include <Poco/Pipe.h>
#include <Poco/PipeStream.h>
#include <Poco/Process.h>
#include <Poco/StreamCopier.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <regex>
#include <sstream>
#include <thread>

namespace svc::testing {
namespace {

int countLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

struct Refusal {
  std::vector<std::string> plugins;
  std::string enabled;
  std::string expected;  // what the one fatal line must say
};

class PluginRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(PluginRefusal, RefusesToStartWithOneLineNamingPluginAndCause) {
  const Refusal& c = GetParam();
  Svcd::Options o;
  o.plugins = c.plugins;
  if (!c.enabled.empty()) o.args = {"--set", "plugins.enabled=" + c.enabled};
  Svcd svcd(o);
  int code = svcd.startExpectingFailure();
  EXPECT_NE(code, 0);
  EXPECT_NE(code, -1) << "svcd did not exit";
  std::string log = svcd.log();
  EXPECT_EQ(countLines(log, "Fatal"), 1) << log;
  EXPECT_NE(log.find(c.expected), std::string::npos) << log;
  EXPECT_EQ(log.find("svcd ready"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(
    Kernel, PluginRefusal,
    ::testing::Values(
        Refusal{{"alpha"}, "alpha,ghost", "plugin 'ghost': file "},
        Refusal{{"wrongabi"}, "", "plugin 'wrongabi': SDK major version mismatch: "},
        Refusal{{"newerminor"}, "", "plugin 'newerminor': SDK minor version mismatch "},
        Refusal{{"debugstdlib"}, "", "plugin 'debugstdlib': build signature mismatch "},
        Refusal{{"nocreate"}, "", "plugin 'nocreate': missing export svc_plugin_create"},
        Refusal{{"alpha", "alphacopy"}, "", "plugin 'alpha': duplicate plugin name"},
        Refusal{{"needsghost"},
                "",
                "plugin 'needsghost': requires plugin 'ghost', which is not enabled"},
        Refusal{{"cyclea", "cycleb"}, "", "dependency cycle: cyclea -> cycleb -> cyclea"},
        Refusal{{"throwsconfigure"},
                "",
                "plugin 'throwsconfigure': failed to configure: configure refused on purpose"},
        Refusal{{"badmigration"},
                "",
                "plugin 'badmigration': failed to migrate: migration 1 (creates then fails) failed "
                "at statement 2"},
        Refusal{{"throwsstart", "alpha"},
                "",
                "plugin 'throwsstart': failed to start: start refused on purpose"}),
    [](const auto& info) { return info.param.plugins.front() + std::to_string(info.index); });

struct StageFailure {
  std::string stage;
  std::vector<std::string> plugins;
  std::vector<std::string> args;       // "{busy}": a port this test holds
  int exit_code;                       // 70 the plugin is to blame, 78 the configuration
  std::string expected;                // what the one fatal line must say
  std::vector<std::string> destroyed;  // fixtures that must have been destroyed
};

void PrintTo(const StageFailure& c, std::ostream* out) {
  *out << c.stage;
}

class PluginStageFailure : public ::testing::TestWithParam<StageFailure> {};

// Whatever stage a plugin fails at, and whatever it and the plugins before it hold by then
// (event subscriptions, held waits' threads, listeners, sessions), svcd says why in one line and
// exits with its code: the plugins are stopped and destroyed while the kernel's objects they hold
// still exist. A crash on the way out (an abort, a sanitizer's report) fails it.
TEST_P(PluginStageFailure, ExitsCleanlyWithItsCodeAndEndsThePluginsFirst) {
  const StageFailure& c = GetParam();
  // Bound without SO_REUSEPORT, so that no other socket can share the port.
  Poco::Net::ServerSocket busy;
  busy.bind(Poco::Net::SocketAddress("127.0.0.1", 0), false, false);
  busy.listen();
  Svcd::Options o;
  o.plugins = c.plugins;
  for (std::string a : c.args) {
    const auto at = a.find("{busy}");
    if (at != std::string::npos) a.replace(at, 6, std::to_string(busy.address().port()));
    o.args.push_back(a);
  }
  Svcd svcd(o);
  EXPECT_EQ(svcd.startExpectingFailure(), c.exit_code);
  const std::string log = svcd.log();
  EXPECT_EQ(countLines(log, "Fatal"), 1) << log;
  EXPECT_NE(log.find(c.expected), std::string::npos) << log;
  EXPECT_EQ(log.find("svcd ready"), std::string::npos) << log;
  for (const auto& name : c.destroyed) {
    EXPECT_NE(log.find("fixture '" + name + "' destroyed\n"), std::string::npos) << log;
  }
  for (const char* crash : {"destroyed while started", "the database is gone", "AddressSanitizer",
                            "runtime error:", "double free", "terminate called"}) {
    EXPECT_EQ(log.find(crash), std::string::npos) << crash << " in\n" << log;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernel, PluginStageFailure,
    ::testing::Values(
        StageFailure{"load",
                     {"holder", "nocreate"},
                     {},
                     70,
                     "plugin 'nocreate': missing export svc_plugin_create",
                     {}},
        StageFailure{"configure",
                     {"holder", "holdsthrowsconfigure"},
                     {},
                     78,
                     "plugin 'holdsthrowsconfigure': failed to configure: configure refused on "
                     "purpose",
                     {"holder", "holdsthrowsconfigure"}},
        StageFailure{"migrate",
                     {"holder", "holdsbadmigration"},
                     {},
                     70,
                     "plugin 'holdsbadmigration': failed to migrate: migration 1",
                     {"holder", "holdsbadmigration"}},
        StageFailure{"start",
                     {"holder", "holdsthrowsstart"},
                     {},
                     78,
                     "plugin 'holdsthrowsstart': failed to start: start refused on purpose",
                     {"holder", "holdsthrowsstart"}},
        // The email plugin's SMTP listener, started after its rule cache and waits subscribed.
        StageFailure{"listener_port_in_use",
                     {"holder", "auth", "identities", "email"},
                     {"--set", "email.smtp.listen=127.0.0.1:{busy}"},
                     78,
                     "plugin 'email': failed to start: ",
                     {"holder"}},
        StageFailure{"listener_host_unknown",
                     {"holder", "auth", "identities", "email"},
                     {"--set", "email.smtp.listen=no-such-host.invalid:2525"},
                     78,
                     "plugin 'email': failed to start: ",
                     {"holder"}},
        StageFailure{"api_port_in_use",
                     {"holder"},
                     {"--set", "server.port={busy}"},
                     78,
                     "cannot listen on ",
                     {}},
        StageFailure{"admin_port_in_use",
                     {"holder"},
                     {"--set", "admin.listen=127.0.0.1:{busy}"},
                     78,
                     "cannot start the operator listener on 127.0.0.1:",
                     {"holder"}}),
    [](const auto& info) { return info.param.stage; });

// @return every path under dir (dir included) that users other than its owner may use, with its
// mode; and whether the files named in `present` were there.
std::vector<std::string> notPrivate(const std::string& dir) {
  std::vector<std::string> open;
  auto check = [&](const std::filesystem::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
    if ((st.st_mode & 077) != 0) {
      std::ostringstream line;
      line << p.string() << " " << std::oct << (st.st_mode & 0777);
      open.push_back(line.str());
    }
  };
  check(dir);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) check(entry.path());
  return open;
}

// Started by hand with umask 022, svcd still makes its data directory 0700 and every file 0600:
// the database and its -wal and -shm, the operator token, the plugins' directories, keys and
// spool, while it runs and after it stops.
TEST(KernelFiles, TheDataDirectoryAndEveryFileArePrivateWhateverTheUmask) {
  const std::string root = Poco::TemporaryFile::tempName();
  const std::string data = root + "/var/svc";  // its parents made by svcd too
  Svcd::Options o;
  o.plugins = {"auth", "identities", "email", "vault"};
  o.args = {"--set", "data.dir=" + data};
  if (databaseKind() == "sqlite") {
    o.args.insert(o.args.end(), {"--set", "db.url=sqlite:" + data + "/svc.db"});
  }
  {
    Svcd svcd(o);
    std::filesystem::remove_all(root);  // the harness made it; svcd is to make it here
    const mode_t umask_before = ::umask(022);
    ASSERT_TRUE(svcd.start());
    ::umask(umask_before);
    auto key =
        operatorLogin(svcd, "files@example.com")->optValue<std::string>("management_key", "");
    EXPECT_EQ(
        http(svcd.port(), "POST", "/api/identities/", R"({"name":"files"})", bearer(key)).status,
        201);
    std::vector<std::string> expected = {"/admin.token", "/vault/master.key", "/email/spool"};
    if (databaseKind() == "sqlite") {
      expected.insert(expected.end(), {"/svc.db", "/svc.db-wal", "/svc.db-shm"});
    }
    for (const auto& file : expected) {
      EXPECT_TRUE(Poco::File(data + file).exists()) << data + file;
    }
    EXPECT_EQ(notPrivate(root), std::vector<std::string>{});
    EXPECT_EQ(svcd.terminate(), 0);
    EXPECT_EQ(notPrivate(root), std::vector<std::string>{});
  }
  std::filesystem::remove_all(root);
}

// A database file other users may read (the database itself, or its -wal or -shm, which hold
// its latest pages) is refused as the vault's key file is: exit 78, naming the file.
TEST(KernelFiles, ADatabaseFileOthersMayReadRefusesToStartNamingIt) {
  if (databaseKind() != "sqlite") GTEST_SKIP() << "no database file on MariaDB";
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  EXPECT_EQ(svcd.terminate(), 0);
  const std::string db = svcd.dbUrl().substr(7);
  for (const std::string suffix : {"", "-wal", "-shm"}) {
    const std::string file = db + suffix;
    if (!Poco::File(file).exists()) std::ofstream{file};  // empty: SQLite makes it anew
    for (mode_t mode : {0644, 0640, 0604, 0620}) {
      ASSERT_EQ(::chmod(file.c_str(), mode), 0) << file;
      const std::size_t before = svcd.log().size();
      EXPECT_EQ(svcd.startExpectingFailure(), 78) << file << " " << std::oct << mode;
      const std::string log = svcd.log().substr(before);
      EXPECT_EQ(countLines(log, "Fatal"), 1) << log;
      EXPECT_NE(log.find("database file " + file + ": other users may read it; make it mode 0600"),
                std::string::npos)
          << log;
    }
    ASSERT_EQ(::chmod(file.c_str(), 0600), 0) << file;
  }
  ASSERT_TRUE(svcd.start());
  EXPECT_EQ(svcd.get("/api/health/").status, 200);
  EXPECT_EQ(svcd.terminate(), 0);
}

struct HandshakeRefusal {
  std::string plugin;
  std::string cause;           // how the line goes on after "plugin '<name>': "
  std::string built_with;      // the SDK version the plugin says it was built for
  std::string signature_part;  // a piece of the plugin's signature the line shows
};

class PluginHandshake : public ::testing::TestWithParam<HandshakeRefusal> {};

// A plugin built for another SDK version or with another build signature is refused before any of
// its code runs, in one line naming its file, what it was built with and what this kernel needs;
// the plugins beside it are not blamed, and svcd starts with them once it is not enabled.
TEST_P(PluginHandshake, RefusesInOneLineNamingFileBuildAndNeedAndStartsWithoutIt) {
  const HandshakeRefusal& c = GetParam();
  Svcd::Options o;
  o.plugins = {"alpha", c.plugin, "beta"};
  Svcd refused(o);
  EXPECT_NE(refused.startExpectingFailure(), 0);
  std::string log = refused.log();
  EXPECT_EQ(countLines(log, "Fatal"), 1) << log;
  EXPECT_EQ(log.find("svcd ready"), std::string::npos) << log;
  auto at = log.find("plugin '" + c.plugin + "': " + c.cause);
  ASSERT_NE(at, std::string::npos) << log;
  std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find(refused.pluginDir() + "/svc_plugin_" + c.plugin + ".so was built with SDK " +
                      c.built_with + " ("),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(c.signature_part), std::string::npos) << line;
  EXPECT_NE(line.find(std::string("this kernel needs SDK ") + SVC_TEST_SDK_VERSION + " (compiler="),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("alpha"), std::string::npos) << line;
  EXPECT_EQ(line.find("beta"), std::string::npos) << line;

  // The same plugin directory, the refused plugin left out: the others serve.
  o.args = {"--set", "plugins.enabled=alpha,beta"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start()) << svcd.log();
  EXPECT_EQ(svcd.get("/api/alpha/").status, 200);
  EXPECT_EQ(svcd.get("/api/beta/").status, 200);
  EXPECT_EQ(svcd.get("/api/health/").json()->getArray("plugins")->size(), 2u);
  EXPECT_EQ(svcd.terminate(), 0);
}

std::string sdkVersionWithMinor(int offset) {
  std::string v = SVC_TEST_SDK_VERSION;
  auto dot = v.find('.');
  return v.substr(0, dot + 1) + std::to_string(std::stoi(v.substr(dot + 1)) + offset);
}

INSTANTIATE_TEST_SUITE_P(
    Kernel, PluginHandshake,
    ::testing::Values(
        HandshakeRefusal{"wrongabi", "SDK major version mismatch: ", "999.0", "compiler="},
        HandshakeRefusal{"newerminor", "SDK minor version mismatch (built for a newer SDK",
                         sdkVersionWithMinor(1), "compiler="},
        HandshakeRefusal{"debugstdlib", "build signature mismatch (differs in debug): ",
                         SVC_TEST_SDK_VERSION, ";debug=1;"}),
    [](const auto& info) { return info.param.plugin; });

TEST(KernelPlugins, ADisabledPluginsRoutesAnswer404AndItIsNotListed) {
  Svcd::Options o;
  o.plugins = {"testkit", "alpha", "beta"};
  o.args = {"--set", "plugins.enabled=alpha, beta"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  EXPECT_EQ(svcd.get("/api/alpha/").status, 200);
  EXPECT_EQ(svcd.get("/api/beta/").status, 200);
  EXPECT_EQ(svcd.get("/api/testkit/greeting/").status, 404);
  // testkit's services are absent with it: no authenticator answers for alpha's private route.
  auto priv = svcd.get("/api/alpha/private/", {{"Authorization", "Bearer mgmt-A"}});
  EXPECT_EQ(priv.status, 503);
  EXPECT_EQ(priv.code(), "service_unavailable");
  auto plugins = svcd.get("/api/health/").json()->getArray("plugins");
  ASSERT_EQ(plugins->size(), 2u);
  EXPECT_EQ(plugins->getObject(0)->getValue<std::string>("name"), "alpha");  // dependency first
  EXPECT_EQ(plugins->getObject(1)->getValue<std::string>("name"), "beta");
  EXPECT_EQ(svcd.terminate(), 0);
}

TEST(KernelPlugins, APathOfAnInstalledPluginThatIsNotEnabledSaysSo) {
  Svcd::Options o;
  o.plugins = {"testkit", "alpha", "beta"};
  o.args = {"--set", "plugins.enabled=testkit,alpha"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  EXPECT_EQ(svcd.get("/api/alpha/").status, 200);
  for (const std::string path : {"/api/beta/", "/api/beta", "/api/beta/anything/deeper/"}) {
    auto r = svcd.get(path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.code(), "feature_not_enabled") << path;
    EXPECT_NE(r.json()->getValue<std::string>("detail").find("'beta'"), std::string::npos);
  }
  // A typo is still a typo; a plugin that declares no paths (testkit here) cannot be told apart.
  EXPECT_EQ(svcd.get("/api/betamax/").code(), "not_found");
  // What beta serves is read from its manifest: its code is never loaded into svcd.
  std::ifstream maps("/proc/" + std::to_string(svcd.pid()) + "/maps");
  const std::string mapped((std::istreambuf_iterator<char>(maps)),
                           std::istreambuf_iterator<char>());
  EXPECT_NE(mapped.find("svc_plugin_alpha.so"), std::string::npos);
  EXPECT_EQ(mapped.find("svc_plugin_beta.so"), std::string::npos);
  EXPECT_EQ(svcd.terminate(), 0);
}

TEST(KernelPlugins, AFailedMigrationLeavesNothingBehind) {
  if (databaseKind() != "sqlite") GTEST_SKIP() << "MySQL DDL is not transactional";
  Svcd::Options o;
  o.plugins = {"badmigration"};
  Svcd svcd(o);
  EXPECT_NE(svcd.startExpectingFailure(), 0);
  Poco::Pipe out;
  std::string db = svcd.dbUrl().substr(7);
  Poco::ProcessHandle ph = Poco::Process::launch(
      "sqlite3", {db, "SELECT name FROM sqlite_master WHERE name LIKE 'fixture_%';"}, nullptr, &out,
      nullptr);
  Poco::PipeInputStream in(out);
  std::string tables;
  Poco::StreamCopier::copyToString(in, tables);
  ph.wait();
  EXPECT_EQ(tables, "");
}

TEST(KernelConfig, LayersApplyInOrderEndToEnd) {
  {
    Svcd::Options o;
    o.env = {{"SVC_TESTKIT_GREETING", "from-env"}};
    Svcd svcd(o);
    ASSERT_TRUE(svcd.start());
    EXPECT_EQ(svcd.get("/api/testkit/greeting/").json()->getValue<std::string>("greeting"),
              "from-env");
  }
  {
    Svcd::Options o;
    o.env = {{"SVC_TESTKIT_GREETING", "from-env"}};
    o.args = {"--set", "testkit.greeting=from-flag"};
    Svcd svcd(o);
    ASSERT_TRUE(svcd.start());
    EXPECT_EQ(svcd.get("/api/testkit/greeting/").json()->getValue<std::string>("greeting"),
              "from-flag");
  }
  {
    std::string file = "/tmp/svc-config-test-" + std::to_string(::getpid()) + ".properties";
    std::ofstream(file) << "testkit.greeting = from-file\nlog.format = json\n";
    Svcd::Options o;
    o.args = {"--config", file};
    Svcd svcd(o);
    ASSERT_TRUE(svcd.start());
    EXPECT_EQ(svcd.get("/api/testkit/greeting/").json()->getValue<std::string>("greeting"),
              "from-file");
    // JSON log lines: every line is an object with ts, level, logger, msg.
    std::string log = svcd.waitForLog("\"logger\":\"access\"");
    EXPECT_NE(log.find("{\"ts\":"), std::string::npos) << log;
    EXPECT_NE(log.find("\"logger\":\"access\""), std::string::npos) << log;
    EXPECT_NE(log.find("\"status\":\"200\""), std::string::npos) << log;
    std::remove(file.c_str());
  }
}

TEST(KernelConfig, CheckConfigPrintsTheEffectiveConfigurationRedacted) {
  std::string base = binDir() + "/svcd --set plugins.dir=" + testPluginDir() +
                     " --set plugins.enabled=testkit --set admin.token=hush-hush";
  auto [code, out] = runCommand(base + " --check-config");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("testkit.greeting = hello"), std::string::npos) << out;
  EXPECT_NE(out.find("testkit.api_secret = ***"), std::string::npos) << out;
  EXPECT_NE(out.find("admin.token = ***"), std::string::npos) << out;
  EXPECT_EQ(out.find("hush-hush"), std::string::npos) << out;
  EXPECT_EQ(out.find("s3cr3t"), std::string::npos) << out;

  auto [bad, why] =
      runCommand(base + " --check-config --set server.threads=0 --set log.format=xml");
  EXPECT_NE(bad, 0);
  EXPECT_NE(why.find("server.threads"), std::string::npos) << why;
  EXPECT_NE(why.find("log.format"), std::string::npos) << why;

  auto [broken, plugin_why] =
      runCommand(binDir() + "/svcd --check-config --set plugins.dir=" + testPluginDir() +
                 " --set plugins.enabled=wrongabi");
  EXPECT_NE(broken, 0);
  EXPECT_NE(plugin_why.find("plugin 'wrongabi'"), std::string::npos) << plugin_why;

  auto [v, version] = runCommand(binDir() + "/svcd --version");
  EXPECT_EQ(v, 0);
  EXPECT_NE(version.find(std::string("SDK ") + SVC_TEST_SDK_VERSION + ", compiler="),
            std::string::npos)
      << version;
  auto [h, help] = runCommand(binDir() + "/svcd --help");
  EXPECT_EQ(h, 0);
  for (const char* flag :
       {"--config", "--set", "--port", "--data-dir", "--check-config", "--version"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

// Each plugin's declared `secret` flag decides: every real secret of the bundled plugins is
// hidden, and a key that only sounds secret (auth.rate.token_per_minute) is shown.
TEST(KernelConfig, CheckConfigRedactsTheBundledPluginsSecretsAndNothingElse) {
  std::string command = binDir() +
                        "/svcd --check-config --set plugins.dir=" + SVC_BUNDLED_PLUGIN_DIR +
                        " --data-dir " + Poco::TemporaryFile::tempName();
  for (const char* secret :
       {"admin.token=hush-admin", "db.url=mysql://svc:hush-db@127.0.0.1:3306/svc",
        "auth.oidc.client_secret=hush-oidc", "email.relay.password=hush-relay",
        "sms.twilio.auth_token=hush-twilio"}) {
    command += std::string(" --set ") + secret;
  }
  auto [code, out] = runCommand(command);
  EXPECT_EQ(code, 0) << out;
  // Every bundled plugin is loaded: as many as there are in the directory.
  std::vector<std::string> files;
  Poco::File(SVC_BUNDLED_PLUGIN_DIR).list(files);
  const auto bundled = std::count_if(files.begin(), files.end(), [](const std::string& f) {
    return f.rfind("svc_plugin_", 0) == 0 && f.size() > 3 && f.substr(f.size() - 3) == ".so";
  });
  ASSERT_GE(bundled, 6);
  EXPECT_NE(out.find("configuration OK (" + std::to_string(bundled) + " plugins)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("hush"), std::string::npos) << out;
  EXPECT_NE(out.find("auth.rate.token_per_minute = 600\n"), std::string::npos) << out;
}

TEST(KernelOperator, AdminListenerNeedsTheTokenAndServesMetricsAndPlugins) {
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  ASSERT_GT(svcd.adminPort(), 0);
  EXPECT_EQ(http(svcd.adminPort(), "GET", "/metrics").status, 401);
  EXPECT_EQ(
      http(svcd.adminPort(), "GET", "/metrics", "", {{"Authorization", "Bearer wrong"}}).status,
      401);
  svcd.get("/api/testkit/greeting/");
  auto m = http(svcd.adminPort(), "GET", "/metrics", "",
                {{"Authorization", "Bearer " + svcd.adminToken()}});
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("svc_http_requests_total{method=\"GET\",route=\"/api/testkit/greeting/\","
                        "status=\"200\"} 1"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("svc_http_request_duration_seconds_bucket"), std::string::npos);
  EXPECT_NE(m.body.find("svc_db_pool_capacity"), std::string::npos);
  EXPECT_NE(m.body.find("svc_held_responses_open 0"), std::string::npos);

  auto [code, out] =
      runCommand(binDir() + "/svcctl --admin http://127.0.0.1:" + std::to_string(svcd.adminPort()) +
                 " --admin-token-file " + svcd.dataDir() + "/admin.token plugins");
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("testkit\\s+1\\.2\\.3\\s+started\\s+\\d+"))) << out;
  EXPECT_NE(out.find("GET /api/testkit/greeting/"), std::string::npos) << out;
  auto [wrong, why] =
      runCommand(binDir() + "/svcctl --admin http://127.0.0.1:" + std::to_string(svcd.adminPort()) +
                 " --admin-token nope plugins");
  EXPECT_NE(wrong, 0);
  EXPECT_NE(why.find("authentication_failed"), std::string::npos) << why;
}

TEST(KernelOperator, PluginsOperatorRoutesLiveOnTheAdminListenerOnly) {
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  const std::map<std::string, std::string> json{{"Content-Type", "application/json"}};
  auto with_token = json;
  with_token["Authorization"] = "Bearer " + svcd.adminToken();
  auto ok = http(svcd.adminPort(), "POST", "/admin/testkit/echo/", "{\"x\":1}", with_token);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.json()->getObject("json")->getValue<int>("x"), 1);
  EXPECT_EQ(http(svcd.adminPort(), "POST", "/admin/testkit/echo/", "{}", json).code(),
            "not_authenticated");
  // The public listener does not have it, even with the operator token.
  EXPECT_EQ(http(svcd.port(), "POST", "/admin/testkit/echo/", "{}", with_token).status, 404);
  // Nor does the admin listener serve public routes.
  EXPECT_EQ(http(svcd.adminPort(), "GET", "/api/health/", "", with_token).status, 404);
}

TEST(KernelOperator, AdminListenerRefusesANonLoopbackAddress) {
  Svcd::Options o;
  o.args = {"--set", "admin.listen=0.0.0.0:0"};
  Svcd svcd(o);
  EXPECT_NE(svcd.startExpectingFailure(), 0);
  EXPECT_NE(svcd.log().find("admin.listen must be a loopback address"), std::string::npos);
}

TEST(KernelProcess, RaisesItsOpenFilesSoftLimitToTheHardLimit) {
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  std::ifstream limits("/proc/" + std::to_string(svcd.pid()) + "/limits");
  std::string line;
  bool seen = false;
  while (std::getline(limits, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(14));
    std::string soft, hard;
    fields >> soft >> hard;
    EXPECT_EQ(soft, hard) << line;
    seen = true;
  }
  EXPECT_TRUE(seen);
}

// Waits (30 s at most) until testkit has `n` slow requests sleeping. @return whether it has.
bool slowInFlight(Svcd& svcd, int n) {
  return waitForSample(svcd, "svc_testkit_slow_in_flight", n);
}

// Starts svcd and waits until it is held in testkit's start() (slowStart). @return whether it is.
bool startHeldInStart(Svcd& svcd) {
  svcd.startInBackground();
  const bool there = svcd.waitForLog("testkit: starting slowly").find("testkit: starting slowly") !=
                     std::string::npos;
  EXPECT_TRUE(there) << svcd.log();
  return there;
}
Svcd::Options slowStart(int ms) {
  Svcd::Options o;
  o.args = {"--set", "testkit.start_delay_ms=" + std::to_string(ms)};
  return o;
}

// A stop asked for while svcd is still starting is taken once it is ready: it stops cleanly, and
// is never killed by the signal's default action in a thread that did not block it (exit 143).
TEST(KernelProcess, SigtermWhileStartingStopsCleanlyOnceReady) {
  Svcd svcd(slowStart(1500));
  ASSERT_TRUE(startHeldInStart(svcd));
  EXPECT_EQ(svcd.terminate(), 0) << svcd.log();
  EXPECT_NE(svcd.log().find("svcd stopping"), std::string::npos) << svcd.log();
}

// A second signal ends a start that does not finish (here a plugin's start() that takes 60 s)
// at once, as an operator's second Ctrl-C would.
TEST(KernelProcess, ASecondSignalEndsAStartThatHangs) {
  Svcd svcd(slowStart(60000));
  ASSERT_TRUE(startHeldInStart(svcd));
  ::kill(svcd.pid(), SIGINT);
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_EQ(svcd.terminate(), 128 + SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(30))
      << "the second signal did not end the hanging start";
}

TEST(KernelProcess, SigtermLetsInFlightRequestsFinishThenStopsCleanly) {
  Svcd::Options o;
  o.args = {"--set", "server.drain_seconds=30"};  // far longer than the request needs
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  auto slow =
      std::async(std::launch::async, [&] { return svcd.get("/api/testkit/slow/?ms=3000"); });
  ASSERT_TRUE(slowInFlight(svcd, 1));
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(svcd.terminate(), 0);
  auto r = slow.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()->getValue<int>("slept_ms"), 3000);
  // Stopped once it finished, not after the whole grace.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15));
  EXPECT_NE(svcd.log().find("svcd stopped"), std::string::npos);
}

// A long-poll held when the server stops is answered 503 with Retry-After, so its client retries
// instead of seeing the connection drop.
TEST(KernelProcess, SigtermAnswersHeldLongPollsBeforeClosing) {
  Svcd::Options o;
  o.args = {"--set", "server.drain_seconds=30"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  auto held =
      std::async(std::launch::async, [&] { return svcd.get("/api/testkit/hold/?ms=60000"); });
  ASSERT_TRUE(waitForSample(svcd, "svc_held_responses_open", 1));
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(svcd.terminate(), 0);
  auto r = held.get();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.code(), "service_unavailable");
  EXPECT_EQ(r.header("retry-after"), "5");
  // At once: neither the hold (60 s) nor the grace (30 s) is waited out.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15));
}

TEST(KernelProcess, ServesHttpsWhenACertificateIsConfigured) {
  std::string dir = "/tmp/svc-tls-" + std::to_string(::getpid());
  auto [made, why] =
      runCommand("mkdir -p " + dir + " && openssl req -x509 -newkey rsa:2048 -nodes -keyout " +
                 dir + "/key.pem -out " + dir + "/cert.pem -days 1 -subj /CN=127.0.0.1");
  ASSERT_EQ(made, 0) << why;
  Svcd::Options o;
  o.args = {"--set", "server.tls.cert=" + dir + "/cert.pem", "--set",
            "server.tls.key=" + dir + "/key.pem"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  EXPECT_NE(svcd.log().find("svcd ready: api https://"), std::string::npos);
  Poco::Net::initializeSSL();
  Poco::Net::Context::Ptr context = new Poco::Net::Context(Poco::Net::Context::TLS_CLIENT_USE, "",
                                                           Poco::Net::Context::VERIFY_NONE);
  for (const char* path :
       {"/api/health/", "/api/testkit/hold/?ms=100", "/api/testkit/ticks/?n=2&every=10"}) {
    Poco::Net::HTTPSClientSession session("127.0.0.1", static_cast<Poco::UInt16>(svcd.port()),
                                          context);
    Poco::Net::HTTPRequest request("GET", path, Poco::Net::HTTPMessage::HTTP_1_1);
    session.sendRequest(request);
    Poco::Net::HTTPResponse response;
    std::string body;
    Poco::StreamCopier::copyToString(session.receiveResponse(response), body);
    EXPECT_EQ(response.getStatus(), 200) << path << " " << body;
    if (std::string(path).find("ticks") != std::string::npos) {
      EXPECT_EQ(body, "tick 0\ntick 1\n");
    }
    if (std::string(path).find("hold") != std::string::npos) {
      EXPECT_NE(body.find("\"held_ms\":100"), std::string::npos) << body;
    }
  }
  // Plain HTTP to the TLS port gets nothing useful, and the server keeps serving.
  rawExchange(svcd.port(), "GET /api/health/ HTTP/1.1\r\n\r\n", 1000);
  EXPECT_TRUE(svcd.running());
  runCommand("rm -rf " + dir);
}

TEST(KernelStorage, AcknowledgedWritesSurviveKill9) {
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  std::vector<std::string> acknowledged;
  for (int i = 0; i < 40; ++i) {
    auto r = svcd.post("/api/testkit/notes/", "{\"text\":\"note " + std::to_string(i) + "\"}");
    ASSERT_EQ(r.status, 201);
    acknowledged.push_back(r.json()->getValue<std::string>("id"));
  }
  svcd.kill9();
  ASSERT_TRUE(svcd.start());
  auto list = svcd.get("/api/testkit/notes/").json()->getArray("ids");
  std::set<std::string> stored;
  for (std::size_t i = 0; i < list->size(); ++i) stored.insert(list->getElement<std::string>(i));
  for (auto& id : acknowledged) EXPECT_TRUE(stored.count(id)) << id;
  EXPECT_EQ(stored.size(), acknowledged.size());
}

TEST(KernelHeld, AThousandHeldResponsesHoldNoWorkers) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < 2200) GTEST_SKIP() << "open-files limit too low";

  Svcd::Options o;
  // Far fewer workers than held responses; a queue deep enough for the burst of connections,
  // all from one address.
  o.args = {"--set", "server.threads=4",
            "--set", "server.queue=2000",
            "--set", "server.max_connections_per_address=0"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  constexpr int kHeld = 1000;
  std::vector<Poco::Net::StreamSocket> sockets(kHeld);
  // Held far longer than opening them all takes, however slow the machine: the stop ends them.
  const std::string request = "GET /api/testkit/hold/?ms=120000 HTTP/1.1\r\nHost: x\r\n\r\n";
  for (auto& s : sockets) {
    s.connect(Poco::Net::SocketAddress("127.0.0.1", static_cast<Poco::UInt16>(svcd.port())));
    s.sendBytes(request.data(), static_cast<int>(request.size()));
  }
  // Every one of them is held...
  int held = 0;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       held < kHeld && std::chrono::steady_clock::now() < until;) {
    held = svcd.get("/api/testkit/held-count/").json()->getValue<int>("held");
    if (held < kHeld) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(held, kHeld);
  // ...while ordinary requests are still served by the 4 workers.
  for (int i = 0; i < 50; ++i) ASSERT_EQ(svcd.get("/api/health/").status, 200);
  auto metrics = http(svcd.adminPort(), "GET", "/metrics", "",
                      {{"Authorization", "Bearer " + svcd.adminToken()}});
  EXPECT_NE(metrics.body.find("svc_held_responses_open 1000"), std::string::npos);
  // And each held request is answered in the end: by the stop (503, try again), which does not
  // wait for them.
  EXPECT_EQ(svcd.terminate(), 0);
  int answered = 0;
  for (auto& s : sockets) {
    s.setReceiveTimeout(Poco::Timespan(30, 0));
    char buf[512];
    try {
      int n = s.receiveBytes(buf, sizeof buf);
      if (n > 12 && std::string(buf, 12) == "HTTP/1.1 503") ++answered;
    } catch (const Poco::Exception&) {
    }
  }
  EXPECT_EQ(answered, kHeld);
}

// Reads one whole HTTP response (headers, then Content-Length bytes) from a keep-alive socket.
std::string readResponse(Poco::Net::StreamSocket& s) {
  s.setReceiveTimeout(Poco::Timespan(5, 0));
  std::string in;
  char buf[4096];
  std::size_t end = std::string::npos;
  std::size_t want = 0;
  while (end == std::string::npos || in.size() < end + 4 + want) {
    int n = s.receiveBytes(buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
    if (end == std::string::npos && (end = in.find("\r\n\r\n")) != std::string::npos) {
      std::smatch m;
      std::string head = in.substr(0, end);
      if (std::regex_search(head, m, std::regex("Content-Length: (\\d+)", std::regex::icase))) {
        want = std::stoul(m[1]);
      }
    }
  }
  return in;
}

const std::string kHealthRequest = "GET /api/health/ HTTP/1.1\r\nHost: x\r\n\r\n";

// Connections that wait: `silent` ones never sent anything, `idle` ones were answered once and
// stay open (keep-alive).
struct IdleClients {
  IdleClients(Svcd& svcd, std::size_t each) : silent(each), idle(each) {
    Poco::Net::SocketAddress address("127.0.0.1", static_cast<Poco::UInt16>(svcd.port()));
    for (auto& s : silent) s.connect(address);
    for (auto& s : idle) {
      s.connect(address);
      s.sendBytes(kHealthRequest.data(), static_cast<int>(kHealthRequest.size()));
      EXPECT_EQ(readResponse(s).rfind("HTTP/1.1 200", 0), 0u);
    }
  }
  std::vector<Poco::Net::StreamSocket> silent, idle;
};

TEST(KernelConnections, IdleAndSilentConnectionsHoldNoWorkers) {
  Svcd::Options o;
  o.args = {"--set", "server.threads=2",
            "--set", "server.concurrency=1",
            "--set", "server.max_connections_per_address=0"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  IdleClients clients(svcd, 200);
  std::vector<Poco::Net::StreamSocket>& idle = clients.idle;
  // Two workers, four hundred open connections: a new client is still answered at once (a
  // worker held by an idle connection would take the idle timeout)...
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(svcd.get("/api/health/").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3));
  // ...and every idle keep-alive connection is still open and served again.
  int again = 0;
  for (auto& s : idle) {
    s.sendBytes(kHealthRequest.data(), static_cast<int>(kHealthRequest.size()));
    if (readResponse(s).rfind("HTTP/1.1 200", 0) == 0) ++again;
  }
  EXPECT_EQ(again, 200);
}

// A stop does not wait for idle clients: parked keep-alive and silent connections are closed at
// once (the drain's grace is for requests in flight), and each client sees its connection end.
TEST(KernelConnections, IdleConnectionsDoNotHoldUpAStop) {
  Svcd::Options o;
  o.args = {"--set", "server.drain_seconds=30"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  IdleClients clients(svcd, 50);
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(svcd.terminate(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15));  // grace: 30 s
  int ended = 0;
  for (auto* group : {&clients.silent, &clients.idle}) {
    for (auto& s : *group) {
      s.setReceiveTimeout(Poco::Timespan(2, 0));
      char buf[64];
      try {
        if (s.receiveBytes(buf, sizeof buf) == 0) ++ended;
      } catch (const Poco::Net::ConnectionResetException&) {
        ++ended;
      }
    }
  }
  EXPECT_EQ(ended, 100);
}

TEST(KernelConnections, PipelinedRequestsAreAnsweredInOrder) {
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  Poco::Net::StreamSocket s(
      Poco::Net::SocketAddress("127.0.0.1", static_cast<Poco::UInt16>(svcd.port())));
  std::string burst;
  for (const char* id : {"one", "two", "three"}) {
    burst +=
        "GET /api/health/ HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + std::string(id) + "\r\n\r\n";
  }
  s.sendBytes(burst.data(), static_cast<int>(burst.size()));
  std::string answers;
  s.setReceiveTimeout(Poco::Timespan(5, 0));
  char buf[4096];
  while (countLines(answers, "HTTP/1.1 200") < 3) {
    int n = s.receiveBytes(buf, sizeof buf);
    if (n <= 0) break;
    answers.append(buf, static_cast<std::size_t>(n));
  }
  std::size_t one = answers.find("X-Request-Id: one\r\n");
  std::size_t two = answers.find("X-Request-Id: two\r\n");
  std::size_t three = answers.find("X-Request-Id: three\r\n");
  EXPECT_EQ(countLines(answers, "HTTP/1.1 200"), 3) << answers;
  ASSERT_NE(three, std::string::npos) << answers;
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
}

// Two workers serve at once; handlers that block (here: sleep) let reserve workers in, so the
// server keeps answering while they wait, and goes back to two when they are done.
TEST(KernelConnections, BlockedHandlersDoNotStopOtherRequests) {
  Svcd::Options o;
  o.args = {"--set", "server.threads=8", "--set", "server.concurrency=2"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  std::vector<std::future<HttpReply>> slow;
  for (int i = 0; i < 4; ++i) {
    slow.push_back(
        std::async(std::launch::async, [&] { return svcd.get("/api/testkit/slow/?ms=5000"); }));
  }
  ASSERT_TRUE(slowInFlight(svcd, 4));  // every one blocks a worker now
  for (int i = 0; i < 10; ++i) {
    auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(svcd.get("/api/health/").status, 200);
    // Not behind the blocked handlers (5 s).
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(2500));
  }
  for (auto& f : slow) EXPECT_EQ(f.get().status, 200);
  EXPECT_EQ(svcd.get("/api/health/").status, 200);
}

}  // namespace
}  // namespace svc::testing
