// The fence: every route of every loaded plugin, enumerated from the running server (so a new
// plugin's routes are covered without editing this test), against every kind of credential:
// none, garbage, a bad checksum, a revoked key, an expired token, another account's management
// key, another identity's key, and the right key. Also the device flow's expiry and the access
// token's, with the server's test clock moved forward instead of waiting.
#include "harness.h"

#include <Poco/JSON/Array.h>
#include <Poco/URI.h>

#include <gtest/gtest.h>

#include <regex>

namespace svc::testing {
namespace {

class Fence : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Svcd::Options o;
    o.plugins = {"auth",  "identities", "dashboard", "email",   "sms",
                 "vault", "contacts",   "passwords", "secrets", "webhooks"};
    o.args = {"--set", "testing.clock=true",
              "--set", "auth.rate.failed_auth_per_minute=0",
              "--set", "auth.rate.failed_auth_per_key_per_minute=0",
              "--set", "auth.device.interval_seconds=0"};
    svcd_ = new Svcd(o);
    ASSERT_TRUE(svcd_->start());
    auto a = login("a@example.com");
    mgmt_a_ = a->getValue<std::string>("management_key");
    access_a_ = a->getValue<std::string>("access");
    mgmt_b_ = login("b@example.com")->getValue<std::string>("management_key");
    a1_ = createIdentity("A1");
    a2_ = createIdentity("A2");
    key_a1_ = identityKey(a1_);
    key_a2_ = identityKey(a2_);
    auto doomed = svcd_->post("/api/auth/keys/", "{\"label\":\"doomed\"}", bearer(mgmt_a_)).json();
    revoked_ = doomed->getValue<std::string>("key");
    ASSERT_EQ(
        http(svcd_->port(), "DELETE", "/api/auth/keys/" + doomed->getValue<std::string>("id") + "/",
             "", bearer(mgmt_a_))
            .status,
        204);
    // A well-formed key whose checksum is wrong: last character changed.
    bad_checksum_ = mgmt_a_;
    bad_checksum_.back() = bad_checksum_.back() == 'A' ? 'B' : 'A';
    // The access token expires an hour on: move the clock past it.
    ASSERT_EQ(advance(3601).status, 200);
  }
  static void TearDownTestSuite() {
    delete svcd_;
    svcd_ = nullptr;
  }

  static HttpReply op(const std::string& path, const std::string& body) {
    return http(svcd_->adminPort(), "POST", path, body, bearer(svcd_->adminToken()));
  }
  static HttpReply advance(int seconds) {
    return op("/admin/clock/", "{\"advance_seconds\":" + std::to_string(seconds) + "}");
  }
  static Poco::JSON::Object::Ptr login(const std::string& email) {
    return operatorLogin(*svcd_, email);
  }
  static std::string createIdentity(const std::string& name) {
    auto r = svcd_->post("/api/identities/", "{\"name\":\"" + name + "\"}", bearer(mgmt_a_));
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("uuid");
  }
  static std::string identityKey(const std::string& identity) {
    auto r = svcd_->post("/api/auth/keys/identity/", "{\"identity\":\"" + identity + "\"}",
                         bearer(mgmt_a_));
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("key");
  }

