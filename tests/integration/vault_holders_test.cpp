// The vault under its holders, over real HTTP: the end-to-end rule on passwords and secrets
// before and after setup, nothing protected stored in plaintext (read past svcd), the atomic
// passphrase change with a racing write, rotation under load, and damaged ciphertext.
#include "harness.h"

#include <Poco/Base64Encoder.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <sstream>
#include <thread>

namespace svc::testing {
namespace {

std::string b64(const std::string& bytes) {
  std::ostringstream out;
  Poco::Base64Encoder encoder(out);
  encoder.rdbuf()->setLineLength(0);
  encoder << bytes;
  encoder.close();
  return out.str();
}
// A value with a sealed box's shape; the server cannot tell it from a real one, by design.
std::string sealed(const std::string& tag) {
  return "e2e::" + b64(std::string(48, 's') + tag);
}
std::string setupBody(char fill) {
  return "{\"salt\":\"" + b64(std::string(16, fill)) + "\",\"public_key\":\"" +
         b64(std::string(32, fill)) + "\",\"verifier\":\"" + b64(std::string(62, fill)) + "\"}";
}
std::string json(const Poco::JSON::Object& o) {
  std::ostringstream out;
  o.stringify(out);
  return out.str();
}

class VaultHolders : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault", "passwords", "secrets"};
    o.args = {"--set", "vault.rekey_seconds=30"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "owner@example.com")->optValue<std::string>("management_key", "");
    auto i = call("POST", "/api/identities/", "{\"name\":\"agent\"}");
    ASSERT_EQ(i.status, 201) << i.body;
    identity_ = i.json()->getValue<std::string>("uuid");
  }

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "") {
    return http(svcd_->port(), method, path, body, bearer(key_));
  }
  std::string q() const { return "?identity=" + identity_; }
  HttpReply addSecret(const std::string& key, const std::string& value,
                      const std::string& notes = "") {
    Poco::JSON::Object o;
    o.set("key", key);
    o.set("value", value);
    if (!notes.empty()) o.set("notes", notes);
    return call("POST", "/api/secrets/" + q(), json(o));
  }
  HttpReply addPassword(const std::string& domain, const std::string& username,
                        const std::string& password) {
    Poco::JSON::Object o;
    o.set("domain", domain);
    o.set("username", username);
    o.set("password", password);
    return call("POST", "/api/passwords/" + q(), json(o));
  }
  std::string secretValue(const std::string& key) {
    auto r = call("GET", "/api/secrets/" + q() + "&key=" + key);
    EXPECT_EQ(r.status, 200) << r.body;
    auto list = r.json()->getArray("results");
    if (!list || list->size() != 1) return "<" + std::to_string(list ? list->size() : 0) + ">";
    return list->getObject(0)->getValue<std::string>("value");
  }
  long count(const std::string& path) {
    auto r = call("GET", path + q());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getValue<long>("count");
  }
  std::string errorField(const HttpReply& r) {
    auto errors = r.json()->getObject("errors");
    return errors && !errors->getNames().empty() ? errors->getNames().front() : "";
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_, identity_;
};

