// The identities plugin, loaded from its library with the test kit: its routes, the identity
// fence, and the identity extension point (sdk/identity_extensions.h) as another plugin uses it,
// through a small extension plugin defined here.
#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/testing.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Session.h>
#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

#include <atomic>
#include <optional>

namespace svc::plugins::identities {
namespace {

using namespace Poco::Data::Keywords;
using sdk::testing::identityPrincipal;
using sdk::testing::managementPrincipal;
using sdk::testing::PluginHarness;
using sdk::testing::RequestBuilder;
using sdk::testing::TestResponse;

constexpr const char* kAccount = "aaaaaaaa-0000-4000-8000-000000000000";
constexpr const char* kOther = "bbbbbbbb-0000-4000-8000-000000000000";
const std::string kLibrary = std::string(SVC_BUNDLED_PLUGIN_DIR) + "/svc_plugin_identities.so";

// What the badge extension saw, for the test to check.
struct Probe {
  std::atomic<int> validated{0};
  std::atomic<int> provisioned{0};
  std::atomic<int> updated{0};
  std::atomic<int> identity_rows_in_transaction{-1};  // the new identity's, as provision saw it
};

// A third party's part of every identity: a `badge` (create field `badge`, member `badge`, action
// `polish`), kept in a table of its own.
class BadgeExtension : public sdk::IdentityExtension {
 public:
  BadgeExtension(sdk::Database& db, Probe& probe, sdk::IdentityCapability capability)
      : db_(db), probe_(probe), capability_(std::move(capability)) {}
  const sdk::IdentityCapability& capability() const override { return capability_; }
  void validate(const sdk::Request& r) override {
    ++probe_.validated;
    auto badge = r.stringField("badge");
    if (badge && (badge->empty() ||
                  badge->find_first_not_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos)) {
      throw sdk::HttpError::invalid("badge", "lower-case letters only");
    }
  }
  Poco::Dynamic::Var provision(Poco::Data::Session& s, const sdk::IdentityInfo& identity,
                               const sdk::Request& r) override {
    ++probe_.provisioned;
    std::string uuid = identity.uuid;
    int rows = 0;
    s << "SELECT COUNT(*) FROM identities WHERE uuid = ?", use(uuid), into(rows), now;
    probe_.identity_rows_in_transaction = rows;
    auto badge = r.stringField("badge");
    if (!badge) return {};
    std::string b = *badge;
    int taken = 0;
    s << "SELECT COUNT(*) FROM badges WHERE badge = ?", use(b), into(taken), now;
    s << "INSERT INTO badges (identity_uuid, badge, shine) VALUES (?, ?, 0)", use(uuid), use(b),
        now;
    // Refused after this plugin's and the identity's rows are written: both roll back.
    if (taken) throw sdk::HttpError(409, "conflict", "This badge is taken.");
    return json(b, 0);
  }
  // `badge` is updatable: a PATCH carrying it re-badges the identity in its update transaction.
  std::optional<Poco::Dynamic::Var> update(Poco::Data::Session& s,
                                           const sdk::IdentityInfo& identity,
                                           const sdk::Request& r) override {
    ++probe_.updated;
    validate(r);
    std::string uuid = identity.uuid, b = r.stringField("badge").value_or("");
    s << "UPDATE badges SET badge = ? WHERE identity_uuid = ?", use(b), use(uuid), now;
    return json(b, 0);
  }
  std::map<std::string, Poco::Dynamic::Var> describe(
      const std::vector<std::string>& uuids) override {
    std::map<std::string, Poco::Dynamic::Var> out;
    auto s = db_.session();
    for (std::string uuid : uuids) {
      std::vector<std::string> badge;
      std::vector<int> shine;
      s << "SELECT badge, shine FROM badges WHERE identity_uuid = ?", use(uuid), into(badge),
          into(shine), now;
      if (!badge.empty()) out[uuid] = json(badge[0], shine[0]);
    }
    return out;
  }
  sdk::Response act(const std::string&, const sdk::IdentityInfo& identity, sdk::Request&) override {
    std::string uuid = identity.uuid;
    db_.transaction([&](Poco::Data::Session& s) {
      s << "UPDATE badges SET shine = shine + 1 WHERE identity_uuid = ?", use(uuid), now;
    });
    auto described = describe({uuid});
    if (described.empty()) throw sdk::HttpError::notFound("badge");
    return sdk::Response::json(200, described[uuid]);
  }

