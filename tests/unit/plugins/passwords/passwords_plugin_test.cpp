// The passwords plugin, loaded from its library with the test kit beside a fake vault
// (fake_vault.h): its routes and statuses, identity scoping, the protected fields kept by the
// vault (never in the plugin's table) and written in the entry's transaction, the generated
// password, and events without values.
#include "../vault/fake_vault.h"

#include <svc/sdk/testing.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Session.h>
#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

namespace svc::plugins::passwords {
namespace {

using namespace Poco::Data::Keywords;
using sdk::testing::identityPrincipal;
using sdk::testing::managementPrincipal;
using sdk::testing::PluginHarness;
using sdk::testing::RequestBuilder;
using sdk::testing::TestResponse;
using vault::testing::FakeVault;
using vault::testing::FakeVaultPlugin;

constexpr const char* kAccount = "aaaaaaaa-0000-4000-8000-000000000000";
constexpr const char* kOther = "bbbbbbbb-0000-4000-8000-000000000000";
constexpr const char* kAnn = "aaaaaaaa-1111-4000-8000-000000000000";
constexpr const char* kBob = "aaaaaaaa-2222-4000-8000-000000000000";
constexpr const char* kOtherIdentity = "bbbbbbbb-1111-4000-8000-000000000000";
const std::string kLibrary = std::string(SVC_BUNDLED_PLUGIN_DIR) + "/svc_plugin_passwords.so";

class PasswordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    harness_.add(std::make_unique<FakeVaultPlugin>(vault_));
    harness_.load(kLibrary);
    harness_.addIdentity(kAccount, kAnn, "Ann");
    harness_.addIdentity(kAccount, kBob, "Bob");
    harness_.addIdentity(kOther, kOtherIdentity, "Other");
    harness_.start();
  }

  TestResponse call(RequestBuilder request, const std::string& identity = "") {
    request.as(managementPrincipal(kAccount));
    if (!identity.empty()) request.identity(identity);
    return harness_.call(request);
  }
  TestResponse create(const std::string& body, const std::string& identity = kAnn) {
    return call(RequestBuilder::post("/api/passwords/").json(body), identity);
  }
  std::string created(const std::string& body, const std::string& identity = kAnn) {
    auto r = create(body, identity);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? r.json()->getValue<std::string>("uuid") : "";
  }
  int count(const std::string& table) {
    int n = 0;
    auto s = harness_.database().session();
    s << "SELECT COUNT(*) FROM " + table, into(n), now;
    return n;
  }

  std::shared_ptr<FakeVault> vault_ = std::make_shared<FakeVault>();
  PluginHarness harness_;
};

TEST_F(PasswordsTest, CreateReadReplacePatchDelete) {
  auto r = create(R"({"domain":"Example.COM","username":"ann","password":"s3cret","notes":"hi"})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.header("Cache-Control").value_or(""), "no-store");
  auto e = r.json();
  const std::string uuid = e->getValue<std::string>("uuid");
  EXPECT_TRUE(sdk::isUuid(uuid));
  EXPECT_EQ(e->getValue<std::string>("identity"), kAnn);
  EXPECT_EQ(e->getValue<std::string>("domain"), "example.com");
  EXPECT_EQ(e->getValue<std::string>("username"), "ann");
  EXPECT_EQ(e->getValue<std::string>("password"), "s3cret");
  EXPECT_EQ(e->getValue<std::string>("notes"), "hi");
  EXPECT_EQ(e->getValue<std::string>("created_dt"), e->getValue<std::string>("updated_dt"));

  auto got = call(RequestBuilder::get("/api/passwords/" + uuid + "/"));
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.json()->getValue<std::string>("password"), "s3cret");

  auto put = call(RequestBuilder::put("/api/passwords/" + uuid + "/")
                      .json(R"({"domain":"other.org","username":"","password":"two","notes":""})"));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.json()->getValue<std::string>("domain"), "other.org");
  EXPECT_EQ(put.json()->getValue<std::string>("username"), "");
  EXPECT_EQ(put.json()->getValue<std::string>("notes"), "");
  EXPECT_GE(put.json()->getValue<std::string>("updated_dt"),
            put.json()->getValue<std::string>("created_dt"));
  auto half = call(RequestBuilder::put("/api/passwords/" + uuid + "/").json(R"({"domain":"x"})"));
  EXPECT_EQ(half.status, 400);
  EXPECT_EQ(half.json()->getObject("errors")->size(), 3u);

  auto patch =
      call(RequestBuilder::patch("/api/passwords/" + uuid + "/").json(R"({"password":"three"})"));
  ASSERT_EQ(patch.status, 200) << patch.body;
  EXPECT_EQ(patch.json()->getValue<std::string>("domain"), "other.org");
  EXPECT_EQ(patch.json()->getValue<std::string>("password"), "three");
  auto nothing = call(RequestBuilder::patch("/api/passwords/" + uuid + "/").json("{}"));
  EXPECT_EQ(nothing.status, 200);
  EXPECT_EQ(nothing.json()->getValue<std::string>("password"), "three");

  EXPECT_EQ(call(RequestBuilder::del("/api/passwords/" + uuid + "/")).status, 204);
  EXPECT_EQ(call(RequestBuilder::get("/api/passwords/" + uuid + "/")).status, 404);
  EXPECT_EQ(call(RequestBuilder::del("/api/passwords/" + uuid + "/")).status, 404);
  EXPECT_EQ(count("password_entries"), 0);
  EXPECT_EQ(count("fake_vault"), 0) << "the vault's values go with the entry";
}