TEST_F(VaultHolders, TheEndToEndRuleHoldsForPasswordsAndSecretsAlike) {
  // Before setup: plaintext is accepted, a sealed value is not (nobody could open it).
  EXPECT_EQ(addSecret("PLAIN", "v").status, 201);
  EXPECT_EQ(secretValue("PLAIN"), "v");  // kept by the read cache: the change below drops it
  EXPECT_EQ(addSecret("EARLY", sealed("x")).status, 400);
  auto generated = call("POST", "/api/passwords/" + q(), "{\"domain\":\"example.com\"}");
  ASSERT_EQ(generated.status, 201) << generated.body;
  EXPECT_EQ(generated.json()->getValue<std::string>("password").size(), 16u);
  // Setting up an account whose vault holds plaintext goes through the change, which seals it.
  EXPECT_EQ(call("PUT", "/api/encryption/", setupBody('a')).status, 409);
  auto lease = call("POST", "/api/encryption/rekey/", "{}");
  ASSERT_EQ(lease.status, 201) << lease.body;
  auto records = lease.json()->getArray("records");
  ASSERT_EQ(records->size(), 2u) << lease.body;
  Poco::JSON::Object body =
      *Poco::JSON::Parser().parse(setupBody('a')).extract<Poco::JSON::Object::Ptr>();
  body.set("rekey_token", lease.json()->getValue<std::string>("rekey_token"));
  Poco::JSON::Array resealed;
  for (std::size_t i = 0; i < records->size(); ++i) {
    auto rec = records->getObject(static_cast<unsigned>(i));
    Poco::JSON::Object::Ptr fields = new Poco::JSON::Object;
    for (const auto& f : rec->getObject("fields")->getNames()) fields->set(f, sealed(f));
    Poco::JSON::Object::Ptr out = new Poco::JSON::Object;
    out->set("holder", rec->getValue<std::string>("holder"));
    out->set("uuid", rec->getValue<std::string>("uuid"));
    out->set("fields", fields);
    resealed.add(out);
  }
  body.set("records", resealed);
  auto set = call("PUT", "/api/encryption/", json(body));
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(secretValue("PLAIN"), sealed("value"));
  // After: every protected field must be sealed, named when it is not, and nothing is stored.
  const long secrets = count("/api/secrets/"), passwords = count("/api/passwords/");
  auto s = addSecret("K1", "plaintext");
  EXPECT_EQ(s.status, 400);
  EXPECT_EQ(errorField(s), "value");
  auto n = addSecret("K1", sealed("v"), "plain notes");
  EXPECT_EQ(n.status, 400);
  EXPECT_EQ(errorField(n), "notes");
  auto p = addPassword("example.org", sealed("u"), "hunter2");
  EXPECT_EQ(p.status, 400);
  EXPECT_EQ(errorField(p), "password");
  auto u = addPassword("example.org", "bob", sealed("p"));
  EXPECT_EQ(u.status, 400);
  EXPECT_EQ(errorField(u), "username");
  EXPECT_EQ(call("POST", "/api/passwords/" + q(), "{\"domain\":\"example.net\"}").status, 400);
  EXPECT_EQ(count("/api/secrets/"), secrets);
  EXPECT_EQ(count("/api/passwords/"), passwords);
  EXPECT_EQ(addSecret("K1", sealed("v"), sealed("n")).status, 201);
  EXPECT_EQ(addPassword("example.org", sealed("u"), sealed("p")).status, 201);
  EXPECT_EQ(secretValue("K1"), sealed("v"));
}

TEST_F(VaultHolders, NothingProtectedIsStoredInPlaintext) {
  ASSERT_EQ(addSecret("MARKER_KEY_NAME", "secret-value-3f9a1c", "secret-notes-77b2e0").status, 201);
  ASSERT_EQ(addPassword("marker-domain.example", "user-name-5d4c3b", "pass-word-9e8d7c").status,
            201);
  const std::string bytes = databaseBytes(svcd_->dbUrl());
  // The names are stored as they are: the read sees the right database.
  EXPECT_NE(bytes.find("MARKER_KEY_NAME"), std::string::npos);
  EXPECT_NE(bytes.find("marker-domain.example"), std::string::npos);
  for (const char* plain :
       {"secret-value-3f9a1c", "secret-notes-77b2e0", "user-name-5d4c3b", "pass-word-9e8d7c"}) {
    EXPECT_EQ(bytes.find(plain), std::string::npos) << plain;
  }
  EXPECT_EQ(secretValue("MARKER_KEY_NAME"), "secret-value-3f9a1c");
}

TEST_F(VaultHolders, APassphraseChangeIsAtomicAndARacingWriteGets409AndIsNotLost) {
  ASSERT_EQ(call("PUT", "/api/encryption/", setupBody('a')).status, 200);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(addSecret("S" + std::to_string(i), sealed("old" + std::to_string(i))).status, 201);
  }
  ASSERT_EQ(addPassword("example.com", sealed("u"), sealed("p")).status, 201);
  auto lease = call("POST", "/api/encryption/rekey/", "{}");
  ASSERT_EQ(lease.status, 201) << lease.body;
  auto records = lease.json()->getArray("records");
  ASSERT_EQ(records->size(), 4u);
  // A write while the change holds the vault is refused, and says when to retry.
  auto racing = addSecret("S9", sealed("racing"));
  EXPECT_EQ(racing.status, 409) << racing.body;
  EXPECT_EQ(racing.json()->getValue<std::string>("code"), "vault_rekeying");
  auto build = [&](bool complete, bool one_bad) {
    Poco::JSON::Object body =
        *Poco::JSON::Parser().parse(setupBody('b')).extract<Poco::JSON::Object::Ptr>();
    body.set("rekey_token", lease.json()->getValue<std::string>("rekey_token"));
    Poco::JSON::Array resealed;
    for (std::size_t i = 0; i < records->size(); ++i) {
      if (!complete && i == 0) continue;
      auto rec = records->getObject(static_cast<unsigned>(i));
      Poco::JSON::Object::Ptr fields = new Poco::JSON::Object;
      for (const auto& f : rec->getObject("fields")->getNames()) {
        const std::string was = rec->getObject("fields")->getValue<std::string>(f);
        fields->set(f, one_bad && i == 2 ? std::string("plain") : sealed("new" + was.substr(5, 8)));
      }
      Poco::JSON::Object::Ptr out = new Poco::JSON::Object;
      out->set("holder", rec->getValue<std::string>("holder"));
      out->set("uuid", rec->getValue<std::string>("uuid"));
      out->set("fields", fields);
      resealed.add(out);
    }
    body.set("records", resealed);
    return json(body);
  };
  // All or nothing: a missing or unsealed value changes nothing.
  EXPECT_EQ(call("PUT", "/api/encryption/", build(false, false)).status, 400);
  EXPECT_EQ(call("PUT", "/api/encryption/", build(true, true)).status, 400);
  EXPECT_EQ(secretValue("S1"), sealed("old1"));
  EXPECT_EQ(call("GET", "/api/encryption/").json()->getValue<std::string>("public_key"),
            b64(std::string(32, 'a')));
  auto done = call("PUT", "/api/encryption/", build(true, false));
  ASSERT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(done.json()->getValue<std::string>("public_key"), b64(std::string(32, 'b')));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(secretValue("S" + std::to_string(i)), sealed("old" + std::to_string(i)));
  }
  // The refused write, retried after the change, is stored.
  EXPECT_EQ(addSecret("S9", sealed("racing")).status, 201);
  EXPECT_EQ(secretValue("S9"), sealed("racing"));
}

