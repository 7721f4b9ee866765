// The secrets plugin: its input rule, and its routes as svcd runs them (loaded from its library
// with the test kit) over a stand-in for the vault (tests/unit/plugins/vault/fake_vault.h), whose
// table shows what the plugin hands it. The real vault's encryption is the vault's tests; here,
// that value and notes go to the vault and never to the plugin's table, that a vault refusal rolls
// the secret back, and every route, filter and fence.
#include "secret_cache.h"
#include "secret_input.h"
#include "secret_pages.h"

#include "../vault/fake_vault.h"

#include <svc/sdk/testing.h>
#include <svc/sdk/util.h>
#include <svc/sdk/vault.h>

#include <Poco/Data/RecordSet.h>
#include <Poco/Data/Session.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <set>
#include <thread>

namespace svc::plugins::secrets {
namespace {

using namespace Poco::Data::Keywords;
using sdk::testing::identityPrincipal;
using sdk::testing::managementPrincipal;
using sdk::testing::PluginHarness;
using sdk::testing::RequestBuilder;
using sdk::testing::TestResponse;

// ---- the input rule ----

sdk::Request withBody(const std::string& json) {
  sdk::Request r;
  r.json = Poco::JSON::Parser().parse(json).extract<Poco::JSON::Object::Ptr>();
  return r;
}

// The declaration's check, as the kernel makes it before the handler runs, then the reader's.
SecretInput checkedInput(const std::string& json, WriteMode mode) {
  const sdk::Request r = withBody(json);
  sdk::FieldErrors errors;
  (mode == WriteMode::kPatch ? secretInputSchema().partial() : secretInputSchema())
      .validate(r.json, "", errors);
  errors.throwIfAny();
  return readSecretInput(r, mode);
}

std::set<std::string> badFields(const std::string& json, WriteMode mode) {
  try {
    checkedInput(json, mode);
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "invalid");
    std::set<std::string> out;
    for (const auto& [field, messages] : e.errors()) out.insert(field);
    return out;
  }
  return {};
}

TEST(SecretInput, AKeyIsAnEnvironmentVariableOrApiKeyName) {
  for (const char* good : {"A", "OPENAI_API_KEY", "stripe/live:api-key.v2", "lower_case"}) {
    EXPECT_TRUE(isValidSecretKey(good)) << good;
  }
  EXPECT_TRUE(isValidSecretKey(std::string(128, 'k')));
  for (const std::string& bad : {std::string(), std::string(129, 'k'), std::string("with space"),
                                 std::string("a=b"), std::string("é"), std::string("a\nb")}) {
    EXPECT_FALSE(isValidSecretKey(bad)) << bad;
  }
}

TEST(SecretInput, EveryBadFieldIsNamedAtOnce) {
  EXPECT_EQ(badFields(R"({})", WriteMode::kCreate), (std::set<std::string>{"key", "value"}));
  EXPECT_EQ(badFields(R"({"key":"a b","value":"","notes":7})", WriteMode::kCreate),
            (std::set<std::string>{"key", "value", "notes"}));
  EXPECT_EQ(badFields(R"({"key":1,"value":["x"]})", WriteMode::kReplace),
            (std::set<std::string>{"key", "value"}));
  EXPECT_EQ(badFields(R"({"key":null,"value":null})", WriteMode::kPatch),
            (std::set<std::string>{"key", "value"}));
  EXPECT_EQ(badFields(R"({"notes":null})", WriteMode::kPatch), std::set<std::string>{});
  EXPECT_EQ(badFields(R"({})", WriteMode::kPatch), std::set<std::string>{});
  try {
    checkedInput(R"({"key":"a b"})", WriteMode::kCreate);
    ADD_FAILURE() << "accepted";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.detail(), std::string("The request is invalid: key: ") + kKeyRule +
                              "; value: this field is required.");
  }
}