TEST_F(PasswordsTest, TheProtectedFieldsAreTheVaultsAlone) {
  created(R"({"domain":"example.com","username":"ann-user","password":"pw-value","notes":"n"})");
  std::vector<std::string> domains;
  auto s = harness_.database().session();
  s << "SELECT domain FROM password_entries", into(domains), now;
  EXPECT_EQ(domains, std::vector<std::string>{"example.com"});
  std::vector<std::string> fields, values;
  s << "SELECT field, value FROM fake_vault ORDER BY field", into(fields), into(values), now;
  EXPECT_EQ(fields, (std::vector<std::string>{"notes", "password", "username"}));
  EXPECT_EQ(values, (std::vector<std::string>{"n", "pw-value", "ann-user"}));
}

TEST_F(PasswordsTest, WithoutAPasswordOneIsGeneratedUnlessTheAccountSealsItsValues) {
  auto r = create(R"({"domain":"example.com"})");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string password = r.json()->getValue<std::string>("password");
  EXPECT_EQ(password.size(), 16u);
  for (const char* cls : {"0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                          "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"}) {
    EXPECT_NE(password.find_first_of(cls), std::string::npos) << password;
  }
  EXPECT_EQ(
      call(RequestBuilder::get("/api/passwords/" + r.json()->getValue<std::string>("uuid") + "/"))
          .json()
          ->getValue<std::string>("password"),
      password);

  vault_->setEndToEnd(kAccount);
  auto refused = create(R"({"domain":"sealed.example"})");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.json()->getObject("errors")->size(), 1u);
  EXPECT_TRUE(refused.json()->getObject("errors")->has("password"));
  EXPECT_EQ(count("password_entries"), 1);
  // The vault's own rule: plaintext is refused, naming the field, and nothing is stored.
  auto plain = create(R"({"domain":"sealed.example","password":"e2e::AAAA","username":"ann"})");
  EXPECT_EQ(plain.status, 400) << plain.body;
  EXPECT_TRUE(plain.json()->getObject("errors")->has("username"));
  EXPECT_EQ(count("password_entries"), 1);
  EXPECT_EQ(created(R"({"domain":"sealed.example","password":"e2e::AAAA"})").empty(), false);
}

TEST_F(PasswordsTest, AVaultRefusalStoresNothingAndAnnouncesNothing) {
  const std::string uuid = created(R"({"domain":"example.com","password":"one"})");
  ASSERT_TRUE(harness_.events().waitFor("password.created", std::chrono::seconds(30)));
  harness_.events().clear();
  vault_->setRekeying(kAccount, true);
  auto post = create(R"({"domain":"example.org","password":"two"})");
  EXPECT_EQ(post.status, 409);
  EXPECT_EQ(post.code(), "vault_rekeying");
  auto patch =
      call(RequestBuilder::patch("/api/passwords/" + uuid + "/").json(R"({"domain":"changed"})"));
  EXPECT_EQ(patch.status, 200) << "no protected field: the vault is not asked";
  auto patch2 = call(RequestBuilder::patch("/api/passwords/" + uuid + "/")
                         .json(R"({"domain":"again","password":"two"})"));
  EXPECT_EQ(patch2.status, 409);
  EXPECT_EQ(call(RequestBuilder::del("/api/passwords/" + uuid + "/")).status, 409);
  vault_->setRekeying(kAccount, false);
  auto now_ = call(RequestBuilder::get("/api/passwords/" + uuid + "/")).json();
  EXPECT_EQ(now_->getValue<std::string>("domain"), "changed");
  EXPECT_EQ(now_->getValue<std::string>("password"), "one");
  EXPECT_EQ(count("password_entries"), 1);
  ASSERT_TRUE(harness_.events().waitFor("password.updated", std::chrono::seconds(30)));
  EXPECT_EQ(harness_.events().ofType("password.updated").size(), 1u);
  EXPECT_TRUE(harness_.events().ofType("password.created").empty());
  EXPECT_TRUE(harness_.events().ofType("password.deleted").empty());
}

