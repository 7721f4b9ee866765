#include "config.h"

#include <Poco/AutoPtr.h>
#include <Poco/File.h>
#include <Poco/FileStream.h>
#include <Poco/Path.h>
#include <Poco/TemporaryFile.h>
#include <Poco/Util/LayeredConfiguration.h>

#include <gtest/gtest.h>

namespace svc::kernel {
namespace {

// A prefix laid out like an install: <prefix>/bin, <prefix>/etc/svc, <prefix>/lib/svc/plugins.
class ConfigLayersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    prefix_ = Poco::Path(Poco::TemporaryFile::tempName()).toString();
    Poco::File(prefix_ + "/bin").createDirectories();
    Poco::File(prefix_ + "/etc/svc/plugins").createDirectories();
    Poco::File(prefix_ + "/lib/svc/plugins").createDirectories();
  }
  void TearDown() override { Poco::File(prefix_).remove(true); }
  void write(const std::string& rel, const std::string& text) {
    Poco::FileOutputStream out(prefix_ + "/" + rel);
    out << text;
  }
  std::string prefix_;
};

TEST_F(ConfigLayersTest, DefaultsFollowTheExecutablesPrefix) {
  Poco::AutoPtr<Poco::Util::LayeredConfiguration> conf(new Poco::Util::LayeredConfiguration);
  ConfigLayers layers(*conf, prefix_ + "/bin", {});
  EXPECT_TRUE(layers.build().empty());
  EXPECT_EQ(conf->getString("server.port"), "8080");
  EXPECT_EQ(Poco::Path(conf->getString("plugins.dir")).toString(),
            Poco::Path(prefix_ + "/lib/svc/plugins").toString());
  EXPECT_EQ(conf->getString("db.url"),
            "sqlite:" + Poco::Path(prefix_ + "/var/lib/svc").toString() + "/svc.db");
  EXPECT_TRUE(layers.validate().empty());
}

TEST_F(ConfigLayersTest, LaterLayersWinInOrder) {
  write("etc/svc/svcd.properties",
        "server.port = 9001\nserver.threads = 3\nlog.level = debug\n"
        "testkit.greeting = from-main\n");
  write("etc/svc/plugins/testkit.properties",
        "testkit.greeting = from-plugin-file\n"
        "server.threads = 4\n");
  Poco::AutoPtr<Poco::Util::LayeredConfiguration> conf(new Poco::Util::LayeredConfiguration);
  ConfigLayers layers(*conf, prefix_ + "/bin",
                      {{"SVC_SERVER_THREADS", "5"},
                       {"SVC_LOG_LEVEL", "warning"},
                       {"SVC_SERVER_MAX_BODY_BYTES", "2048"}});
  ASSERT_TRUE(layers.addSet("log.level=error"));
  ASSERT_TRUE(layers.build().empty());
  EXPECT_EQ(conf->getString("server.port"), "9001");                   // main file over default
  EXPECT_EQ(conf->getString("testkit.greeting"), "from-plugin-file");  // plugin file over main
  EXPECT_EQ(conf->getString("server.threads"), "5");                   // env over files
  EXPECT_EQ(conf->getString("server.max_body_bytes"), "2048");         // underscores in key names
  EXPECT_EQ(conf->getString("log.level"), "error");                    // --set over env
}

TEST_F(ConfigLayersTest, PluginKeysGetDefaultsAndEnvironment) {
  Poco::AutoPtr<Poco::Util::LayeredConfiguration> conf(new Poco::Util::LayeredConfiguration);
  ConfigLayers layers(*conf, prefix_ + "/bin", {{"SVC_EMAIL_SMTP_LISTEN", "0.0.0.0:25"}});
  layers.build();
  layers.addDeclaredKeys({{"email.smtp.listen", "127.0.0.1:2525", "", false},
                          {"email.domains", "agents.local", "", false},
                          {"email.relay.password", "", "", true}});
  EXPECT_EQ(conf->getString("email.smtp.listen"), "0.0.0.0:25");
  EXPECT_EQ(conf->getString("email.domains"), "agents.local");
  EXPECT_TRUE(layers.isSecret("email.relay.password"));
}