TEST_F(VaultHolders, RotationUnderLoadFailsNoRequestAndKeepsEveryValue) {
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(addSecret("R" + std::to_string(i), "value-" + std::to_string(i)).status, 201);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 3; ++t) {
    load.emplace_back([&, t] {
      for (int n = 0; !stop; ++n) {
        const std::string key = "R" + std::to_string((n * 3 + t) % 40);
        auto r = call("GET", "/api/secrets/" + q() + "&key=" + key);
        const bool good = r.status == 200 && r.body.find("value-") != std::string::npos;
        (good ? ok : failed)++;
        if (t == 0) {
          auto w = addSecret("W" + std::to_string(n), "written-" + std::to_string(n));
          (w.status == 201 ? ok : failed)++;
        }
      }
    });
  }
  // Under load before the rotation starts, and still after it ends, however fast the machine.
  const auto grows = [&](int to) {
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
         ok.load() < to && std::chrono::steady_clock::now() < until;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return ok.load() >= to;
  };
  const bool loaded = grows(20);
  auto rotated = http(svcd_->adminPort(), "POST", "/admin/vault/rotate-key/", "{}",
                      bearer(svcd_->adminToken()));
  const bool served_after = grows(ok.load() + 10);
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_TRUE(loaded) << "the load never got going: " << ok.load() << " answered";
  EXPECT_TRUE(served_after) << "the load stopped after the rotation";
  ASSERT_EQ(rotated.status, 200) << rotated.body;
  EXPECT_GE(rotated.json()->getValue<long>("reencrypted"), 40);
  EXPECT_EQ(rotated.json()->getValue<long>("failed"), 0);
  EXPECT_EQ(failed.load(), 0);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(secretValue("R" + std::to_string(i)), "value-" + std::to_string(i));
  }
}

TEST_F(VaultHolders, ADamagedOrMovedValueAnswers500WithARequestIdNeverGarbage) {
  auto a = addSecret("A", "value-a");
  auto b = addSecret("B", "value-b");
  ASSERT_EQ(a.status, 201);
  ASSERT_EQ(b.status, 201);
  const std::string uuid_a = a.json()->getValue<std::string>("uuid");
  const std::string uuid_b = b.json()->getValue<std::string>("uuid");
  // B's value copied onto A: it does not decrypt there.
  runSql(svcd_->dbUrl(),
         {"UPDATE vault_values SET sealed = (SELECT sealed FROM (SELECT sealed FROM vault_values "
          "WHERE record = '" +
          uuid_b + "' AND field = 'value') AS b) WHERE record = '" + uuid_a +
          "' AND field = 'value'"});
  auto moved = call("GET", "/api/secrets/" + uuid_a + "/");
  EXPECT_EQ(moved.status, 500) << moved.body;
  const std::string request_id = moved.json()->optValue<std::string>("request_id", "");
  EXPECT_FALSE(request_id.empty()) << moved.body;
  EXPECT_EQ(moved.body.find("value-b"), std::string::npos);
  EXPECT_NE(svcd_->waitForLog("does not decrypt").find(uuid_a), std::string::npos);
  // B itself still reads.
  EXPECT_EQ(call("GET", "/api/secrets/" + uuid_b + "/").json()->getValue<std::string>("value"),
            "value-b");
}

}  // namespace
}  // namespace svc::testing
