// The secrets plugin over real HTTP, with the vault keeping values and notes: every route and
// status under /api/secrets/ and /api/vault/, identity scoping and other accounts, bad input on
// every field storing nothing, the key's uniqueness (also between racing creates), `?key=`, and
// events without values.
#include "harness.h"

#include <Poco/Base64Encoder.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

namespace svc::testing {
namespace {

class Secrets : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault", "secrets"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "owner@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
    ann_ = identity("Ann");
    bob_ = identity("Bob");
  }

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& key = "") {
    return http(svcd_->port(), method, path, body, bearer(key.empty() ? key_ : key));
  }
  std::string identity(const std::string& name) {
    auto r = call("POST", "/api/identities/", "{\"name\":\"" + name + "\"}");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? r.json()->getValue<std::string>("uuid") : "";
  }
  std::string identityKey(const std::string& identity) {
    auto r = call("POST", "/api/auth/keys/identity/",
                  "{\"identity\":\"" + identity + "\",\"label\":\"k\"}");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("key");
  }
  HttpReply create(const std::string& identity, const std::string& key, const std::string& value,
                   const std::string& prefix = "/api/secrets/") {
    return call("POST", prefix + "?identity=" + identity,
                "{\"key\":\"" + key + "\",\"value\":\"" + value + "\"}");
  }
  std::string created(const std::string& identity, const std::string& key,
                      const std::string& value) {
    auto r = create(identity, key, value);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? r.json()->getValue<std::string>("uuid") : "";
  }
  int count(const std::string& query = "") {
    auto r = call("GET", "/api/secrets/" + query);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getValue<int>("count");
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_, ann_, bob_;
};

TEST_F(Secrets, EveryRouteAndStatusUnderBothPrefixes) {
  for (const std::string prefix : {"/api/secrets/", "/api/vault/"}) {
    SCOPED_TRACE(prefix);
    auto made = call("POST", prefix + "?identity=" + ann_,
                     R"({"key":"OPENAI_API_KEY","value":"sk-live-1","notes":"production"})");
    ASSERT_EQ(made.status, 201) << made.body;
    auto s = made.json();
    const std::string uuid = s->getValue<std::string>("uuid");
    EXPECT_EQ(s->getValue<std::string>("identity"), ann_);
    EXPECT_EQ(s->getValue<std::string>("key"), "OPENAI_API_KEY");
    EXPECT_EQ(s->getValue<std::string>("value"), "sk-live-1");
    EXPECT_EQ(s->getValue<std::string>("notes"), "production");
    EXPECT_EQ(s->getValue<std::string>("created_dt"), s->getValue<std::string>("updated_dt"));

    // Both prefixes serve the one resource.
    for (const std::string other : {"/api/secrets/", "/api/vault/"}) {
      auto read = call("GET", other + uuid + "/");
      ASSERT_EQ(read.status, 200) << read.body;
      EXPECT_EQ(read.json()->getValue<std::string>("value"), "sk-live-1");
      EXPECT_EQ(read.json()->getValue<std::string>("notes"), "production");
      auto without_slash = call("GET", other + uuid);
      EXPECT_EQ(without_slash.status, 200);
    }
    auto list = call("GET", prefix + "?identity=" + ann_);
    ASSERT_EQ(list.status, 200) << list.body;
    EXPECT_EQ(list.json()->getValue<int>("count"), 1);
    EXPECT_TRUE(list.json()->isNull("next"));
    EXPECT_EQ(list.json()->getArray("results")->getObject(0)->getValue<std::string>("value"),
              "sk-live-1");

    auto patched = call("PATCH", prefix + uuid + "/", R"({"value":"sk-live-2"})");
    ASSERT_EQ(patched.status, 200) << patched.body;
    EXPECT_EQ(patched.json()->getValue<std::string>("value"), "sk-live-2");
    EXPECT_EQ(patched.json()->getValue<std::string>("notes"), "production");
    EXPECT_EQ(patched.json()->getValue<std::string>("key"), "OPENAI_API_KEY");
    auto put = call("PUT", prefix + uuid + "/", R"({"key":"OPENAI_KEY","value":"sk-live-3"})");
    ASSERT_EQ(put.status, 200) << put.body;
    EXPECT_EQ(put.json()->getValue<std::string>("key"), "OPENAI_KEY");
    EXPECT_EQ(put.json()->getValue<std::string>("notes"), "") << "PUT replaces the notes too";
    auto read = call("GET", prefix + uuid + "/").json();
    EXPECT_EQ(read->getValue<std::string>("value"), "sk-live-3");
    EXPECT_NE(read->getValue<std::string>("updated_dt"), read->getValue<std::string>("created_dt"));

    auto not_allowed = call("POST", prefix + uuid + "/", "{}");
    EXPECT_EQ(not_allowed.status, 405);
    EXPECT_NE(not_allowed.header("allow").find("PATCH"), std::string::npos);
    EXPECT_EQ(call("DELETE", prefix + uuid + "/").status, 204);
    EXPECT_EQ(call("GET", prefix + uuid + "/").status, 404);
    EXPECT_EQ(call("PATCH", prefix + uuid + "/", R"({"value":"x"})").status, 404);
    EXPECT_EQ(call("PUT", prefix + uuid + "/", R"({"key":"K","value":"x"})").status, 404);
    EXPECT_EQ(call("DELETE", prefix + uuid + "/").status, 404);
    EXPECT_EQ(call("GET", prefix + "not-a-uuid/").status, 404);
    auto unnamed = call("POST", prefix, R"({"key":"K","value":"v"})");
    EXPECT_EQ(unnamed.status, 400);
    EXPECT_EQ(unnamed.code(), "identity_required");
    EXPECT_EQ(call("GET", prefix, "", "svc_mgmt_nonsense").status, 401);
  }
  EXPECT_EQ(count(), 0);
}