TEST(SecretInput, ValueAndNotesAreBoundedSealedOrNot) {
  auto body = [](const std::string& value, const std::string& notes) {
    Poco::JSON::Object o;
    o.set("key", "K");
    o.set("value", value);
    o.set("notes", notes);
    std::ostringstream text;
    o.stringify(text);
    return text.str();
  };
  const std::string sealed_max = "e2e::" + std::string(sealedLength(kMaxValueBytes) - 5, 'A');
  EXPECT_EQ(sealed_max.size(), 87453u);  // a sealed box of 64 KiB in base64, after the prefix
  EXPECT_TRUE(badFields(body(std::string(kMaxValueBytes, 'v'), std::string(kMaxNotesBytes, 'n')),
                        WriteMode::kCreate)
                  .empty());
  EXPECT_TRUE(badFields(body(sealed_max, ""), WriteMode::kCreate).empty());
  EXPECT_EQ(
      badFields(body(std::string(kMaxValueBytes + 1, 'v'), std::string(kMaxNotesBytes + 1, 'n')),
                WriteMode::kCreate),
      (std::set<std::string>{"value", "notes"}));
  EXPECT_EQ(badFields(body(sealed_max + "A", ""), WriteMode::kCreate),
            std::set<std::string>{"value"});
}

TEST(SecretInput, PutClearsAbsentNotesAndPatchKeepsThem) {
  auto put = checkedInput(R"({"key":"K","value":"v"})", WriteMode::kReplace);
  EXPECT_EQ(put.notes, std::optional<std::string>(""));
  auto patch = checkedInput(R"({"value":"v"})", WriteMode::kPatch);
  EXPECT_FALSE(patch.notes.has_value());
  EXPECT_FALSE(patch.key.has_value());
  auto cleared = checkedInput(R"({"notes":null})", WriteMode::kPatch);
  EXPECT_EQ(cleared.notes, std::optional<std::string>(""));
}

// ---- the read cache ----

std::shared_ptr<const CachedSecret> secretOf(const std::string& id, const std::string& identity,
                                             const std::string& key, std::size_t value_bytes = 40) {
  sdk::StoredRecord stored{
      "acct", "secrets", id, 7, {{"value", "k1", std::string(value_bytes, 'c')}}};
  return std::make_shared<const CachedSecret>(
      CachedSecret{SecretRow{id, "acct", identity, key, 1, 1}, std::move(stored)});
}

const auto kFive = std::chrono::seconds(5);

TEST(SecretCache, KeepsWhatWasReadUntilDroppedAndByIdentityAndKeyOnly) {
  SecretCache cache(kFive);
  cache.keep(cache.claim(), secretOf("s1", "ann", "TOKEN"));
  auto kept = cache.find("ann", "TOKEN");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->row.id, "s1");
  EXPECT_EQ(kept->stored.fields.at(0).sealed, std::string(40, 'c'));
  EXPECT_FALSE(cache.find("bob", "TOKEN"));
  EXPECT_FALSE(cache.find("ann", "token"));
  EXPECT_FALSE(cache.find("ann\0TOKEN", ""));
  cache.drop("s1");
  EXPECT_FALSE(cache.find("ann", "TOKEN"));
  EXPECT_EQ(cache.size(), 0u);
}

TEST(SecretCache, AReaderThatBeganBeforeADropKeepsNothing) {
  SecretCache cache(kFive);
  // A reader makes its claim and reads the old row; a writer commits and drops; the reader's
  // old row must not be kept, or it would be served after the write.
  const auto claim = cache.claim();
  cache.drop("s1");
  cache.keep(claim, secretOf("s1", "ann", "TOKEN"));
  EXPECT_FALSE(cache.find("ann", "TOKEN"));
  cache.keep(cache.claim(), secretOf("s1", "ann", "TOKEN"));
  EXPECT_TRUE(cache.find("ann", "TOKEN"));
}

