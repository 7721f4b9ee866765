// hello's unit test, written with the SDK's test kit (SvcSdk::testing): the plugin library is
// loaded with svcd's own handshake and served by the kernel's own pipeline, in process.
#include <svc/sdk/testing.h>

#include <gtest/gtest.h>

#include <cstdlib>

using svc::sdk::testing::HarnessOptions;
using svc::sdk::testing::identityPrincipal;
using svc::sdk::testing::managementPrincipal;
using svc::sdk::testing::PluginHarness;
using svc::sdk::testing::RequestBuilder;

namespace {

constexpr const char* kAccount = "aaaaaaaa-0000-4000-8000-000000000000";

class HelloTest : public ::testing::Test {
 protected:
  void SetUp() override {
    harness_.load(HELLO_PLUGIN_FILE);
    harness_.start();
  }
  PluginHarness harness_{HarnessOptions{{{"hello.greeting", "Howdy"}}}};
};

TEST_F(HelloTest, GreetsWithTheConfiguredWord) {
  auto answer = harness_.call(RequestBuilder::get("/api/hello/?name=agent"));
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.json()->getValue<std::string>("message"), "Howdy, agent!");
}

TEST_F(HelloTest, PublishesItsOwnEventTypeAndCountsIt) {
  auto refused = harness_.call(RequestBuilder::post("/api/hello/greetings/").json("{}"));
  EXPECT_EQ(refused.status, 401);
  auto greeted = harness_.call(RequestBuilder::post("/api/hello/greetings/")
                                   .as(managementPrincipal(kAccount))
                                   .json("{\"name\":\"ada\"}"));
  ASSERT_EQ(greeted.status, 201) << greeted.body;
  auto event = harness_.events().waitFor("hello.greeted", std::chrono::seconds(5));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->account, kAccount);
  EXPECT_EQ(event->object->getValue<std::string>("message"), "Howdy, ada!");
  EXPECT_NE(harness_.metrics().find("svc_hello_greetings_total 1"), std::string::npos);
}

TEST_F(HelloTest, SeesOnlyItsOwnAndSharedConfiguration) {
  const auto& config = harness_.configOf("hello");
  EXPECT_EQ(config.getString("hello.greeting"), "Howdy");
  EXPECT_TRUE(config.has("data.dir"));
  EXPECT_TRUE(config.has("public.base_url"));
  EXPECT_FALSE(config.has("admin.token"));
  EXPECT_FALSE(config.has("db.url"));
}

// With the bundled identities plugin beside it (the sdk_example test names where the installed
// ones are), hello adds its member, create field and action to every identity.
TEST(HelloWithIdentities, AddsItsPartToEveryIdentity) {
  const char* bundled = std::getenv("SVC_BUNDLED_PLUGIN_DIR");
  if (!bundled) GTEST_SKIP() << "SVC_BUNDLED_PLUGIN_DIR names no bundled plugins";
  PluginHarness harness{HarnessOptions{{{"hello.greeting", "Howdy"}}}};
  harness.load(std::string(bundled) + "/svc_plugin_identities.so").load(HELLO_PLUGIN_FILE);
  harness.start();
  auto as = managementPrincipal(kAccount);
  auto plain =
      harness.call(RequestBuilder::post("/api/identities/").as(as).json("{\"name\":\"Ada\"}"));
  ASSERT_EQ(plain.status, 201) << plain.body;
  EXPECT_EQ(plain.json()->getObject("hello")->getValue<std::string>("greeting"), "Howdy");
  auto chosen = harness.call(RequestBuilder::post("/api/identities/")
                                 .as(as)
                                 .json("{\"name\":\"Bo\",\"hello_greeting\":\"Ahoy\"}"));
  ASSERT_EQ(chosen.status, 201) << chosen.body;
  const std::string uuid = chosen.json()->getValue<std::string>("uuid");
  auto read = harness.call(RequestBuilder::get("/api/identities/" + uuid + "/").as(as));
  EXPECT_EQ(read.json()->getObject("hello")->getValue<std::string>("greeting"), "Ahoy");
  // A bad greeting is refused before anything is written.
  auto bad = harness.call(RequestBuilder::post("/api/identities/")
                              .as(as)
                              .json("{\"name\":\"Cy\",\"hello_greeting\":\"\"}"));
  EXPECT_EQ(bad.status, 400);
  auto list = harness.call(RequestBuilder::get("/api/identities/").as(as));
  EXPECT_EQ(list.json()->getValue<int>("count"), 2);
  // The action, fenced like every identity route: the identity's own key reaches it.
  auto greeted = harness.call(RequestBuilder::post("/api/identities/" + uuid + "/greet/")
                                  .as(identityPrincipal(kAccount, uuid)));
  ASSERT_EQ(greeted.status, 201) << greeted.body;
  EXPECT_EQ(greeted.json()->getValue<std::string>("message"), "Ahoy, Bo!");
  auto event = harness.events().waitFor("hello.greeted", std::chrono::seconds(5));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->identity, uuid);
}

}  // namespace