TEST_F(Secrets, AnIdentityKeySeesOnlyItsOwnAndAnotherAccountNothing) {
  const std::string ann_secret = created(ann_, "SHARED_NAME", "ann-value");
  const std::string bob_secret = created(bob_, "SHARED_NAME", "bob-value");
  const std::string ann_key = identityKey(ann_);

  auto mine = call("GET", "/api/secrets/", "", ann_key);
  ASSERT_EQ(mine.status, 200);
  EXPECT_EQ(mine.json()->getValue<int>("count"), 1);
  EXPECT_EQ(mine.json()->getArray("results")->getObject(0)->getValue<std::string>("value"),
            "ann-value");
  // Bob's secret, through Ann's key: as absent, whatever the method.
  EXPECT_EQ(call("GET", "/api/vault/" + bob_secret + "/", "", ann_key).status, 404);
  EXPECT_EQ(call("PATCH", "/api/secrets/" + bob_secret + "/", R"({"value":"x"})", ann_key).status,
            404);
  EXPECT_EQ(call("DELETE", "/api/secrets/" + bob_secret + "/", "", ann_key).status, 404);
  // Naming Bob with Ann's key is refused outright.
  EXPECT_EQ(call("GET", "/api/secrets/?identity=" + bob_, "", ann_key).status, 403);
  auto own = call("POST", "/api/secrets/", R"({"key":"MINE","value":"v"})", ann_key);
  ASSERT_EQ(own.status, 201) << own.body;
  EXPECT_EQ(own.json()->getValue<std::string>("identity"), ann_);

  // The account's management key sees both; `identity=` narrows.
  EXPECT_EQ(count(), 3);
  EXPECT_EQ(count("?identity=" + bob_), 1);

  const std::string other =
      operatorLogin(*svcd_, "other@example.com")->optValue<std::string>("management_key", "");
  EXPECT_EQ(call("GET", "/api/secrets/" + ann_secret + "/", "", other).status, 404);
  EXPECT_EQ(
      call("PUT", "/api/vault/" + ann_secret + "/", R"({"key":"K","value":"x"})", other).status,
      404);
  EXPECT_EQ(call("DELETE", "/api/secrets/" + ann_secret + "/", "", other).status, 404);
  EXPECT_EQ(call("GET", "/api/secrets/?identity=" + ann_, "", other).status, 404);
  EXPECT_EQ(call("GET", "/api/secrets/", "", other).json()->getValue<int>("count"), 0);
  EXPECT_EQ(call("GET", "/api/secrets/" + ann_secret + "/").json()->getValue<std::string>("value"),
            "ann-value")
      << "untouched by the other account";
}