  struct Endpoint {
    std::string method, path, auth;
  };
  // Every public route of every loaded plugin, as the operator listener reports them.
  static std::vector<Endpoint> endpoints() {
    auto r = http(svcd_->adminPort(), "GET", "/admin/plugins", "", bearer(svcd_->adminToken()));
    std::vector<Endpoint> out;
    auto plugins = r.json()->getArray("plugins");
    for (std::size_t i = 0; i < plugins->size(); ++i) {
      auto list = plugins->getObject(static_cast<unsigned>(i))->getArray("endpoints");
      for (std::size_t j = 0; j < list->size(); ++j) {
        auto e = list->getObject(static_cast<unsigned>(j));
        if (e->getValue<std::string>("auth") == "operator") continue;
        out.push_back({e->getValue<std::string>("method"), e->getValue<std::string>("path"),
                       e->getValue<std::string>("auth")});
      }
    }
    return out;
  }
  // The path with every parameter filled: the target identity where the parameter names an
  // identity, else a fresh uuid (a resource that does not exist).
  static std::string fill(const std::string& pattern, const std::string& identity) {
    static const std::regex param(R"(\{([a-z_]+)\})");
    std::string out;
    auto begin = std::sregex_iterator(pattern.begin(), pattern.end(), param);
    std::size_t at = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      out += pattern.substr(at, static_cast<std::size_t>(it->position()) - at);
      const bool names_identity = (*it)[1] == "identity" ||
                                  ((*it)[1] == "uuid" && pattern.rfind("/api/identities/", 0) == 0);
      out += names_identity ? identity : "0b5d1e8e-8f0c-4a8e-9d53-0d7e0e4f3a11";
      at = static_cast<std::size_t>(it->position() + it->length());
    }
    out += pattern.substr(at);
    // A one-call wait that is let through holds its answer: a second, not its default 30.
    const bool wait = out.size() >= 6 && out.compare(out.size() - 6, 6, "/wait/") == 0;
    return out + (out.find('?') == std::string::npos ? "?" : "&") + "identity=" + identity +
           (wait ? "&timeout=1" : "");
  }
  static HttpReply call(const Endpoint& e, const std::string& identity,
                        std::map<std::string, std::string> headers) {
    headers.emplace("Content-Type", "application/json");
    const bool has_body = e.method == "POST" || e.method == "PUT" || e.method == "PATCH";
    return http(svcd_->port(), e.method, fill(e.path, identity), has_body ? "{}" : "", headers);
  }

  static Svcd* svcd_;
  static std::string mgmt_a_, access_a_, mgmt_b_, a1_, a2_, key_a1_, key_a2_, revoked_,
      bad_checksum_;
};

Svcd* Fence::svcd_ = nullptr;
std::string Fence::mgmt_a_, Fence::access_a_, Fence::mgmt_b_, Fence::a1_, Fence::a2_,
    Fence::key_a1_, Fence::key_a2_, Fence::revoked_, Fence::bad_checksum_;

TEST_F(Fence, EveryRouteAgainstEveryCredential) {
  auto list = endpoints();
  // auth, identities and dashboard are loaded: their routes are all here.
  ASSERT_GE(list.size(), 25u);
  int fenced = 0;
  for (const auto& e : list) {
    SCOPED_TRACE(e.method + " " + e.path + " (" + e.auth + ")");
    if (e.auth == "none") {
      // Public routes read no credential; whatever comes, they answer without a server error.
      for (const auto& token : {std::string("garbage"), revoked_, mgmt_b_}) {
        EXPECT_LT(call(e, a1_, bearer(token)).status, 500);
      }
      continue;
    }
    ++fenced;
    auto none = call(e, a1_, {});
    EXPECT_EQ(none.status, 401) << none.body;
    EXPECT_EQ(none.code(), "not_authenticated");
    for (const auto& bad :
         {std::string("garbage"), std::string("svc_mgmt_short"), bad_checksum_, revoked_}) {
      auto r = call(e, a1_, bearer(bad));
      EXPECT_EQ(r.status, 401) << bad << ": " << r.body;
      EXPECT_EQ(r.code(), "authentication_failed");
    }
    auto expired = call(e, a1_, bearer(access_a_));
    EXPECT_EQ(expired.status, 401) << expired.body;
    EXPECT_EQ(expired.code(), "token_expired");

    // Another account's management key naming A's identity: as if it did not exist.
    auto other_account = call(e, a1_, bearer(mgmt_b_));
    if (e.auth == "user") {
      EXPECT_EQ(other_account.status, 403) << other_account.body;
    } else {
      EXPECT_EQ(other_account.status, 404) << other_account.body;
    }
    // Another identity's key naming A1: refused outright.
    auto other_identity = call(e, a1_, bearer(key_a2_));
    EXPECT_EQ(other_identity.status, 403) << other_identity.body;

    // The right key: past the fence (validation or a missing resource may still answer).
    auto right = call(e, a1_, bearer(e.auth == "account" ? mgmt_a_ : key_a1_));
    if (e.auth == "user") {
      EXPECT_EQ(right.status, 403) << "keys are not signed-in users";
    } else {
      EXPECT_NE(right.status, 401) << right.body;
      EXPECT_NE(right.status, 403) << right.body;
      EXPECT_TRUE(right.status < 500 || right.code() == "service_unavailable") << right.body;
      if (right.status == 404) {
        EXPECT_EQ(right.body.find("identity"), std::string::npos) << right.body;
      }
    }
    auto right_mgmt = call(e, a1_, bearer(mgmt_a_));
    if (e.auth != "user") {
      EXPECT_NE(right_mgmt.status, 401);
      EXPECT_NE(right_mgmt.status, 403) << right_mgmt.body;
      EXPECT_TRUE(right_mgmt.status < 500 || right_mgmt.code() == "service_unavailable")
          << right_mgmt.body;
    }
    // An identity key on a management route is refused.
    if (e.auth == "account") {
      EXPECT_EQ(call(e, a1_, bearer(key_a1_)).status, 403);
    }
  }
  EXPECT_GE(fenced, 12);
}