TEST(SecretCache, FollowsSecretEventsFromAnyProcessAndNothingElse) {
  SecretCache cache(kFive);
  cache.keep(cache.claim(), secretOf("s1", "ann", "TOKEN"));
  cache.keep(cache.claim(), secretOf("s2", "ann", "OTHER"));
  sdk::Event e;
  e.type = "contact.updated";
  e.object = new Poco::JSON::Object;
  e.object->set("uuid", "s1");
  cache.follow(e);
  EXPECT_TRUE(cache.find("ann", "TOKEN"));
  e.type = "secret.updated";  // a rename elsewhere: the event names the new key, the id is old
  e.object->set("key", "RENAMED");
  cache.follow(e);
  EXPECT_FALSE(cache.find("ann", "TOKEN"));
  EXPECT_TRUE(cache.find("ann", "OTHER"));
  e.type = "secret.deleted";
  e.object->set("uuid", "s2");
  cache.follow(e);
  EXPECT_FALSE(cache.find("ann", "OTHER"));
}

TEST(SecretCache, EntriesLapseAndMemoryIsBounded) {
  // The cache's clock is the test's: an entry lapses when the test says the time has passed.
  SecretCache::Clock::time_point now{std::chrono::hours(1)};
  SecretCache brief(std::chrono::milliseconds(300), [&] { return now; });
  brief.keep(brief.claim(), secretOf("s1", "ann", "TOKEN"));
  now += std::chrono::milliseconds(299);
  EXPECT_TRUE(brief.find("ann", "TOKEN"));
  now += std::chrono::milliseconds(1);
  EXPECT_FALSE(brief.find("ann", "TOKEN"));
  EXPECT_EQ(brief.bytes(), 0u);

  SecretCache none(std::chrono::seconds(0));  // secrets.read_cache_seconds=0
  none.keep(none.claim(), secretOf("s1", "ann", "TOKEN"));
  EXPECT_FALSE(none.find("ann", "TOKEN"));

  SecretCache cache(kFive);
  cache.keep(cache.claim(), secretOf("big", "ann", "BIG", SecretCache::kMaxEntryBytes));
  EXPECT_FALSE(cache.find("ann", "BIG")) << "a secret larger than an entry's bound is not kept";
  // 10 KiB each: the bound is reached after about 1,600; the cache then starts over.
  for (int i = 0; i < 3000; ++i) {
    cache.keep(cache.claim(),
               secretOf("s" + std::to_string(i), "ann", "K" + std::to_string(i), 10 * 1024));
    ASSERT_LE(cache.bytes(), SecretCache::kMaxBytes) << i;
    ASSERT_GE(cache.bytes(), cache.size() * 10 * 1024) << i;
  }
  EXPECT_TRUE(cache.find("ann", "K2999"));
}

// ---- the dashboard page ----

TEST(SecretsDashboard, ThePageTakesAnIdentityAndUsesTheVaultsScript) {
  auto pages = dashboardPages();
  ASSERT_EQ(pages.size(), 1u);
  EXPECT_EQ(pages[0].path, "/identities/{identity}/secrets");
  std::map<std::string, std::string> params = {
      {"identity", "AAAAAAAA-0000-4000-8000-00000000000A"}};
  EXPECT_TRUE(pages[0].accept(params));
  EXPECT_EQ(params["identity"], "aaaaaaaa-0000-4000-8000-00000000000a");
  params = {{"identity", "not-a-uuid"}};
  EXPECT_FALSE(pages[0].accept(params));
  // The vault's script lists keys only and opens and seals values in the page; this page says
  // which field is the name and which are protected.
  EXPECT_EQ(pages[0].scripts,
            (std::vector<std::string>{sdk::kVaultDashboardScript, sdk::kVaultWorkerScript}));
  for (const char* part : {"svcVault.records(svc", "'/api/secrets/'", "field: 'key'",
                           "field: 'value'", "field: 'notes'"}) {
    EXPECT_NE(pages[0].script.find(part), std::string::npos) << part;
  }
}