TEST_F(Secrets, BadInputOnEveryFieldIsRefusedAndStoresNothing) {
  const std::string long_value(64 * 1024 + 1, 'v'), long_notes(16 * 1024 + 1, 'n');
  const std::vector<std::pair<std::string, std::vector<std::string>>> creates = {
      {R"({})", {"key", "value"}},
      {R"({"value":"v"})", {"key"}},
      {R"({"key":"K"})", {"value"}},
      {R"({"key":"","value":"v"})", {"key"}},
      {R"({"key":"has space","value":"v"})", {"key"}},
      {R"({"key":"K=V","value":"v"})", {"key"}},
      {"{\"key\":\"" + std::string(129, 'k') + "\",\"value\":\"v\"}", {"key"}},
      {R"({"key":7,"value":"v"})", {"key"}},
      {R"({"key":"K","value":""})", {"value"}},
      {R"({"key":"K","value":12})", {"value"}},
      {R"({"key":"K","value":{"a":1}})", {"value"}},
      {"{\"key\":\"K\",\"value\":\"" + long_value + "\"}", {"value"}},
      {R"({"key":"K","value":"v","notes":false})", {"notes"}},
      {"{\"key\":\"K\",\"value\":\"v\",\"notes\":\"" + long_notes + "\"}", {"notes"}},
      {R"({"key":"a b","value":3,"notes":[]})", {"key", "value", "notes"}},
  };
  for (const auto& [body, fields] : creates) {
    auto r = call("POST", "/api/secrets/?identity=" + ann_, body);
    EXPECT_EQ(r.status, 400) << body.substr(0, 80) << " " << r.body.substr(0, 300);
    EXPECT_EQ(r.code(), "invalid");
    auto errors = r.json()->getObject("errors");
    ASSERT_TRUE(errors) << r.body.substr(0, 300);
    EXPECT_EQ(errors->size(), fields.size()) << r.body.substr(0, 300);
    for (const auto& f : fields) EXPECT_TRUE(errors->has(f)) << f << ": " << r.body.substr(0, 300);
  }
  for (const char* malformed : {"{", "[1]", "\"text\""}) {
    EXPECT_EQ(call("POST", "/api/secrets/?identity=" + ann_, malformed).status, 400) << malformed;
  }
  EXPECT_EQ(count(), 0);

  const std::string uuid = created(ann_, "K", "kept");
  const std::vector<std::pair<std::string, std::string>> changes = {
      {"PUT", R"({"value":"v"})"},
      {"PUT", R"({"key":"K"})"},
      {"PUT", R"({"key":"bad key","value":"v"})"},
      {"PATCH", R"({"key":null})"},
      {"PATCH", R"({"value":null})"},
      {"PATCH", R"({"value":""})"},
      {"PATCH", R"({"key":"bad key","value":"new"})"},
      {"PATCH", R"({"value":"new","notes":1})"},
  };
  for (const auto& [method, body] : changes) {
    auto r = call(method, "/api/vault/" + uuid + "/", body);
    EXPECT_EQ(r.status, 400) << method << " " << body << " " << r.body;
  }
  auto kept = call("GET", "/api/secrets/" + uuid + "/").json();
  EXPECT_EQ(kept->getValue<std::string>("key"), "K");
  EXPECT_EQ(kept->getValue<std::string>("value"), "kept");
  EXPECT_EQ(kept->getValue<std::string>("created_dt"), kept->getValue<std::string>("updated_dt"));
  EXPECT_EQ(count(), 1);

  EXPECT_EQ(call("GET", "/api/secrets/?key=has%20space").status, 400);
  EXPECT_EQ(call("GET", "/api/secrets/?limit=x").status, 400);
}

TEST_F(Secrets, AKeyIsUniquePerIdentityEvenBetweenRacingCreates) {
  created(ann_, "TOKEN", "first");
  auto again = create(ann_, "TOKEN", "second", "/api/vault/");
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(again.code(), "conflict");
  created(ann_, "token", "case differs");
  created(bob_, "TOKEN", "another identity");
  const std::string other = created(ann_, "OTHER", "x");
  auto rename = call("PATCH", "/api/secrets/" + other + "/", R"({"key":"TOKEN"})");
  EXPECT_EQ(rename.status, 409) << rename.body;
  EXPECT_EQ(rename.code(), "conflict");
  EXPECT_EQ(count("?identity=" + ann_ + "&key=TOKEN"), 1);

  // Twelve creates of one key at once: the unique index lets exactly one in.
  std::vector<int> statuses(12);
  std::vector<std::thread> threads;
  for (int i = 0; i < 12; ++i) {
    threads.emplace_back(
        [&, i] { statuses[i] = create(bob_, "RACE", "value-" + std::to_string(i)).status; });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 201), 1);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 409), 11);
  EXPECT_EQ(count("?identity=" + bob_ + "&key=RACE"), 1);
  EXPECT_EQ(count(), 5);
}