TEST_F(ConfigLayersTest, ConfigFileFlagReplacesTheDefaultFile) {
  write("etc/svc/svcd.properties", "server.port = 9001\n");
  write("other.properties", "server.port = 9002\n");
  Poco::AutoPtr<Poco::Util::LayeredConfiguration> conf(new Poco::Util::LayeredConfiguration);
  ConfigLayers layers(*conf, prefix_ + "/bin", {});
  layers.setConfigFile(prefix_ + "/other.properties");
  layers.build();
  EXPECT_EQ(conf->getString("server.port"), "9002");
}

TEST_F(ConfigLayersTest, ValidationNamesEveryBadKey) {
  Poco::AutoPtr<Poco::Util::LayeredConfiguration> conf(new Poco::Util::LayeredConfiguration);
  ConfigLayers layers(*conf, prefix_ + "/bin", {});
  for (const char* s :
       {"server.port=99999", "server.threads=0", "db.url=postgres://x", "log.format=xml",
        "log.level=loud", "server.tls.cert=/nonexistent", "plugins.dir=/nonexistent-dir"}) {
    ASSERT_TRUE(layers.addSet(s));
  }
  layers.build();
  auto problems = layers.validate();
  std::string all;
  for (auto& p : problems) all += p + "\n";
  for (const char* key : {"server.port", "server.threads", "db.url", "log.format", "log.level",
                          "server.tls.cert", "plugins.dir"}) {
    EXPECT_NE(all.find(key), std::string::npos) << key << " not reported in:\n" << all;
  }
}

TEST_F(ConfigLayersTest, DumpRedactsSecretsAndDatabasePasswords) {
  Poco::AutoPtr<Poco::Util::LayeredConfiguration> conf(new Poco::Util::LayeredConfiguration);
  ConfigLayers layers(*conf, prefix_ + "/bin", {});
  layers.addSet("admin.token=topsecret");
  layers.addSet("db.url=mysql://svc:hunter2@127.0.0.1:3306/svc");
  layers.build();
  std::string dump = layers.dump();
  EXPECT_EQ(dump.find("topsecret"), std::string::npos);
  EXPECT_EQ(dump.find("hunter2"), std::string::npos);
  EXPECT_NE(dump.find("db.url = mysql://svc:***@127.0.0.1:3306/svc"), std::string::npos);
  EXPECT_NE(dump.find("admin.token = ***"), std::string::npos);
}

TEST_F(ConfigLayersTest, DeclaredKeysAreRedactedByTheirFlagNotTheirName) {
  Poco::AutoPtr<Poco::Util::LayeredConfiguration> conf(new Poco::Util::LayeredConfiguration);
  ConfigLayers layers(*conf, prefix_ + "/bin", {});
  layers.addSet("auth.oidc.client_secret=oidc-hush");
  layers.addSet("other.smtp_password=undeclared-hush");
  layers.addSet("other.greeting=hello");
  layers.build();
  layers.addDeclaredKeys({{"auth.rate.token_per_minute", "600", "", false},
                          {"auth.oidc.client_secret", "", "", true}});
  std::string dump = layers.dump();
  EXPECT_NE(dump.find("auth.rate.token_per_minute = 600\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("auth.oidc.client_secret = ***\n"), std::string::npos) << dump;
  // Keys nothing declares are still judged by their names.
  EXPECT_NE(dump.find("other.smtp_password = ***\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("other.greeting = hello\n"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("hush"), std::string::npos) << dump;
}

TEST(EnvNames, DotsBecomeUnderscoresUpperCase) {
  EXPECT_EQ(envNameForKey("server.port"), "SVC_SERVER_PORT");
  EXPECT_EQ(envNameForKey("server.max_body_bytes"), "SVC_SERVER_MAX_BODY_BYTES");
}

}  // namespace
}  // namespace svc::kernel