// ---- the routes, over a stand-in vault ----

// The passwords plugin's tests' stand-in for the vault: the vault's rule (409 `vault_rekeying`,
// `e2e::` once an account has end-to-end encryption), its values in a table of the test's
// database, rolled back with the caller's transaction.
using vault::testing::FakeVault;
using vault::testing::FakeVaultPlugin;

constexpr const char* kAccount = "aaaaaaaa-0000-4000-8000-000000000000";
constexpr const char* kOther = "bbbbbbbb-0000-4000-8000-000000000000";
constexpr const char* kAnn = "aaaaaaaa-0000-4000-8000-00000000000a";
constexpr const char* kBob = "aaaaaaaa-0000-4000-8000-00000000000b";
constexpr const char* kCarol = "bbbbbbbb-0000-4000-8000-00000000000c";

// Publishes `probe.settled` when asked. The kernel's event thread hands each event to every
// subscriber (the harness's recorder first, then the plugins) before the next: once the recorder
// has the probe's event, every plugin has handled the events before it.
class EventProbe : public sdk::Plugin {
 public:
  EventProbe() {
    info_.name = "probe";
    info_.version = "0.0.1";
    info_.description = "tells a test when the events published so far were handled";
    sdk::EventType settled;
    settled.name = "probe.settled";
    settled.description = "The events before it were handed to every subscriber.";
    info_.events = {settled};
  }
  const sdk::PluginInfo& info() const override { return info_; }
  void configure(sdk::PluginContext& context) override { events_ = &context.events(); }
  std::vector<sdk::Migration> migrations() const override { return {}; }
  void registerRoutes(sdk::RouteRegistry&) override {}
  void registerServices(sdk::ServiceRegistry&) override {}
  void start() override {}
  void stop() override {}
  void publish() { events_->publish("probe.settled", kAccount, "", nullptr, nullptr); }

 private:
  sdk::PluginInfo info_;
  sdk::EventBus* events_ = nullptr;
};

class SecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto probe = std::make_unique<EventProbe>();
    probe_ = probe.get();
    harness_.add(std::move(probe));
    harness_.add(std::make_unique<FakeVaultPlugin>(vault_));
    harness_.load(std::string(SVC_BUNDLED_PLUGIN_DIR) + "/svc_plugin_secrets.so");
    harness_.addIdentity(kAccount, kAnn, "Ann");
    harness_.addIdentity(kAccount, kBob, "Bob");
    harness_.addIdentity(kOther, kCarol, "Carol");
    harness_.start();
  }
  TestResponse call(RequestBuilder request, const sdk::Principal& as = {}) {
    return harness_.call(request.as(as.authenticated() ? as : managementPrincipal(kAccount)));
  }
  TestResponse create(const std::string& identity, const std::string& body,
                      const std::string& prefix = "/api/secrets/") {
    return call(RequestBuilder::post(prefix + "?identity=" + identity).json(body));
  }
  std::string created(const std::string& identity, const std::string& key,
                      const std::string& value) {
    auto r = create(identity, R"({"key":")" + key + R"(","value":")" + value + R"("})");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? r.json()->getValue<std::string>("uuid") : "";
  }
  int rows(const std::string& table = "secrets") {
    int n = 0;
    auto s = harness_.database().session();
    s << "SELECT COUNT(*) FROM " + table, into(n), now;
    return n;
  }
  // @return what the vault holds of a secret.
  sdk::ProtectedFields vaulted(const std::string& uuid) {
    std::vector<std::string> fields, values;
    std::string record = uuid;
    auto s = harness_.database().session();
    s << "SELECT field, value FROM fake_vault WHERE holder = 'secrets' AND record = ?", use(record),
        into(fields), into(values), now;
    sdk::ProtectedFields out;
    for (std::size_t i = 0; i < fields.size(); ++i) out[fields[i]] = values[i];
    return out;
  }

  std::shared_ptr<FakeVault> vault_ = std::make_shared<FakeVault>();
  PluginHarness harness_;
  EventProbe* probe_ = nullptr;  // owned by the harness
};