TEST_F(Secrets, TheKeyFilterIsExact) {
  created(ann_, "DB_URL", "ann-db");
  created(ann_, "DB_URL_RO", "ann-db-ro");
  created(bob_, "DB_URL", "bob-db");
  auto one = call("GET", "/api/secrets/?identity=" + ann_ + "&key=DB_URL");
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(one.json()->getValue<int>("count"), 1);
  EXPECT_EQ(one.json()->getArray("results")->getObject(0)->getValue<std::string>("value"),
            "ann-db");
  EXPECT_EQ(count("?key=DB_URL"), 2) << "the account's, in every identity";
  EXPECT_EQ(count("?key=db_url"), 0);
  EXPECT_EQ(count("?key=DB"), 0);
  // An identity key reads its own by key with no identity named.
  auto own = call("GET", "/api/vault/?key=DB_URL", "", identityKey(bob_));
  EXPECT_EQ(own.json()->getArray("results")->getObject(0)->getValue<std::string>("value"),
            "bob-db");
  // Pages: newest first, with links.
  auto page = call("GET", "/api/secrets/?limit=2");
  EXPECT_EQ(page.json()->getValue<int>("count"), 3);
  EXPECT_EQ(page.json()->getArray("results")->size(), 2u);
  EXPECT_EQ(page.json()->getArray("results")->getObject(0)->getValue<std::string>("key"), "DB_URL");
  EXPECT_FALSE(page.json()->isNull("next"));
  // Names only: no value or notes in the answer.
  auto names = call("GET", "/api/secrets/?identity=" + ann_ + "&values=false");
  ASSERT_EQ(names.status, 200) << names.body;
  EXPECT_EQ(names.json()->getArray("results")->size(), 2u);
  EXPECT_EQ(names.body.find("ann-db"), std::string::npos) << names.body;
  EXPECT_FALSE(names.json()->getArray("results")->getObject(0)->has("value"));
  EXPECT_EQ(call("GET", "/api/secrets/?values=maybe").status, 400);
}

TEST_F(Secrets, TheDeclaredShapesRefuseUnknownFieldsAndParametersNamingEveryProblem) {
  // The route's declaration (Route::request, Route::query), checked by the kernel.
  auto bad = call("POST", "/api/secrets/?identity=" + ann_,
                  R"({"key":"a b","value":3,"subject":"x","notes":[]})");
  ASSERT_EQ(bad.status, 400) << bad.body;
  auto errors = bad.json()->getObject("errors");
  for (const char* field : {"key", "value", "subject", "notes"}) {
    EXPECT_TRUE(errors->has(field)) << field << " " << bad.body;
  }
  EXPECT_NE(errors->getArray("subject")->getElement<std::string>(0).find("key, value, notes"),
            std::string::npos)
      << bad.body;
  auto patch = call("PATCH", "/api/secrets/" + created(ann_, "K", "v") + "/", R"({"valu":"w"})");
  EXPECT_EQ(patch.status, 400) << patch.body;
  auto list = call("GET", "/api/secrets/?identity=" + ann_ + "&wait=true&values=maybe&limit=0");
  ASSERT_EQ(list.status, 400) << list.body;
  errors = list.json()->getObject("errors");
  EXPECT_EQ(errors->size(), 3u) << list.body;
  for (const char* p : {"wait", "values", "limit"}) EXPECT_TRUE(errors->has(p)) << p;
  // Above 200 a page is clamped, as the contract says; `identity` is the kernel's own.
  EXPECT_EQ(call("GET", "/api/secrets/?identity=" + ann_ + "&limit=500").status, 200);
  EXPECT_EQ(count(), 1) << "nothing bad was stored";
}

