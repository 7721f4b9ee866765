// The email plugin as svcd runs it, loaded from its library with the test kit beside the
// identities plugin: the inbox every identity gets, local delivery with its events, the sending
// limit and a draft's validation, all through routes. The SMTP listener takes a free port.
#include <svc/sdk/testing.h>

#include <Poco/Data/Session.h>
#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>

namespace svc::plugins::email {
namespace {

using namespace Poco::Data::Keywords;
using sdk::testing::HarnessOptions;
using sdk::testing::identityPrincipal;
using sdk::testing::managementPrincipal;
using sdk::testing::PluginHarness;
using sdk::testing::RequestBuilder;
using sdk::testing::TestResponse;

constexpr const char* kAccount = "aaaaaaaa-0000-4000-8000-000000000000";
constexpr const char* kOther = "bbbbbbbb-0000-4000-8000-000000000000";

// identities offers the IdentityDirectory; the kit's stub Authenticator stands in for auth.
HarnessOptions emailOptions(std::map<std::string, std::string> extra = {}) {
  HarnessOptions options;
  options.config = {{"email.domains", "agents.test"}, {"email.smtp.listen", "127.0.0.1:0"}};
  for (auto& [key, value] : extra) options.config[key] = value;
  return options;
}

struct Ident {
  std::string uuid, address, inbox;
};

class EmailPluginTest : public ::testing::Test {
 protected:
  void start(std::map<std::string, std::string> config = {}) {
    harness_ = std::make_unique<PluginHarness>(emailOptions(std::move(config)));
    const std::string dir = SVC_BUNDLED_PLUGIN_DIR;
    harness_->load(dir + "/svc_plugin_identities.so").load(dir + "/svc_plugin_email.so");
    harness_->start();
  }
  TestResponse call(RequestBuilder request) {
    return harness_->call(request.as(managementPrincipal(kAccount)));
  }
  TestResponse createIdentity(const std::string& body) {
    return call(RequestBuilder::post("/api/identities/").json(body));
  }
  Ident identity(const std::string& name, const std::string& identifier) {
    auto r =
        createIdentity(R"({"name":")" + name + R"(","email_identifier":")" + identifier + R"("})");
    EXPECT_EQ(r.status, 201) << r.body;
    if (r.status != 201) return {};
    auto email = r.json()->getObject("email");
    return {r.json()->getValue<std::string>("uuid"), email->getValue<std::string>("address"),
            email->getValue<std::string>("id")};
  }
  TestResponse compose(const Ident& from, const std::string& body) {
    return call(
        RequestBuilder::post("/api/email-messages/compose/?identity=" + from.uuid).json(body));
  }
  Poco::JSON::Array::Ptr messages(const Ident& of) {
    auto r = call(RequestBuilder::get("/api/email-messages/?identity=" + of.uuid));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getArray("results");
  }
  int identityRows() {
    int n = 0;
    auto s = harness_->database().session();
    s << "SELECT COUNT(*) FROM identities", into(n), now;
    return n;
  }