TEST_F(Fence, IdentityKeysSeeOnlyTheirOwnIdentity) {
  auto mine = svcd_->get("/api/identities/", bearer(key_a1_)).json();
  ASSERT_EQ(mine->getValue<int>("count"), 1);
  EXPECT_EQ(mine->getArray("results")->getObject(0)->getValue<std::string>("uuid"), a1_);
  auto all = svcd_->get("/api/identities/", bearer(mgmt_a_)).json();
  EXPECT_EQ(all->getValue<int>("count"), 2);
  EXPECT_EQ(svcd_->get("/api/identities/", bearer(mgmt_b_)).json()->getValue<int>("count"), 0);
  EXPECT_EQ(svcd_->get("/api/identities/" + a2_ + "/", bearer(key_a1_)).status, 403);
  EXPECT_EQ(svcd_->get("/api/identities/" + a1_ + "/", bearer(mgmt_b_)).status, 404);
  auto both = svcd_->get("/api/health/whoami/?identity=" + a1_,
                         {{"Authorization", "Bearer " + mgmt_a_}, {"X-Svc-Identity", a2_}});
  EXPECT_EQ(both.status, 400);
  auto who = svcd_->get("/api/health/whoami/?identity=" + a2_, bearer(mgmt_a_)).json();
  EXPECT_EQ(who->getObject("identity")->getValue<std::string>("name"), "A2");
}

TEST_F(Fence, ADeviceCodeExpiresOnTheServersClock) {
  auto d = svcd_->post("/api/auth/device/", "").json();
  const std::string code = d->getValue<std::string>("device_code");
  auto pending = svcd_->post("/api/auth/device/token/", "{\"device_code\":\"" + code + "\"}");
  EXPECT_EQ(pending.json()->getValue<std::string>("error"), "authorization_pending");
  ASSERT_EQ(advance(599).status, 200);
  pending = svcd_->post("/api/auth/device/token/", "{\"device_code\":\"" + code + "\"}");
  EXPECT_EQ(pending.json()->getValue<std::string>("error"), "authorization_pending");
  ASSERT_EQ(advance(2).status, 200);
  auto expired = svcd_->post("/api/auth/device/token/", "{\"device_code\":\"" + code + "\"}");
  EXPECT_EQ(expired.status, 400);
  EXPECT_EQ(expired.json()->getValue<std::string>("error"), "expired_token");
  // An expired code cannot be approved either.
  auto late = op("/admin/auth/device/approve/", "{\"user_code\":\"" +
                                                    d->getValue<std::string>("user_code") +
                                                    "\",\"user\":\"a@example.com\"}");
  EXPECT_EQ(late.status, 404);
}

}  // namespace
}  // namespace svc::testing