TEST_F(SecretsTest, CreateReadListChangeAndDeleteUnderBothPrefixes) {
  auto made = create(kAnn, R"({"key":"OPENAI_API_KEY","value":"sk-1","notes":"prod"})");
  ASSERT_EQ(made.status, 201) << made.body;
  auto s = made.json();
  const std::string uuid = s->getValue<std::string>("uuid");
  EXPECT_TRUE(sdk::isUuid(uuid));
  EXPECT_EQ(s->getValue<std::string>("identity"), kAnn);
  EXPECT_EQ(s->getValue<std::string>("key"), "OPENAI_API_KEY");
  EXPECT_EQ(s->getValue<std::string>("value"), "sk-1");
  EXPECT_EQ(s->getValue<std::string>("notes"), "prod");
  EXPECT_EQ(s->getValue<std::string>("created_dt"), s->getValue<std::string>("updated_dt"));
  // The value and notes are the vault's: the table has the secret's own columns only.
  EXPECT_EQ(vaulted(uuid), (sdk::ProtectedFields{{"value", "sk-1"}, {"notes", "prod"}}));
  {
    auto session = harness_.database().session();
    Poco::Data::RecordSet columns(session, "SELECT * FROM secrets");
    EXPECT_EQ(columns.columnCount(), 6u);
  }

  for (const std::string prefix : {"/api/secrets/", "/api/vault/"}) {
    SCOPED_TRACE(prefix);
    auto read = call(RequestBuilder::get(prefix + uuid + "/"));
    ASSERT_EQ(read.status, 200) << read.body;
    EXPECT_EQ(read.json()->getValue<std::string>("value"), "sk-1");
    auto list = call(RequestBuilder::get(prefix));
    ASSERT_EQ(list.status, 200) << list.body;
    EXPECT_EQ(list.json()->getValue<int>("count"), 1);
    EXPECT_EQ(list.json()->getArray("results")->getObject(0)->getValue<std::string>("notes"),
              "prod");
  }

  // PATCH changes what it names; PUT replaces (absent notes are none). The clock moves on
  // between the writes, so the new updated_dt is later whatever the machine's speed.
  sdk::advanceClockForTesting(1000000);
  auto patched =
      call(RequestBuilder::patch("/api/vault/" + uuid + "/").json(R"({"value":"sk-2"})"));
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(patched.json()->getValue<std::string>("value"), "sk-2");
  EXPECT_EQ(patched.json()->getValue<std::string>("notes"), "prod");
  EXPECT_EQ(patched.json()->getValue<std::string>("key"), "OPENAI_API_KEY");
  EXPECT_GT(patched.json()->getValue<std::string>("updated_dt"),
            s->getValue<std::string>("updated_dt"));
  auto put = call(RequestBuilder::put("/api/secrets/" + uuid + "/")
                      .json(R"({"key":"OPENAI_KEY","value":"sk-3"})"));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.json()->getValue<std::string>("key"), "OPENAI_KEY");
  EXPECT_EQ(put.json()->getValue<std::string>("notes"), "");
  EXPECT_EQ(vaulted(uuid), (sdk::ProtectedFields{{"value", "sk-3"}, {"notes", ""}}));
  // An empty PATCH changes nothing.
  auto same = call(RequestBuilder::patch("/api/secrets/" + uuid + "/").json("{}"));
  ASSERT_EQ(same.status, 200) << same.body;
  EXPECT_EQ(same.json()->getValue<std::string>("updated_dt"),
            put.json()->getValue<std::string>("updated_dt"));

  EXPECT_EQ(call(RequestBuilder::del("/api/vault/" + uuid + "/")).status, 204);
  EXPECT_EQ(call(RequestBuilder::get("/api/secrets/" + uuid + "/")).status, 404);
  EXPECT_EQ(call(RequestBuilder::del("/api/secrets/" + uuid + "/")).status, 404);
  EXPECT_EQ(rows(), 0);
  EXPECT_EQ(rows("fake_vault"), 0) << "the vault forgets a deleted secret's fields";
}