  std::unique_ptr<PluginHarness> harness_;
};

TEST_F(EmailPluginTest, AnIdentityGetsItsInboxInItsOwnTransaction) {
  start();
  Ident sales = identity("Sales", "sales");
  EXPECT_EQ(sales.address, "sales@agents.test");
  auto inbox = call(RequestBuilder::get("/api/email/" + sales.inbox + "/"));
  ASSERT_EQ(inbox.status, 200) << inbox.body;
  EXPECT_TRUE(inbox.json()->getValue<bool>("is_primary"));
  EXPECT_EQ(inbox.json()->getValue<std::string>("identity"), sales.uuid);
  auto read = call(RequestBuilder::get("/api/identities/" + sales.uuid + "/"));
  EXPECT_EQ(read.json()->getObject("email")->getValue<std::string>("address"), "sales@agents.test");
  // Without an identifier, one is made from the name.
  auto generated = createIdentity(R"({"name":"Support Bot"})");
  ASSERT_EQ(generated.status, 201) << generated.body;
  const std::string address =
      generated.json()->getObject("email")->getValue<std::string>("address");
  EXPECT_TRUE(std::regex_match(address, std::regex("support-bot-[a-z2-9]{4}@agents\\.test")))
      << address;

  // A taken address rolls the identity back; a malformed one never reaches the database.
  auto taken = createIdentity(R"({"name":"Again","email_identifier":"sales"})");
  EXPECT_EQ(taken.status, 409) << taken.body;
  EXPECT_EQ(taken.code(), "email_taken");
  auto bad = createIdentity(R"({"name":"Bad","email_identifier":"a..b"})");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_TRUE(bad.json()->getObject("errors")->has("email_identifier")) << bad.body;
  EXPECT_EQ(identityRows(), 2);
}

TEST_F(EmailPluginTest, ComposeDeliversToAnotherIdentityHereWithItsEvents) {
  start();
  Ident alice = identity("Alice", "alice");
  Ident bob = identity("Bob", "bob");
  auto sent = compose(alice, R"({"to_email":"Bob <bob@agents.test>","subject":"Plan",)"
                             R"("content":"Shall we?"})");
  ASSERT_EQ(sent.status, 201) << sent.body;
  EXPECT_EQ(sent.json()->getValue<std::string>("status"), "sent");
  EXPECT_EQ(sent.json()->getValue<std::string>("direction"), "outgoing");

  auto at_bob = messages(bob);
  ASSERT_EQ(at_bob->size(), 1u);
  EXPECT_EQ(at_bob->getObject(0)->getValue<std::string>("subject"), "Plan");
  EXPECT_EQ(at_bob->getObject(0)->getValue<std::string>("direction"), "incoming");
  EXPECT_EQ(at_bob->getObject(0)->getValue<std::string>("message_id"),
            sent.json()->getValue<std::string>("message_id"));

  auto sent_event = harness_->events().waitFor("email.sent", std::chrono::seconds(30));
  ASSERT_TRUE(sent_event);
  EXPECT_EQ(sent_event->identity, alice.uuid);
  EXPECT_EQ(sent_event->object->getValue<std::string>("subject"), "Plan");
  auto received = harness_->events().waitFor("email.received", std::chrono::seconds(30));
  ASSERT_TRUE(received);
  EXPECT_EQ(received->identity, bob.uuid);
  EXPECT_EQ(received->account, kAccount);

  // Bob's own key reads his mail; another account sees none of it.
  auto own = harness_->call(
      RequestBuilder::get("/api/email-messages/").as(identityPrincipal(kAccount, bob.uuid)));
  EXPECT_EQ(own.json()->getArray("results")->size(), 1u);
  auto stranger = harness_->call(RequestBuilder::get("/api/email-messages/?identity=" + bob.uuid)
                                     .as(managementPrincipal(kOther)));
  EXPECT_EQ(stranger.status, 404);
}

TEST_F(EmailPluginTest, SendingPastTheHourlyLimitIs429WithRetryAfter) {
  start({{"email.send.per_hour", "1"}});
  Ident alice = identity("Alice", "alice");
  Ident bob = identity("Bob", "bob");
  const std::string body = R"({"to_email":"bob@agents.test","subject":"s","content":"c"})";
  ASSERT_EQ(compose(alice, body).status, 201);
  auto limited = compose(alice, body);
  ASSERT_EQ(limited.status, 429) << limited.body;
  EXPECT_EQ(limited.code(), "throttled");
  const int wait = limited.json()->getValue<int>("retry_after_seconds");
  EXPECT_GT(wait, 3000);  // the one message leaves the hour's window in about an hour
  EXPECT_LE(wait, 3601);
  EXPECT_EQ(limited.header("Retry-After"), std::to_string(wait));
  EXPECT_EQ(messages(bob)->size(), 1u);  // nothing more was sent
  // The limit is the identity's: Bob still writes.
  EXPECT_EQ(compose(bob, R"({"to_email":"alice@agents.test","subject":"s","content":"c"})").status,
            201);
}

TEST_F(EmailPluginTest, ADraftsErrorsNameTheirFields) {
  start();
  Ident alice = identity("Alice", "alice");
  auto missing = compose(alice, R"({"to_email":"alice@agents.test","content":"c"})");
  ASSERT_EQ(missing.status, 400) << missing.body;
  EXPECT_EQ(missing.code(), "invalid");
  EXPECT_TRUE(missing.json()->getObject("errors")->has("subject")) << missing.body;
  EXPECT_NE(missing.json()->getValue<std::string>("detail").find("subject"), std::string::npos);
  auto injected = compose(
      alice,
      R"({"to_email":"alice@agents.test","subject":"a\r\nBcc: x@evil.example","content":"c"})");
  EXPECT_TRUE(injected.json()->getObject("errors")->has("subject")) << injected.body;
  auto nobody = compose(alice, R"({"to_email":"ghost@agents.test","subject":"s","content":"c"})");
  EXPECT_EQ(nobody.status, 400);
  EXPECT_TRUE(nobody.json()->getObject("errors")->has("to_email")) << nobody.body;
  auto unnamed = call(RequestBuilder::post("/api/email-messages/compose/")
                          .json(R"({"to_email":"alice@agents.test","subject":"s","content":"c"})"));
  EXPECT_EQ(unnamed.code(), "identity_required");
  EXPECT_EQ(messages(alice)->size(), 0u);
}

}  // namespace
}  // namespace svc::plugins::email