 private:
  static Poco::JSON::Object::Ptr json(const std::string& badge, int shine) {
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("badge", badge);
    o->set("shine", shine);
    return o;
  }
  sdk::Database& db_;
  Probe& probe_;
  sdk::IdentityCapability capability_;
};

sdk::IdentityCapability badgeCapability() {
  return {"badge", {{"badge", sdk::IdentityField::Type::kString, true}}, {"polish"}};
}

// The plugin that adds the extension, as a third party's would: it requires identities and adds
// its extension in configure().
class BadgePlugin : public sdk::Plugin {
 public:
  BadgePlugin(Probe& probe, std::string name = "badges",
              sdk::IdentityCapability capability = badgeCapability())
      : probe_(probe), capability_(std::move(capability)) {
    info_.name = std::move(name);
    info_.version = "1.0.0";
    info_.description = "badges on identities";
    info_.requires_plugins = {"identities"};
    info_.uses_services = {sdk::kIdentityExtensionsService.name};
  }
  const sdk::PluginInfo& info() const override { return info_; }
  void configure(sdk::PluginContext& context) override {
    context.services()
        .require(sdk::kIdentityExtensionsService)
        ->add(std::make_shared<BadgeExtension>(context.database(), probe_, capability_));
  }
  std::vector<sdk::Migration> migrations() const override {
    if (info_.name != "badges") return {};
    return {sdk::Migration::portable(
        1, "badges",
        {"CREATE TABLE badges (identity_uuid CHAR(36) PRIMARY KEY, badge TEXT, shine INT)"})};
  }
  // An identity-scoped route: the kernel resolves its identity through the identities plugin.
  void registerRoutes(sdk::RouteRegistry& routes) override {
    if (info_.name != "badges") return;
    routes.add({"GET", "/api/badges/whose/", sdk::AuthNeed::kIdentity, sdk::BodyKind::kJson, 0,
                "The identity a request names.", [](sdk::Request& r) {
                  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
                  o->set("uuid", r.identity->uuid);
                  o->set("name", r.identity->name);
                  return sdk::Response::json(200, o);
                }});
  }
  void registerServices(sdk::ServiceRegistry&) override {}
  void start() override {}
  void stop() override {}

 private:
  sdk::PluginInfo info_;
  Probe& probe_;
  sdk::IdentityCapability capability_;
};

class IdentitiesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    harness_.load(kLibrary);
    harness_.add(std::make_unique<BadgePlugin>(probe_));
    harness_.start();
  }
  TestResponse create(const std::string& body, const std::string& account = kAccount) {
    return harness_.call(
        RequestBuilder::post("/api/identities/").as(managementPrincipal(account)).json(body));
  }
  std::string createdUuid(const std::string& body) {
    auto r = create(body);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? r.json()->getValue<std::string>("uuid") : "";
  }
  int identityRows() {
    int n = 0;
    auto s = harness_.database().session();
    s << "SELECT COUNT(*) FROM identities", into(n), now;
    return n;
  }
  int badgeRows() {
    int n = 0;
    auto s = harness_.database().session();
    s << "SELECT COUNT(*) FROM badges", into(n), now;
    return n;
  }

  Probe probe_;
  PluginHarness harness_;  // identities offers the IdentityDirectory; the stub authenticates
};