TEST_F(PasswordsTest, EventsCarryNoValue) {
  const std::string uuid =
      created(R"({"domain":"example.com","username":"u-1","password":"p-1","notes":"n-1"})");
  call(RequestBuilder::patch("/api/passwords/" + uuid + "/").json(R"({"password":"p-2"})"));
  call(RequestBuilder::del("/api/passwords/" + uuid + "/"));
  for (const char* type : {"password.created", "password.updated", "password.deleted"}) {
    auto e = harness_.events().waitFor(type, std::chrono::seconds(30));
    ASSERT_TRUE(e) << type;
    EXPECT_EQ(e->account, kAccount);
    EXPECT_EQ(e->identity, kAnn);
    EXPECT_EQ(e->object->getValue<std::string>("uuid"), uuid);
    EXPECT_EQ(e->object->getValue<std::string>("domain"), "example.com");
    for (const char* secret : {"username", "password", "notes"}) {
      EXPECT_FALSE(e->object->has(secret)) << type;
    }
    std::ostringstream text;
    e->object->stringify(text);
    for (const char* value : {"u-1", "p-1", "p-2", "n-1"}) {
      EXPECT_EQ(text.str().find(value), std::string::npos) << type;
    }
  }
}

TEST_F(PasswordsTest, ListsNewestFirstWithFiltersAndOneVaultRead) {
  created(R"({"domain":"mail.example.com","password":"a"})");
  created(R"({"domain":"Example.com","password":"b"})");
  created(R"({"domain":"shop.test","password":"c"})", kBob);
  created(R"({"domain":"example.com","password":"d"})");
  auto all = call(RequestBuilder::get("/api/passwords/"));
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.json()->getValue<int>("count"), 4);
  auto results = all.json()->getArray("results");
  EXPECT_EQ(results->getObject(0)->getValue<std::string>("password"), "d");
  EXPECT_EQ(results->getObject(3)->getValue<std::string>("password"), "a");

  const int before = vault_->gets;
  auto ann = call(RequestBuilder::get("/api/passwords/?limit=2"), kAnn).json();
  EXPECT_EQ(vault_->gets - before, 1) << "a page's values in one vault read";
  EXPECT_EQ(ann->getValue<int>("count"), 3);
  EXPECT_EQ(ann->getArray("results")->size(), 2u);
  EXPECT_FALSE(ann->isNull("next"));

  auto exact = call(RequestBuilder::get("/api/passwords/?domain=EXAMPLE.com")).json();
  EXPECT_EQ(exact->getValue<int>("count"), 2);
  auto search = call(RequestBuilder::get("/api/passwords/?search=XAMP")).json();
  EXPECT_EQ(search->getValue<int>("count"), 3);
  auto wild = call(RequestBuilder::get("/api/passwords/?search=%25")).json();
  EXPECT_EQ(wild->getValue<int>("count"), 0) << "no wildcard in a search";
  EXPECT_EQ(call(RequestBuilder::get("/api/passwords/?domain=a%20b")).status, 400);
  EXPECT_EQ(call(RequestBuilder::get("/api/passwords/?limit=x")).status, 400);
}