TEST_F(SecretsTest, AKeyIsUniquePerIdentityAndCaseSensitive) {
  const std::string first = created(kAnn, "TOKEN", "a");
  auto again = create(kAnn, R"({"key":"TOKEN","value":"b"})", "/api/vault/");
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(again.code(), "conflict");
  created(kAnn, "token", "c");  // another key
  created(kBob, "TOKEN", "d");  // another identity
  // Renaming onto a taken key is refused too, and changes nothing.
  const std::string other = created(kAnn, "OTHER", "e");
  auto rename =
      call(RequestBuilder::patch("/api/secrets/" + other + "/").json(R"({"key":"TOKEN"})"));
  EXPECT_EQ(rename.status, 409) << rename.body;
  EXPECT_EQ(
      call(RequestBuilder::get("/api/secrets/" + other + "/")).json()->getValue<std::string>("key"),
      "OTHER");
  EXPECT_EQ(rows(), 4);
  EXPECT_EQ(vaulted(first).at("value"), "a");
}

TEST_F(SecretsTest, AReadByKeyIsExactAndScoped) {
  created(kAnn, "DB_URL", "ann-db");
  created(kAnn, "DB_URL_2", "ann-db-2");
  created(kBob, "DB_URL", "bob-db");
  auto ann = call(RequestBuilder::get("/api/secrets/?key=DB_URL&identity=" + std::string(kAnn)));
  ASSERT_EQ(ann.status, 200) << ann.body;
  EXPECT_EQ(ann.json()->getValue<int>("count"), 1);
  EXPECT_EQ(ann.json()->getArray("results")->getObject(0)->getValue<std::string>("value"),
            "ann-db");
  auto beyond =
      call(RequestBuilder::get("/api/secrets/?key=DB_URL&offset=1&identity=" + std::string(kAnn)));
  EXPECT_EQ(beyond.json()->getValue<int>("count"), 1);
  EXPECT_EQ(beyond.json()->getArray("results")->size(), 0u);
  // The account's key without an identity: both identities' secrets of that key.
  EXPECT_EQ(call(RequestBuilder::get("/api/secrets/?key=DB_URL")).json()->getValue<int>("count"),
            2);
  EXPECT_EQ(call(RequestBuilder::get("/api/secrets/?key=db_url")).json()->getValue<int>("count"),
            0);
  auto bad = call(RequestBuilder::get("/api/secrets/?key=a%20b"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_TRUE(bad.json()->getObject("errors")->has("key")) << bad.body;
  // Pages: newest first, counted past a full page.
  auto page = call(RequestBuilder::get("/api/secrets/?limit=2"));
  EXPECT_EQ(page.json()->getValue<int>("count"), 3);
  EXPECT_EQ(page.json()->getArray("results")->getObject(0)->getValue<std::string>("value"),
            "bob-db");
  auto past = call(RequestBuilder::get("/api/secrets/?limit=2&offset=5"));
  EXPECT_EQ(past.json()->getValue<int>("count"), 3);
  EXPECT_EQ(past.json()->getArray("results")->size(), 0u);
}

TEST_F(SecretsTest, AnIdentityKeySeesItsOwnAndAnotherAccountNothing) {
  const std::string ann = created(kAnn, "A", "1");
  const std::string bob = created(kBob, "B", "2");
  const auto ann_key = identityPrincipal(kAccount, kAnn);
  auto mine = call(RequestBuilder::get("/api/secrets/"), ann_key);
  ASSERT_EQ(mine.status, 200);
  EXPECT_EQ(mine.json()->getValue<int>("count"), 1);
  EXPECT_EQ(call(RequestBuilder::get("/api/secrets/" + bob + "/"), ann_key).status, 404);
  EXPECT_EQ(call(RequestBuilder::del("/api/secrets/" + bob + "/"), ann_key).status, 404);
  auto posted =
      call(RequestBuilder::post("/api/secrets/").json(R"({"key":"K","value":"v"})"), ann_key);
  ASSERT_EQ(posted.status, 201) << posted.body;
  EXPECT_EQ(posted.json()->getValue<std::string>("identity"), kAnn);

  const auto other = managementPrincipal(kOther);
  EXPECT_EQ(call(RequestBuilder::get("/api/secrets/" + ann + "/"), other).status, 404);
  EXPECT_EQ(call(RequestBuilder::patch("/api/secrets/" + ann + "/").json(R"({"value":"x"})"), other)
                .status,
            404);
  EXPECT_EQ(call(RequestBuilder::get("/api/secrets/"), other).json()->getValue<int>("count"), 0);
  EXPECT_EQ(vaulted(ann).at("value"), "1");
  // A management key must name the identity a secret is for.
  auto unnamed = call(RequestBuilder::post("/api/secrets/").json(R"({"key":"K","value":"v"})"));
  EXPECT_EQ(unnamed.status, 400);
  EXPECT_EQ(unnamed.code(), "identity_required");
}

TEST_F(SecretsTest, BadInputAndVaultRefusalsStoreNothing) {
  for (const char* body :
       {R"({"key":"a b","value":"v"})", R"({"key":"K","value":""})", R"({"key":"K","value":3})",
        R"({"key":"K","value":"v","notes":[]})", R"({"value":"v"})", R"({"key":"K"})"}) {
    auto r = create(kAnn, body);
    EXPECT_EQ(r.status, 400) << body << " " << r.body;
    EXPECT_EQ(r.code(), "invalid") << r.body;
  }
  vault_->setRekeying(kAccount, true);
  auto refused = create(kAnn, R"({"key":"K","value":"v"})");
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.code(), "vault_rekeying");
  EXPECT_EQ(rows(), 0) << "the secret is rolled back with the vault's refusal";
  EXPECT_TRUE(harness_.events().all().empty());

  vault_->setRekeying(kAccount, false);
  const std::string uuid = created(kAnn, "K", "v");
  vault_->setRekeying(kAccount, true);
  auto rename = call(
      RequestBuilder::patch("/api/secrets/" + uuid + "/").json(R"({"key":"NEW","value":"w"})"));
  EXPECT_EQ(rename.status, 409);
  vault_->setRekeying(kAccount, false);
  EXPECT_EQ(
      call(RequestBuilder::get("/api/secrets/" + uuid + "/")).json()->getValue<std::string>("key"),
      "K");
  // Once an account has end-to-end encryption, the vault's 400 names the plaintext field.
  vault_->setEndToEnd(kOther);
  auto plain = call(RequestBuilder::post("/api/secrets/?identity=" + std::string(kCarol))
                        .json(R"({"key":"K","value":"e2e::c2VhbGVk","notes":"plain"})"),
                    managementPrincipal(kOther));
  EXPECT_EQ(plain.status, 400) << plain.body;
  EXPECT_TRUE(plain.json()->getObject("errors")->has("notes")) << plain.body;
  EXPECT_EQ(rows(), 1) << "only Ann's";
}

TEST_F(SecretsTest, AReadByKeyIsKeptEncryptedAndNeverOutlivesAWriteHere) {
  const std::string uuid = created(kAnn, "DB_URL", "one");
  created(kBob, "DB_URL", "bob's");
  // Every `secret.*` event drops too (it may come from another svcd), refusing what a read that
  // began before it would keep: let both arrive first.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(harness_.events().waitFor("secret.created", std::chrono::seconds(30)));
  }
  // The recorder hears each event just before the plugin does, on the same thread: once it has
  // heard one published after them, the plugin has handled both.
  probe_->publish();
  ASSERT_TRUE(harness_.events().waitFor("probe.settled", std::chrono::seconds(30)));
  const auto ann = identityPrincipal(kAccount, kAnn);
  auto value = [&](const sdk::Principal& as, const std::string& query = "") {
    auto r = call(RequestBuilder::get("/api/secrets/?key=DB_URL" + query), as);
    EXPECT_EQ(r.status, 200) << r.body;
    auto results = r.json()->getArray("results");
    EXPECT_EQ(r.json()->getValue<int>("count"), static_cast<int>(results->size()));
    return results->size() == 0 ? std::string("(none)")
                                : results->getObject(0)->getValue<std::string>("value");
  };
  const int gets = vault_->gets;
  EXPECT_EQ(value(ann), "one");
  EXPECT_EQ(vault_->gets, gets + 1);
  const int opens = vault_->opens;
  EXPECT_EQ(value(ann), "one");
  EXPECT_EQ(value(managementPrincipal(kAccount), "&identity=" + std::string(kAnn)), "one");
  EXPECT_EQ(vault_->gets, gets + 1) << "kept: the database is not read again";
  EXPECT_EQ(vault_->opens, opens + 2) << "but every read opens (decrypts) what was kept";
  EXPECT_EQ(value(identityPrincipal(kAccount, kBob)), "bob's") << "kept per identity";

  // Every write through this process is seen by the next read.
  call(RequestBuilder::patch("/api/secrets/" + uuid + "/").json(R"({"value":"two"})"));
  EXPECT_EQ(value(ann), "two");
  call(RequestBuilder::put("/api/vault/" + uuid + "/").json(R"({"key":"DB_URL_OLD","value":"x"})"));
  EXPECT_EQ(value(ann), "(none)");
  created(kAnn, "DB_URL", "three");
  EXPECT_EQ(value(ann), "three");
  // The vault saying a kept record is stale (a passphrase change, a key rotation): read again.
  const int before = vault_->gets;
  ++vault_->epoch;
  EXPECT_EQ(value(ann), "three");
  EXPECT_EQ(vault_->gets, before + 1);
  const std::string three = call(RequestBuilder::get("/api/secrets/?key=DB_URL"), ann)
                                .json()
                                ->getArray("results")
                                ->getObject(0)
                                ->getValue<std::string>("uuid");
  EXPECT_EQ(call(RequestBuilder::del("/api/secrets/" + three + "/")).status, 204);
  EXPECT_EQ(value(ann), "(none)");
  // Another account's key naming Ann is refused before the cache (the identity is not theirs).
  auto other =
      call(RequestBuilder::get("/api/secrets/?key=DB_URL_OLD&identity=" + std::string(kAnn)),
           managementPrincipal(kOther));
  EXPECT_NE(other.status, 200) << other.body;
}

TEST_F(SecretsTest, EventsCarryTheSecretWithoutValueOrNotes) {
  auto made = create(kAnn, R"({"key":"K","value":"hunter2","notes":"my notes"})");
  const std::string uuid = made.json()->getValue<std::string>("uuid");
  call(RequestBuilder::patch("/api/secrets/" + uuid + "/").json(R"({"value":"hunter3"})"));
  call(RequestBuilder::del("/api/secrets/" + uuid + "/"));
  for (const char* type : {"secret.created", "secret.updated", "secret.deleted"}) {
    auto e = harness_.events().waitFor(type, std::chrono::seconds(30));
    ASSERT_TRUE(e) << type;
    EXPECT_EQ(e->account, kAccount);
    EXPECT_EQ(e->identity, kAnn);
    EXPECT_EQ(e->object->getValue<std::string>("uuid"), uuid);
    EXPECT_EQ(e->object->getValue<std::string>("key"), "K");
    EXPECT_FALSE(e->object->has("value")) << type;
    EXPECT_FALSE(e->object->has("notes")) << type;
  }
}

}  // namespace
}  // namespace svc::plugins::secrets