TEST_F(IdentitiesTest, AnUpdatableFieldChangesWithTheIdentityInOneTransaction) {
  const std::string uuid = createdUuid(R"({"name":"Bot","badge":"gold"})");
  auto patch = [&](const std::string& body) {
    return harness_.call(RequestBuilder::patch("/api/identities/" + uuid + "/")
                             .as(managementPrincipal(kAccount))
                             .json(body));
  };
  auto badge = [&]() {
    return harness_
        .call(
            RequestBuilder::get("/api/identities/" + uuid + "/").as(managementPrincipal(kAccount)))
        .json()
        ->getObject("badge")
        ->getValue<std::string>("badge");
  };
  ASSERT_EQ(patch(R"({"name":"Renamed"})").status, 200);
  EXPECT_EQ(probe_.updated, 0) << "a body without the field leaves the extension alone";
  auto rebadged = patch(R"({"badge":"silver"})");
  ASSERT_EQ(rebadged.status, 200) << rebadged.body;
  EXPECT_EQ(probe_.updated, 1);
  EXPECT_EQ(rebadged.json()->getObject("badge")->getValue<std::string>("badge"), "silver")
      << "the answer shows the member as update() left it";
  EXPECT_EQ(badge(), "silver");
  // The extension refuses: the identity's own change rolls back with it.
  auto refused = patch(R"({"name":"Other","badge":"NOT OK"})");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(badge(), "silver");
  EXPECT_EQ(harness_
                .call(RequestBuilder::get("/api/identities/" + uuid + "/")
                          .as(managementPrincipal(kAccount)))
                .json()
                ->getValue<std::string>("name"),
            "Renamed");
}

TEST_F(IdentitiesTest, CreatesListsReadsAndRenames) {
  auto created = create(R"({"name":"  Support Bot  "})");
  ASSERT_EQ(created.status, 201) << created.body;
  auto id = created.json();
  const std::string uuid = id->getValue<std::string>("uuid");
  EXPECT_TRUE(sdk::isUuid(uuid));
  EXPECT_EQ(id->getValue<std::string>("name"), "Support Bot");
  EXPECT_EQ(id->getValue<std::string>("created_dt"), id->getValue<std::string>("updated_dt"));

  auto read = harness_.call(
      RequestBuilder::get("/api/identities/" + uuid + "/").as(managementPrincipal(kAccount)));
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(read.json()->getValue<std::string>("name"), "Support Bot");
  auto renamed = harness_.call(RequestBuilder::patch("/api/identities/" + uuid + "/")
                                   .as(managementPrincipal(kAccount))
                                   .json(R"({"name":"Helper"})"));
  ASSERT_EQ(renamed.status, 200) << renamed.body;
  EXPECT_EQ(renamed.json()->getValue<std::string>("name"), "Helper");
  EXPECT_EQ(harness_
                .call(RequestBuilder::put("/api/identities/" + uuid + "/")
                          .as(managementPrincipal(kAccount))
                          .json("{}"))
                .code(),
            "invalid");

  createdUuid(R"({"name":"Second"})");
  auto list =
      harness_.call(RequestBuilder::get("/api/identities/").as(managementPrincipal(kAccount)));
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.json()->getValue<int>("count"), 2);
  auto results = list.json()->getArray("results");
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ(results->getObject(0)->getValue<std::string>("name"), "Helper");  // oldest first
  EXPECT_EQ(results->getObject(1)->getValue<std::string>("name"), "Second");

  // The events say the same, committed.
  auto made = harness_.events().waitFor("identity.created", std::chrono::seconds(30));
  ASSERT_TRUE(made);
  EXPECT_EQ(made->account, kAccount);
  EXPECT_EQ(made->identity, uuid);
  auto updated = harness_.events().waitFor("identity.updated", std::chrono::seconds(30));
  ASSERT_TRUE(updated);
  EXPECT_EQ(updated->object->getValue<std::string>("name"), "Helper");
}