// A write names the public key its values were sealed to: one sealed to a key that is no longer
// the account's (the passphrase was changed elsewhere) is refused, under both prefixes.
TEST_F(Secrets, ValuesSealedToAKeyThatIsNoLongerTheAccountsAreRefused) {
  auto b64 = [](const std::string& bytes) {
    std::ostringstream out;
    Poco::Base64Encoder encoder(out);
    encoder.rdbuf()->setLineLength(0);
    encoder << bytes;
    encoder.close();
    return out.str();
  };
  const std::string current = b64(std::string(32, 'k')), old = b64(std::string(32, 'o'));
  ASSERT_EQ(call("PUT", "/api/encryption/",
                 "{\"salt\":\"" + b64(std::string(16, 's')) + "\",\"public_key\":\"" + current +
                     "\",\"verifier\":\"" + b64(std::string(62, 'v')) + "\"}")
                .status,
            200);
  const std::string value = "e2e::" + b64(std::string(58, 'x'));
  auto send = [&](const std::string& method, const std::string& path, const std::string& body,
                  const std::string& key) {
    return http(svcd_->port(), method, path, body,
                {{"Authorization", "Bearer " + key_},
                 {"Content-Type", "application/json"},
                 {"X-Svc-E2e-Public-Key", key}});
  };
  for (const std::string prefix : {"/api/secrets/", "/api/vault/"}) {
    const std::string key = prefix == "/api/secrets/" ? "ONE" : "TWO";
    const std::string body = "{\"key\":\"" + key + "\",\"value\":\"" + value + "\"}";
    auto stale = send("POST", prefix + "?identity=" + ann_, body, old);
    EXPECT_EQ(stale.status, 409) << stale.body;
    EXPECT_EQ(stale.code(), "e2e_key_changed");
    auto made = send("POST", prefix + "?identity=" + ann_, body, current);
    ASSERT_EQ(made.status, 201) << made.body;
    const std::string item = prefix + made.json()->getValue<std::string>("uuid") + "/";
    auto patch = send("PATCH", item, "{\"notes\":\"" + value + "\"}", old);
    EXPECT_EQ(patch.status, 409) << patch.body;
    EXPECT_EQ(patch.code(), "e2e_key_changed");
    auto got = call("GET", item).json();
    EXPECT_TRUE(got->isNull("notes") || got->getValue<std::string>("notes").empty());
  }
  EXPECT_EQ(count(), 2);
}

TEST_F(Secrets, EventsCarryNoValuesOrNotes) {
  auto made = call("POST", "/api/secrets/?identity=" + ann_,
                   R"({"key":"STRIPE","value":"sk_live_VALUE1","notes":"NOTES1"})");
  ASSERT_EQ(made.status, 201);
  const std::string uuid = made.json()->getValue<std::string>("uuid");
  ASSERT_EQ(call("PATCH", "/api/secrets/" + uuid + "/", R"({"value":"sk_live_VALUE2"})").status,
            200);
  ASSERT_EQ(call("DELETE", "/api/vault/" + uuid + "/").status, 204);
  const std::string stream = eventStream(
      svcd_->port(), key_, "last_event_id=0&types=secret.created,secret.updated,secret.deleted",
      {"event: secret.created", "event: secret.updated", "event: secret.deleted"});
  for (const char* type : {"secret.created", "secret.updated", "secret.deleted"}) {
    EXPECT_NE(stream.find(std::string("event: ") + type), std::string::npos) << type << stream;
  }
  EXPECT_NE(stream.find("\"key\":\"STRIPE\""), std::string::npos) << stream;
  EXPECT_NE(stream.find(uuid), std::string::npos) << stream;
  for (const char* never : {"VALUE1", "VALUE2", "NOTES1", "\"value\"", "\"notes\""}) {
    EXPECT_EQ(stream.find(never), std::string::npos) << never << "\n" << stream;
  }
}

