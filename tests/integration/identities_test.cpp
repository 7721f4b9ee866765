// The identities plugin over HTTP: create, read, update, list with pages, the voice-agent settings
// and their URL checks, and the refusals that create nothing while no SMS or email plugin is
// loaded.
#include "harness.h"

#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

namespace svc::testing {
namespace {

class Identities : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start());
    key_ = operatorLogin(*svcd_, "id@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
  }
  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "") {
    return http(svcd_->port(), method, path, body, bearer(key_));
  }
  int count() { return call("GET", "/api/identities/").json()->getValue<int>("count"); }

  std::unique_ptr<Svcd> svcd_;
  std::string key_;
};

TEST_F(Identities, CreateReadUpdateAndList) {
  auto created = call("POST", "/api/identities/", R"({"name":"  Support Bot  "})");
  ASSERT_EQ(created.status, 201) << created.body;
  auto id = created.json();
  const std::string uuid = id->getValue<std::string>("uuid");
  EXPECT_EQ(id->getValue<std::string>("name"), "Support Bot");
  EXPECT_TRUE(id->isNull("email"));
  EXPECT_TRUE(id->isNull("phone"));
  EXPECT_EQ(id->getValue<std::string>("created_dt"), id->getValue<std::string>("updated_dt"));

  auto got = call("GET", "/api/identities/" + uuid + "/");
  EXPECT_EQ(got.json()->getValue<std::string>("name"), "Support Bot");
  EXPECT_EQ(call("PUT", "/api/identities/" + uuid + "/", "{}").status, 400) << "PUT needs name";
  auto patched = call("PATCH", "/api/identities/" + uuid, R"({"name":"Ünïcødé Bot"})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(patched.json()->getValue<std::string>("name"), "Ünïcødé Bot");
  EXPECT_NE(patched.json()->getValue<std::string>("updated_dt"),
            id->getValue<std::string>("updated_dt"));

  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(call("POST", "/api/identities/", "{\"name\":\"n" + std::to_string(i) + "\"}").status,
              201);
  }
  auto page = call("GET", "/api/identities/?limit=2&offset=1").json();
  EXPECT_EQ(page->getValue<int>("count"), 4);
  EXPECT_EQ(page->getArray("results")->size(), 2u);
  EXPECT_NE(page->getValue<std::string>("next").find("offset=3"), std::string::npos);
  EXPECT_NE(page->getValue<std::string>("previous").find("offset=0"), std::string::npos);
  EXPECT_EQ(call("GET", "/api/identities/?limit=x").status, 400);
}

TEST_F(Identities, BadNamesAndUnknownIdentitiesAreRefused) {
  const std::string long_name(101, 'x');
  for (const std::string& body :
       {std::string("{}"), std::string(R"({"name":""})"), std::string(R"({"name":"   "})"),
        std::string(R"({"name":42})"), "{\"name\":\"" + long_name + "\"}",
        std::string(R"({"name":"a\u0001b"})"),
        std::string(R"({"name":"ok","provision_phone":"yes"})")}) {
    auto r = call("POST", "/api/identities/", body);
    EXPECT_EQ(r.status, 400) << body << " " << r.body;
    EXPECT_EQ(r.code(), "invalid");
  }
  EXPECT_EQ(call("POST", "/api/identities/", "{\"name\":\"" + std::string(100, 'y') + "\"}").status,
            201);
  EXPECT_EQ(call("GET", "/api/identities/0b5d1e8e-8f0c-4a8e-9d53-0d7e0e4f3a11/").status, 404);
  EXPECT_EQ(call("GET", "/api/identities/not-a-uuid/").status, 404);
  EXPECT_EQ(count(), 1);
}