TEST_F(IdentitiesTest, FencesIdentitiesToTheirAccountAndTheirKey) {
  const std::string mine = createdUuid(R"({"name":"mine"})");
  const std::string sibling = createdUuid(R"({"name":"sibling"})");
  auto path = [](const std::string& uuid) { return "/api/identities/" + uuid + "/"; };

  // Another account does not see them at all.
  EXPECT_EQ(harness_.call(RequestBuilder::get(path(mine)).as(managementPrincipal(kOther))).status,
            404);
  EXPECT_EQ(harness_
                .call(RequestBuilder::patch(path(mine))
                          .as(managementPrincipal(kOther))
                          .json(R"({"name":"stolen"})"))
                .status,
            404);
  auto theirs =
      harness_.call(RequestBuilder::get("/api/identities/").as(managementPrincipal(kOther)));
  EXPECT_EQ(theirs.json()->getValue<int>("count"), 0);

  // An identity key reaches its own identity only.
  const auto key = identityPrincipal(kAccount, mine);
  EXPECT_EQ(harness_.call(RequestBuilder::get(path(mine)).as(key)).status, 200);
  auto other = harness_.call(RequestBuilder::get(path(sibling)).as(key));
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(other.code(), "permission_denied");
  auto listed = harness_.call(RequestBuilder::get("/api/identities/").as(key)).json();
  EXPECT_EQ(listed->getValue<int>("count"), 1);
  EXPECT_EQ(listed->getArray("results")->getObject(0)->getValue<std::string>("uuid"), mine);
  // Creating is the account's business.
  EXPECT_EQ(harness_.call(RequestBuilder::post("/api/identities/").as(key).json(R"({"name":"x"})"))
                .status,
            403);

  // Every plugin's identity-scoped routes are fenced by the plugin's IdentityDirectory.
  auto whose = [&](const sdk::Principal& p, const std::string& named) {
    auto r = RequestBuilder::get("/api/badges/whose/").as(p);
    if (!named.empty()) r.identity(named);
    return harness_.call(r);
  };
  auto named = whose(managementPrincipal(kAccount), mine);
  ASSERT_EQ(named.status, 200) << named.body;
  EXPECT_EQ(named.json()->getValue<std::string>("name"), "mine");
  EXPECT_EQ(whose(key, "").json()->getValue<std::string>("uuid"), mine);
  EXPECT_EQ(whose(key, sibling).status, 403);
  EXPECT_EQ(whose(managementPrincipal(kOther), mine).status, 404);
  // A rename shows at once (the directory's cache forgets it).
  ASSERT_EQ(harness_
                .call(RequestBuilder::patch(path(mine))
                          .as(managementPrincipal(kAccount))
                          .json(R"({"name":"renamed"})"))
                .status,
            200);
  EXPECT_EQ(whose(managementPrincipal(kAccount), mine).json()->getValue<std::string>("name"),
            "renamed");
}

TEST_F(IdentitiesTest, AnExtensionValidatesBeforeAnythingIsWritten) {
  auto refused = create(R"({"name":"bot","badge":"Not Letters"})");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.code(), "invalid");
  EXPECT_TRUE(refused.json()->getObject("errors")->has("badge"));
  EXPECT_EQ(probe_.validated.load(), 1);
  EXPECT_EQ(probe_.provisioned.load(), 0);
  EXPECT_EQ(identityRows(), 0);
  // The identities plugin's own rule comes first: a bad name never reaches the extension.
  EXPECT_EQ(create(R"({"name":"","badge":"gold"})").status, 400);
  EXPECT_EQ(probe_.validated.load(), 1);
}

TEST_F(IdentitiesTest, AnExtensionProvisionsInsideTheIdentitysTransaction) {
  auto created = create(R"({"name":"bot","badge":"gold"})");
  ASSERT_EQ(created.status, 201) << created.body;
  // provision saw the identity's row, inserted by the same, not yet committed, transaction.
  EXPECT_EQ(probe_.identity_rows_in_transaction.load(), 1);
  EXPECT_EQ(created.json()->getObject("badge")->getValue<std::string>("badge"), "gold");

  // A refusal in provision rolls everything back: the identity and the extension's own row.
  auto taken = create(R"({"name":"copycat","badge":"gold"})");
  EXPECT_EQ(taken.status, 409) << taken.body;
  EXPECT_EQ(taken.code(), "conflict");
  EXPECT_EQ(probe_.provisioned.load(), 2);
  EXPECT_EQ(identityRows(), 1);
  EXPECT_EQ(badgeRows(), 1);
  ASSERT_TRUE(harness_.events().waitFor("identity.created", std::chrono::seconds(30)));
  EXPECT_FALSE(harness_.events().waitFor("identity.created", std::chrono::milliseconds(50)));
}