TEST_F(PasswordsTest, IdentitiesAndAccountsSeeOnlyTheirOwn) {
  const std::string ann = created(R"({"domain":"a.example","password":"a"})");
  const std::string bob = created(R"({"domain":"b.example","password":"b"})", kBob);
  auto asAnn = [&](RequestBuilder r) {
    r.as(identityPrincipal(kAccount, kAnn));
    return harness_.call(r);
  };
  auto list = asAnn(RequestBuilder::get("/api/passwords/")).json();
  EXPECT_EQ(list->getValue<int>("count"), 1);
  EXPECT_EQ(asAnn(RequestBuilder::get("/api/passwords/" + ann + "/")).status, 200);
  EXPECT_EQ(asAnn(RequestBuilder::get("/api/passwords/" + bob + "/")).status, 404);
  EXPECT_EQ(asAnn(RequestBuilder::patch("/api/passwords/" + bob + "/").json(R"({"password":"x"})"))
                .status,
            404);
  EXPECT_EQ(asAnn(RequestBuilder::del("/api/passwords/" + bob + "/")).status, 404);
  EXPECT_EQ(asAnn(RequestBuilder::get("/api/passwords/").identity(kBob)).status, 403);
  // A management key naming Ann sees Ann's entries only.
  EXPECT_EQ(call(RequestBuilder::get("/api/passwords/" + bob + "/"), kAnn).status, 404);
  // Another account: nothing, and 404 for each entry.
  auto other = [&](RequestBuilder r) {
    r.as(managementPrincipal(kOther));
    return harness_.call(r);
  };
  EXPECT_EQ(other(RequestBuilder::get("/api/passwords/")).json()->getValue<int>("count"), 0);
  for (const auto& uuid : {ann, bob}) {
    EXPECT_EQ(other(RequestBuilder::get("/api/passwords/" + uuid + "/")).status, 404);
    EXPECT_EQ(other(RequestBuilder::put("/api/passwords/" + uuid + "/")
                        .json(R"({"domain":"x","username":"","password":"p","notes":""})"))
                  .status,
              404);
    EXPECT_EQ(other(RequestBuilder::del("/api/passwords/" + uuid + "/")).status, 404);
  }
  EXPECT_EQ(count("password_entries"), 2);
  EXPECT_EQ(call(RequestBuilder::get("/api/passwords/not-a-uuid/")).status, 404);
  // POST needs an identity.
  auto none = call(RequestBuilder::post("/api/passwords/").json(R"({"domain":"x"})"));
  EXPECT_EQ(none.status, 400);
  EXPECT_EQ(none.code(), "identity_required");
}

TEST_F(PasswordsTest, BadInputNamesEveryFieldAndStoresNothing) {
  auto r = create(R"({"domain":"","username":7,"password":"","notes":"\u0000"})");
  ASSERT_EQ(r.status, 400) << r.body;
  auto errors = r.json()->getObject("errors");
  for (const char* f : {"domain", "username", "password", "notes"})
    EXPECT_TRUE(errors->has(f)) << f;
  EXPECT_EQ(create(R"({"password":"x"})").status, 400);
  EXPECT_EQ(create("[1]").status, 400);
  EXPECT_EQ(count("password_entries"), 0);
  EXPECT_EQ(count("fake_vault"), 0);
  const std::string uuid = created(R"({"domain":"a.example","password":"a"})");
  auto patch = call(RequestBuilder::patch("/api/passwords/" + uuid + "/")
                        .json(R"({"domain":"ok.example","password":""})"));
  EXPECT_EQ(patch.status, 400);
  auto still = call(RequestBuilder::get("/api/passwords/" + uuid + "/")).json();
  EXPECT_EQ(still->getValue<std::string>("domain"), "a.example");
  EXPECT_EQ(still->getValue<std::string>("password"), "a");
}

TEST_F(PasswordsTest, TheGeneratorRoute) {
  auto r = call(RequestBuilder::get(
      "/api/passwords/generate-password/?length=40&special=false&exclude_chars=abc"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Cache-Control").value_or(""), "no-store");
  const std::string p = r.json()->getValue<std::string>("password");
  EXPECT_EQ(p.size(), 40u);
  EXPECT_EQ(p.find_first_of("abc!#$%&*"), std::string::npos) << p;
  // The declaration's problems come first (a length out of range), then those of meaning: no
  // class left, each class named.
  auto bad = call(RequestBuilder::get(
      "/api/passwords/generate-password/?length=2&digits=false&lowercase=false&uppercase=false&"
      "special=false&zz=1"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json()->getObject("errors")->size(), 2u) << bad.body;  // length, zz
  auto none = call(RequestBuilder::get(
      "/api/passwords/generate-password/?length=8&digits=false&lowercase=false&uppercase=false&"
      "special=false"));
  EXPECT_EQ(none.status, 400);
  EXPECT_EQ(none.json()->getObject("errors")->size(), 4u) << none.body;
  EXPECT_EQ(call(RequestBuilder::post("/api/passwords/generate-password/").json("{}")).status, 405);
}

}  // namespace
}  // namespace svc::plugins::passwords