TEST_F(Identities, PhonesAndInboxesWithoutTheirPluginsAreFeatureNotEnabledAndCreateNothing) {
  auto phone = call("POST", "/api/identities/", R"({"name":"p","provision_phone":true})");
  // Permanent on this server: a 4xx an agent does not retry, naming what is missing.
  EXPECT_EQ(phone.status, 422) << phone.body;
  EXPECT_EQ(phone.code(), "feature_not_enabled");
  EXPECT_NE(phone.json()->getValue<std::string>("detail").find("'phone'"), std::string::npos)
      << "the refusal names the missing capability: " << phone.body;
  auto mail = call("POST", "/api/identities/", R"({"name":"m","email_identifier":"sales"})");
  EXPECT_EQ(mail.status, 422) << mail.body;
  EXPECT_NE(mail.json()->getValue<std::string>("detail").find("'email'"), std::string::npos)
      << mail.body;
  // The rule for local parts is the email plugin's: without it any identifier is refused the
  // same way, and a field of the wrong type is still 400.
  for (const char* bad : {"-x", "a..b"}) {
    auto bad_mail = call("POST", "/api/identities/",
                         std::string(R"({"name":"m","email_identifier":")") + bad + "\"}");
    EXPECT_EQ(bad_mail.status, 422) << bad << " " << bad_mail.body;
  }
  EXPECT_EQ(call("POST", "/api/identities/", R"({"name":"m","email_identifier":7})").status, 400);
  EXPECT_EQ(count(), 0);
  auto uuid =
      call("POST", "/api/identities/", R"({"name":"q"})").json()->getValue<std::string>("uuid");
  auto action = call("POST", "/api/identities/" + uuid + "/provision-phone/", "{}");
  EXPECT_EQ(action.status, 404) << action.body;
  EXPECT_EQ(action.code(), "feature_not_enabled");
  EXPECT_EQ(
      call("POST", "/api/identities/" + uuid + "/provision-phone/", R"({"country_code":"USA"})")
          .status,
      404);
  // An action no capability has is not found.
  EXPECT_EQ(call("POST", "/api/identities/" + uuid + "/teleport/", "{}").status, 404);
  // A sub-resource without POST is 405, not taken for an action.
  EXPECT_EQ(call("POST", "/api/identities/" + uuid + "/voice-agent/", "{}").status, 405);
  EXPECT_TRUE(call("GET", "/api/identities/" + uuid + "/").json()->isNull("phone"));
}

TEST_F(Identities, VoiceAgentSettingsWithTheirUrlChecks) {
  auto uuid =
      call("POST", "/api/identities/", R"({"name":"v"})").json()->getValue<std::string>("uuid");
  const std::string path = "/api/identities/" + uuid + "/voice-agent/";
  auto empty = call("GET", path).json();
  EXPECT_TRUE(empty->isNull("response_url"));
  EXPECT_FALSE(empty->getValue<bool>("enabled"));
  for (const char* url :
       {"ftp://93.184.216.34/x", "http://user:pw@93.184.216.34/", "http://127.0.0.1:8080/hook",
        "http://10.1.2.3/", "http://192.168.1.1/", "http://172.16.0.1/", "http://169.254.169.254/",
        "http://[::1]/", "http://[fd00::1]/", "http://0.0.0.0/", "http://localhost/", "not a url",
        "http://no-such-host.invalid/", "http://[64:ff9b::a9fe:a9fe]/",
        "http://[2002:a9fe:a9fe::]/", "http://[::ffff:0:7f00:1]/", "http://198.18.0.1/",
        "http://240.0.0.1/"}) {
    auto r = call("PUT", path, "{\"response_url\":\"" + std::string(url) + "\"}");
    EXPECT_EQ(r.status, 400) << url << " " << r.body;
  }
  // An internal address is refused naming the switch a test server uses.
  auto loopback = call("PUT", path, R"({"response_url":"http://127.0.0.1:8080/hook"})");
  EXPECT_NE(loopback.body.find("identities.voice.allow_private_urls=true"), std::string::npos)
      << loopback.body;
  EXPECT_EQ(call("PATCH", path, R"({"enabled":true})").status, 400) << "no URL set yet";
  auto set = call("PUT", path, R"({"response_url":"https://93.184.216.34/voice"})");
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_TRUE(set.json()->getValue<bool>("enabled"));
  auto off = call("PATCH", path, R"({"enabled":false})").json();
  EXPECT_FALSE(off->getValue<bool>("enabled"));
  EXPECT_EQ(off->getValue<std::string>("response_url"), "https://93.184.216.34/voice");
  EXPECT_EQ(call("GET", path).json()->getValue<std::string>("response_url"),
            "https://93.184.216.34/voice");
}

}  // namespace
}  // namespace svc::testing
