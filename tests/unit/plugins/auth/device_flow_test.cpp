// The auth plugin's device login (RFC 8628), loaded from its library with the test kit: auth
// offers the real Authenticator (the kit's stub stands aside), an operator approves through the
// operator routes, and the key the agent receives authenticates its next call.
#include <svc/sdk/testing.h>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <regex>
#include <string>
#include <thread>

namespace svc::plugins::auth {
namespace {

using sdk::testing::PluginHarness;
using sdk::testing::RequestBuilder;
using sdk::testing::TestResponse;

// One harness for the suite: adding a user hashes its password with scrypt and the first token
// makes the RSA signing key, each a good part of a second; every test starts its own login.
class DeviceFlowTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    harness_ = std::make_unique<PluginHarness>();
    harness_->load(std::string(SVC_BUNDLED_PLUGIN_DIR) + "/svc_plugin_auth.so");
    harness_->start();
    auto user = harness_->callOperator(
        RequestBuilder::post("/admin/auth/users/")
            .json(R"({"email":"ann@example.com","password":"correct horse"})"));
    ASSERT_EQ(user.status, 201) << user.body;
  }
  static void TearDownTestSuite() { harness_.reset(); }
  void SetUp() override { harness_->events().clear(); }

  // Starts a login. @return its answer's JSON.
  Poco::JSON::Object::Ptr startLogin() {
    auto r = harness_->call(RequestBuilder::post("/api/auth/device/"));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  RequestBuilder poll(const Poco::JSON::Object::Ptr& login, bool wait = false) {
    return RequestBuilder::post("/api/auth/device/token/")
        .json(R"({"device_code":")" + login->getValue<std::string>("device_code") + "\"" +
              (wait ? R"(,"wait":true)" : "") + "}");
  }
  TestResponse decide(const Poco::JSON::Object::Ptr& login, const char* how) {
    // Only an approval names the user (a denial that did would be refused as unknown).
    const bool approve = std::string(how) == "approve";
    return harness_->callOperator(
        RequestBuilder::post(std::string("/admin/auth/device/") + how + "/")
            .json(R"({"user_code":")" + login->getValue<std::string>("user_code") + "\"" +
                  (approve ? R"(,"user":"ann@example.com")" : "") + "}"));
  }
  static std::string error(const TestResponse& r) {
    return r.json()->optValue<std::string>("error", "");
  }
  TestResponse whoami(const std::string& credential) {
    return harness_->call(
        RequestBuilder::get("/api/health/whoami/").header("Authorization", "Bearer " + credential));
  }

  static std::unique_ptr<PluginHarness> harness_;
};

std::unique_ptr<PluginHarness> DeviceFlowTest::harness_;

TEST_F(DeviceFlowTest, AnApprovedLoginGivesAKeyThatAuthenticates) {
  auto login = startLogin();
  EXPECT_TRUE(std::regex_match(login->getValue<std::string>("user_code"),
                               std::regex("[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}")));
  EXPECT_EQ(login->getValue<int>("interval"), 5);

  auto pending = harness_->call(poll(login));
  EXPECT_EQ(pending.status, 400);
  EXPECT_EQ(error(pending), "authorization_pending");
  EXPECT_EQ(pending.header("Cache-Control"), "no-store");
  EXPECT_EQ(error(harness_->call(poll(login))), "slow_down");  // sooner than the interval

  auto approved = decide(login, "approve");
  ASSERT_EQ(approved.status, 200) << approved.body;
  const std::string account = approved.json()->getValue<std::string>("account");
  auto tokens = harness_->call(poll(login, true));  // a waiting poll is never too fast
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  const std::string key = tokens.json()->getValue<std::string>("management_key");
  EXPECT_EQ(key.rfind("svc_mgmt_", 0), 0u) << key;
  EXPECT_EQ(tokens.json()->getObject("user")->getValue<std::string>("email"), "ann@example.com");
  EXPECT_EQ(error(harness_->call(poll(login))), "invalid_grant");  // issued exactly once
  auto created = harness_->events().waitFor("key.created", std::chrono::seconds(30));
  ASSERT_TRUE(created);
  EXPECT_EQ(created->account, account);

  // The key and the access token authenticate through auth's own Authenticator.
  auto who = whoami(key);
  ASSERT_EQ(who.status, 200) << who.body;
  EXPECT_EQ(who.json()->getValue<std::string>("kind"), "management");
  EXPECT_EQ(who.json()->getObject("account")->getValue<std::string>("id"), account);
  auto as_user = whoami(tokens.json()->getValue<std::string>("access"));
  ASSERT_EQ(as_user.status, 200) << as_user.body;
  EXPECT_EQ(as_user.json()->getValue<std::string>("kind"), "user");
  EXPECT_EQ(whoami(key + "x").status, 401);
  EXPECT_EQ(harness_->call(RequestBuilder::get("/api/health/whoami/")).status, 401);
}

TEST_F(DeviceFlowTest, AHeldPollIsAnsweredWhenTheCodeIsApproved) {
  auto login = startLogin();
  // Undecided, a waiting poll is held: the kit gives up on it first.
  auto held = harness_->call(poll(login, true).waitAtMost(std::chrono::milliseconds(100)));
  EXPECT_EQ(held.status, 504);
  EXPECT_EQ(held.code(), "test_timeout");

  auto waiting = std::async(std::launch::async, [&] {
    return harness_->call(poll(login, true).waitAtMost(std::chrono::seconds(30)));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // usually held by now
  ASSERT_EQ(decide(login, "approve").status, 200);
  auto answer = waiting.get();
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.json()->getValue<std::string>("management_key").rfind("svc_mgmt_", 0), 0u);
}

TEST_F(DeviceFlowTest, ADeniedCodeGivesNoKeyAndUnknownCodesAreNotFound) {
  auto login = startLogin();
  ASSERT_EQ(decide(login, "deny").status, 200);
  auto denied = harness_->call(poll(login, true));
  EXPECT_EQ(denied.status, 400);
  EXPECT_EQ(error(denied), "access_denied");
  EXPECT_EQ(decide(login, "approve").status, 404);  // decided already
  auto unknown =
      harness_->callOperator(RequestBuilder::post("/admin/auth/device/approve/")
                                 .json(R"({"user_code":"BBBB-BBBB","user":"ann@example.com"})"));
  EXPECT_EQ(unknown.status, 404);
  // The operator routes are not on the API listener.
  EXPECT_EQ(harness_->call(RequestBuilder::post("/admin/auth/device/approve/").json("{}")).status,
            404);
}

}  // namespace
}  // namespace svc::plugins::auth