TEST_F(IdentitiesTest, AnExtensionDescribesItsMemberInListsReadsAndEvents) {
  const std::string with = createdUuid(R"({"name":"with","badge":"gold"})");
  const std::string without = createdUuid(R"({"name":"without"})");

  auto read = harness_.call(
      RequestBuilder::get("/api/identities/" + with + "/").as(managementPrincipal(kAccount)));
  EXPECT_EQ(read.json()->getObject("badge")->getValue<std::string>("badge"), "gold");
  auto list =
      harness_.call(RequestBuilder::get("/api/identities/").as(managementPrincipal(kAccount)))
          .json()
          ->getArray("results");
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ(list->getObject(0)->getObject("badge")->getValue<std::string>("badge"), "gold");
  EXPECT_EQ(list->getObject(1)->getValue<std::string>("uuid"), without);
  EXPECT_TRUE(list->getObject(1)->has("badge"));
  EXPECT_TRUE(list->getObject(1)->isNull("badge"));  // an identity it has nothing for

  auto event = harness_.events().waitFor("identity.created", std::chrono::seconds(30));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->object->getObject("badge")->getValue<std::string>("badge"), "gold");
  auto renamed = harness_.call(RequestBuilder::patch("/api/identities/" + with + "/")
                                   .as(managementPrincipal(kAccount))
                                   .json(R"({"name":"renamed"})"));
  ASSERT_EQ(renamed.status, 200);
  EXPECT_EQ(renamed.json()->getObject("badge")->getValue<std::string>("badge"), "gold");
  auto updated = harness_.events().waitFor("identity.updated", std::chrono::seconds(30));
  ASSERT_TRUE(updated);
  EXPECT_EQ(updated->object->getObject("badge")->getValue<std::string>("badge"), "gold");
}

TEST_F(IdentitiesTest, AnExtensionsActionIsServedAndFenced) {
  const std::string mine = createdUuid(R"({"name":"mine","badge":"gold"})");
  const std::string sibling = createdUuid(R"({"name":"sibling","badge":"silver"})");
  const std::string polish = "/api/identities/" + mine + "/polish/";

  auto polished = harness_.call(RequestBuilder::post(polish).as(managementPrincipal(kAccount)));
  ASSERT_EQ(polished.status, 200) << polished.body;
  EXPECT_EQ(polished.json()->getValue<int>("shine"), 1);
  auto own_key = harness_.call(RequestBuilder::post(polish).as(identityPrincipal(kAccount, mine)));
  EXPECT_EQ(own_key.status, 200) << own_key.body;
  EXPECT_EQ(own_key.json()->getValue<int>("shine"), 2);

  // Fenced before the extension runs: nothing more is polished.
  EXPECT_EQ(
      harness_.call(RequestBuilder::post(polish).as(identityPrincipal(kAccount, sibling))).status,
      403);
  EXPECT_EQ(harness_.call(RequestBuilder::post(polish).as(managementPrincipal(kOther))).status,
            404);
  auto read = harness_.call(
      RequestBuilder::get("/api/identities/" + mine + "/").as(managementPrincipal(kAccount)));
  EXPECT_EQ(read.json()->getObject("badge")->getValue<int>("shine"), 2);

  // An action nobody provides is not found; a contract action without its plugin is a feature
  // this server has not enabled.
  EXPECT_EQ(harness_
                .call(RequestBuilder::post("/api/identities/" + mine + "/dance/")
                          .as(managementPrincipal(kAccount)))
                .status,
            404);
  auto phone = harness_.call(RequestBuilder::post("/api/identities/" + mine + "/provision-phone/")
                                 .as(managementPrincipal(kAccount)));
  EXPECT_EQ(phone.status, 404);
  EXPECT_EQ(phone.code(), "feature_not_enabled");
  EXPECT_NE(phone.body.find("'phone'"), std::string::npos) << phone.body;
}