// Two svcd processes on one database and one master key file. Each keeps the secrets it reads by
// key (SecretCache, here for 120 s): a change made through the other reaches it through the event
// log, long before the cache would let go of it.
class SecretProcesses : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault", "secrets"};
    o.args = {"--set", "secrets.read_cache_seconds=120"};
    a_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(a_->start()) << a_->log();
    o.db_url = a_->dbUrl();
    o.args.insert(o.args.end(),
                  {"--set", "vault.master_key_file=" + a_->dataDir() + "/vault/master.key"});
    b_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(b_->start()) << b_->log();
    key_ = operatorLogin(*a_, "owner@example.com")->optValue<std::string>("management_key", "");
    auto i = http(a_->port(), "POST", "/api/identities/", R"({"name":"Ann"})", bearer(key_));
    ASSERT_EQ(i.status, 201) << i.body;
    ann_ = i.json()->getValue<std::string>("uuid");
  }
  // @return the value of Ann's secret `key` as svcd serves it.
  std::string value(Svcd& svcd, const std::string& key) {
    auto r = http(svcd.port(), "GET", "/api/secrets/?identity=" + ann_ + "&key=" + key, "",
                  bearer(key_));
    EXPECT_EQ(r.status, 200) << r.body;
    auto results = r.json()->getArray("results");
    return results->size() == 1 ? results->getObject(0)->getValue<std::string>("value") : "";
  }
  // @return how many reads by key svcd served from its read cache (its /metrics).
  long hits(Svcd& svcd) {
    auto m = http(svcd.adminPort(), "GET", "/metrics", "", bearer(svcd.adminToken()));
    const std::string name = "svc_secrets_read_cache_hits_total ";
    const auto at = m.body.find("\n" + name);
    return at == std::string::npos ? -1 : std::stol(m.body.substr(at + 1 + name.size()));
  }
  // Reads Ann's secret `key` at svcd until it is served from the cache. @return whether it was.
  bool kept(Svcd& svcd, const std::string& key) {
    for (int i = 0; i < 200; ++i) {
      const long before = hits(svcd);
      value(svcd, key);
      if (hits(svcd) > before) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // @return how long svcd took to serve want for Ann's secret `key` (at most 60 s).
  std::chrono::milliseconds until(Svcd& svcd, const std::string& key, const std::string& want) {
    const auto start = std::chrono::steady_clock::now();
    while (value(svcd, key) != want &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  }

  std::unique_ptr<Svcd> a_, b_;
  std::string key_, ann_;
};

TEST_F(SecretProcesses, AChangeThroughOneIsServedByTheOtherWithinASecond) {
  auto made = http(a_->port(), "POST", "/api/secrets/?identity=" + ann_,
                   R"({"key":"TOKEN","value":"one"})", bearer(key_));
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string uuid = made.json()->getValue<std::string>("uuid");
  ASSERT_EQ(value(*b_, "TOKEN"), "one");
  ASSERT_TRUE(kept(*b_, "TOKEN"));
  ASSERT_EQ(
      http(a_->port(), "PATCH", "/api/secrets/" + uuid + "/", R"({"value":"two"})", bearer(key_))
          .status,
      200);
  EXPECT_LT(until(*b_, "TOKEN", "two").count(), 30000) << "kept for 120 s, but the event drops it";
  ASSERT_EQ(http(a_->port(), "DELETE", "/api/secrets/" + uuid + "/", "", bearer(key_)).status, 204);
  EXPECT_LT(until(*b_, "TOKEN", "").count(), 30000);

  // A passphrase change through a replaces every value: b's kept record is stale.
  made = http(a_->port(), "POST", "/api/secrets/?identity=" + ann_,
              R"({"key":"SEALED","value":"plain"})", bearer(key_));
  ASSERT_EQ(made.status, 201) << made.body;
  ASSERT_EQ(value(*b_, "SEALED"), "plain");
  ASSERT_TRUE(kept(*b_, "SEALED"));
  auto lease = http(a_->port(), "POST", "/api/encryption/rekey/", "{}", bearer(key_));
  ASSERT_EQ(lease.status, 201) << lease.body;
  auto b64 = [](const std::string& bytes) {
    std::ostringstream out;
    Poco::Base64Encoder encoder(out);
    encoder.rdbuf()->setLineLength(0);
    encoder << bytes;
    encoder.close();
    return out.str();
  };
  const std::string sealed = "e2e::" + b64(std::string(48, 's') + "sealed");
  const std::string body = "{\"salt\":\"" + b64(std::string(16, 'a')) + "\",\"public_key\":\"" +
                           b64(std::string(32, 'a')) + "\",\"verifier\":\"" +
                           b64(std::string(62, 'a')) + "\",\"rekey_token\":\"" +
                           lease.json()->getValue<std::string>("rekey_token") +
                           "\",\"records\":[{\"holder\":\"secrets\",\"uuid\":\"" +
                           made.json()->getValue<std::string>("uuid") +
                           "\",\"fields\":{\"value\":\"" + sealed + "\"}}]}";
  auto set = http(a_->port(), "PUT", "/api/encryption/", body, bearer(key_));
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(value(*a_, "SEALED"), sealed);
  EXPECT_LT(until(*b_, "SEALED", sealed).count(), 30000);
}

}  // namespace
}  // namespace svc::testing
