#include "settings.h"

#include <Poco/AutoPtr.h>
#include <Poco/Util/MapConfiguration.h>

#include <gtest/gtest.h>

#include <set>

namespace svc::plugins::auth {
namespace {

// The configuration as the kernel hands it over: the declared defaults, then what is set.
Poco::AutoPtr<Poco::Util::MapConfiguration> config(
    const std::map<std::string, std::string>& set = {}) {
  Poco::AutoPtr<Poco::Util::MapConfiguration> c = new Poco::Util::MapConfiguration;
  for (const auto& k : settingsKeys()) c->setString(k.key, k.default_value);
  c->setString("public.base_url", "https://svc.example");
  for (const auto& [k, v] : set) c->setString(k, v);
  return c;
}

TEST(AuthSettings, DefaultsComeFromTheDeclarations) {
  AuthSettings s = readSettings(*config());
  EXPECT_TRUE(s.local_users);
  EXPECT_EQ(s.default_plan, "active");
  EXPECT_EQ(s.device_expires_s, 600);
  EXPECT_EQ(s.device_interval_s, 5);
  EXPECT_EQ(s.device_per_minute, 30);
  EXPECT_EQ(s.token_per_minute, 600);
  EXPECT_EQ(s.failed_auth_per_minute, 30);
  EXPECT_EQ(s.failed_auth_per_key_per_minute, 10);
  EXPECT_EQ(s.session_seconds, 12 * 3600);
  EXPECT_EQ(s.max_keys, 100);
  EXPECT_EQ(s.issuer_url, "https://svc.example");
}

TEST(AuthSettings, EveryDeclaredKeyIsTheAuthPluginsOrAccounts) {
  std::set<std::string> keys;
  for (const auto& k : settingsKeys()) {
    EXPECT_TRUE(k.key.rfind("auth.", 0) == 0 || k.key.rfind("accounts.", 0) == 0) << k.key;
    EXPECT_FALSE(k.description.empty()) << k.key;
    EXPECT_TRUE(keys.insert(k.key).second) << "declared twice: " << k.key;
  }
}

TEST(AuthSettings, ReadsWhatIsSet) {
  AuthSettings s = readSettings(*config({{"auth.local_users", "false"},
                                         {"accounts.default_plan", "none"},
                                         {"auth.device.expires_seconds", "60"},
                                         {"auth.device.interval_seconds", "0"},
                                         {"auth.session.hours", "2"},
                                         {"auth.keys.max_per_account", "3"},
                                         {"auth.rate.token_per_minute", "7"}}));
  EXPECT_FALSE(s.local_users);
  EXPECT_EQ(s.default_plan, "none");
  EXPECT_EQ(s.device_expires_s, 60);
  EXPECT_EQ(s.device_interval_s, 0);
  EXPECT_EQ(s.session_seconds, 7200);
  EXPECT_EQ(s.max_keys, 3);
  EXPECT_EQ(s.token_per_minute, 7);
}

TEST(AuthSettings, DashboardUrlFallsBackBesideTheBaseUrl) {
  EXPECT_EQ(readSettings(*config()).dashboard_url, "https://svc.example/dashboard");
  EXPECT_EQ(readSettings(*config({{"dashboard.url", "https://dash.example"}})).dashboard_url,
            "https://dash.example");
}

TEST(AuthSettings, OutOfRangeValuesAreRefusedNamingTheKey) {
  auto refused = [](const std::map<std::string, std::string>& set, const std::string& key) {
    try {
      readSettings(*config(set));
      ADD_FAILURE() << "accepted " << set.begin()->first << "=" << set.begin()->second;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refused({{"accounts.default_plan", "gold"}}, "accounts.default_plan");
  refused({{"auth.device.expires_seconds", "0"}}, "auth.device.expires_seconds");
  refused({{"auth.device.interval_seconds", "-1"}}, "interval_seconds");
  refused({{"auth.session.hours", "0"}}, "auth.session.hours");
  refused({{"auth.keys.max_per_account", "0"}}, "auth.keys.max_per_account");
}

}  // namespace
}  // namespace svc::plugins::auth