TEST_F(IdentitiesTest, ContractCapabilitiesWithoutTheirPluginAreNotEnabledAndCreateNothing) {
  auto phone = create(R"({"name":"caller","provision_phone":true})");
  EXPECT_EQ(phone.status, 422) << phone.body;
  EXPECT_EQ(phone.code(), "feature_not_enabled");
  EXPECT_NE(phone.body.find("'phone'"), std::string::npos) << phone.body;
  auto email = create(R"({"name":"writer","email_identifier":"writer"})");
  EXPECT_EQ(email.status, 422) << email.body;
  EXPECT_NE(email.body.find("'email'"), std::string::npos) << email.body;
  EXPECT_EQ(identityRows(), 0);
  EXPECT_EQ(probe_.provisioned.load(), 0);

  // Not asking for them is fine, and the identity still shows both members, null.
  auto plain = create(R"({"name":"plain","provision_phone":false,"email_identifier":""})");
  ASSERT_EQ(plain.status, 201) << plain.body;
  for (const char* member : {"email", "phone"}) {
    EXPECT_TRUE(plain.json()->has(member)) << member;
    EXPECT_TRUE(plain.json()->isNull(member)) << member;
  }
  // A value of the wrong type is the caller's error whether or not the capability is there.
  EXPECT_EQ(create(R"({"name":"odd","provision_phone":"yes"})").status, 400);
}

TEST(IdentityExtensionsTest, TwoExtensionsCannotClaimTheSameField) {
  Probe probe;
  PluginHarness harness;
  harness.load(kLibrary);
  harness.add(std::make_unique<BadgePlugin>(probe));
  harness.add(std::make_unique<BadgePlugin>(
      probe, "stickers",
      sdk::IdentityCapability{"sticker", {{"badge", sdk::IdentityField::Type::kString}}, {}}));
  try {
    harness.start();
    FAIL() << "two extensions own the create field 'badge'";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("stickers"), std::string::npos) << what;
    EXPECT_NE(what.find("identity field 'badge'"), std::string::npos) << what;
  }
}

TEST(IdentityExtensionsTest, TwoExtensionsCannotClaimTheSameMemberOrAction) {
  const std::vector<std::pair<sdk::IdentityCapability, std::string>> cases = {
      {{"badge", {}, {}}, "identity capability 'badge'"},
      {{"gloss", {}, {"polish"}}, "identity action 'polish'"}};
  for (const auto& [capability, refusal] : cases) {
    Probe probe;
    PluginHarness harness;
    harness.load(kLibrary);
    harness.add(std::make_unique<BadgePlugin>(probe));
    harness.add(std::make_unique<BadgePlugin>(probe, "copy", capability));
    try {
      harness.start();
      ADD_FAILURE() << "a second extension claimed " << refusal;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(refusal), std::string::npos) << e.what();
    }
  }
}

TEST(IdentityExtensionsTest, NoExtensionTakesTheIdentitysOwnMembersOrMalformedNames) {
  using Type = sdk::IdentityField::Type;
  const std::vector<sdk::IdentityCapability> refused = {{"uuid", {}, {}},
                                                        {"created_dt", {}, {}},
                                                        {"Badge", {}, {}},
                                                        {"bad-name", {}, {}},
                                                        {"ok", {{"name", Type::kString}}, {}},
                                                        {"ok", {}, {"a/b"}},
                                                        {"ok", {}, {"voice-agent"}},
                                                        // the contract's action, whose route has
                                                        // the `phone` capability's shape
                                                        {"ok", {}, {"provision-phone"}}};
  for (const auto& capability : refused) {
    Probe probe;
    PluginHarness harness;
    harness.load(kLibrary);
    harness.add(std::make_unique<BadgePlugin>(probe, "odd", capability));
    try {
      harness.start();
      ADD_FAILURE() << "an extension named '" << capability.name << "' was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("malformed or the identity's own"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace svc::plugins::identities
