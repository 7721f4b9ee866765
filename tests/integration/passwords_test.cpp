// The passwords plugin over real HTTP, beside the real vault: every route and status, identity
// scoping (an identity key sees only its identity's entries, another account gets 404), bad input
// on every field with nothing stored, the generated password on POST, the generator's
// parameters, events without values, and its svcctl commands.
#include "harness.h"

#include <Poco/Base64Encoder.h>
#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

#include <sstream>

namespace svc::testing {
namespace {

std::string b64(std::size_t n, char fill) {
  std::ostringstream out;
  Poco::Base64Encoder encoder(out);
  encoder.rdbuf()->setLineLength(0);
  encoder << std::string(n, fill);
  encoder.close();
  return out.str();
}
// A value of the shape the client seals (a sealed box: 48 bytes of overhead and the plaintext).
std::string sealed(char fill, std::size_t plaintext = 10) {
  return "e2e::" + b64(48 + plaintext, fill);
}
// End-to-end metadata of the right shape (the server checks shapes only).
std::string encryptionSetup() {
  return "{\"salt\":\"" + b64(16, 's') + "\",\"public_key\":\"" + b64(32, 'k') +
         "\",\"verifier\":\"" + b64(62, 'v') + "\"}";
}

class Passwords : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault", "passwords"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "owner@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
  }

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& key = "") {
    return http(svcd_->port(), method, path, body, bearer(key.empty() ? key_ : key));
  }
  std::string identity(const std::string& name) {
    auto r = call("POST", "/api/identities/", "{\"name\":\"" + name + "\"}");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("uuid");
  }
  std::string identityKey(const std::string& identity) {
    auto r = call("POST", "/api/auth/keys/identity/", "{\"identity\":\"" + identity + "\"}");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("key");
  }
  HttpReply create(const std::string& identity, const std::string& body,
                   const std::string& key = "") {
    return call("POST", "/api/passwords/?identity=" + identity, body, key);
  }
  std::string created(const std::string& identity, const std::string& body) {
    auto r = create(identity, body);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? r.json()->getValue<std::string>("uuid") : "";
  }
  long count(const std::string& query = "") {
    auto r = call("GET", "/api/passwords/" + query);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getValue<long>("count");
  }
  std::pair<int, std::string> ctl(const std::string& args, const std::string& stdin_text = "") {
    return runCommand((stdin_text.empty() ? "" : "printf '%s' '" + stdin_text + "' | ") + "'" +
                      binDir() + "/svcctl' --url http://127.0.0.1:" +
                      std::to_string(svcd_->port()) + " --key " + key_ + " " + args);
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_;
};

TEST_F(Passwords, EveryRouteAndStatus) {
  const std::string ann = identity("Ann");
  auto r = create(ann, R"({"domain":"Example.com","username":"ann@example.com",)"
                       R"("password":"correct horse","notes":"first\nsecond"})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.header("cache-control"), "no-store");
  auto e = r.json();
  const std::string uuid = e->getValue<std::string>("uuid");
  EXPECT_EQ(e->getValue<std::string>("identity"), ann);
  EXPECT_EQ(e->getValue<std::string>("domain"), "example.com");
  EXPECT_EQ(e->getValue<std::string>("username"), "ann@example.com");
  EXPECT_EQ(e->getValue<std::string>("password"), "correct horse");
  EXPECT_EQ(e->getValue<std::string>("notes"), "first\nsecond");
  EXPECT_EQ(e->getValue<std::string>("created_dt").size(), 27u);

  auto got = call("GET", "/api/passwords/" + uuid + "/");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.json()->getValue<std::string>("password"), "correct horse");
  EXPECT_EQ(got.json()->getValue<std::string>("notes"), "first\nsecond");
  EXPECT_EQ(call("GET", "/api/passwords/" + uuid).status, 200) << "no trailing slash";

  auto list = call("GET", "/api/passwords/");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.json()->getValue<int>("count"), 1);
  EXPECT_EQ(list.json()->getArray("results")->getObject(0)->getValue<std::string>("username"),
            "ann@example.com");

  auto put = call("PUT", "/api/passwords/" + uuid + "/",
                  R"({"domain":"login.example.com","username":"ann2","password":"p2","notes":""})");
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(put.json()->getValue<std::string>("notes"), "");
  EXPECT_EQ(call("PUT", "/api/passwords/" + uuid + "/", R"({"domain":"x.example"})").status, 400);
  auto patch = call("PATCH", "/api/passwords/" + uuid + "/", R"({"password":"p3"})");
  ASSERT_EQ(patch.status, 200) << patch.body;
  EXPECT_EQ(patch.json()->getValue<std::string>("password"), "p3");
  EXPECT_EQ(patch.json()->getValue<std::string>("username"), "ann2");
  EXPECT_EQ(patch.json()->getValue<std::string>("domain"), "login.example.com");
  EXPECT_GT(patch.json()->getValue<std::string>("updated_dt"),
            patch.json()->getValue<std::string>("created_dt"));
  // In a PATCH, null clears the username or notes, and is refused for the password or domain.
  auto cleared = call("PATCH", "/api/passwords/" + uuid + "/", R"({"username":null})");
  ASSERT_EQ(cleared.status, 200) << cleared.body;
  EXPECT_EQ(cleared.json()->getValue<std::string>("username"), "");
  EXPECT_EQ(cleared.json()->getValue<std::string>("password"), "p3");
  auto no_password = call("PATCH", "/api/passwords/" + uuid + "/", R"({"password":null})");
  EXPECT_EQ(no_password.status, 400) << no_password.body;

  // Names only: no protected field in the answer.
  auto names = call("GET", "/api/passwords/?identity=" + ann + "&values=false");
  ASSERT_EQ(names.status, 200) << names.body;
  EXPECT_EQ(names.json()->getArray("results")->getObject(0)->getValue<std::string>("domain"),
            "login.example.com");
  EXPECT_EQ(names.body.find("p3"), std::string::npos) << names.body;
  EXPECT_FALSE(names.json()->getArray("results")->getObject(0)->has("password"));

  auto gen = call("GET", "/api/passwords/generate-password/?length=20&exclude_chars=xyz");
  ASSERT_EQ(gen.status, 200) << gen.body;
  EXPECT_EQ(gen.json()->getValue<std::string>("password").size(), 20u);
  auto impossible = call("GET", "/api/passwords/generate-password/?length=200");
  EXPECT_EQ(impossible.status, 400);
  EXPECT_TRUE(impossible.json()->getObject("errors")->has("length"));
  auto emptied = call("GET", "/api/passwords/generate-password/?exclude_chars=0123456789");
  EXPECT_EQ(emptied.status, 400);
  EXPECT_TRUE(emptied.json()->getObject("errors")->has("exclude_chars"));
  auto no_class = call("GET",
                       "/api/passwords/generate-password/"
                       "?digits=false&lowercase=0&uppercase=FALSE&special=false");
  EXPECT_EQ(no_class.status, 400);
  EXPECT_EQ(call("GET", "/api/passwords/generate-password/?special=perhaps").status, 400);
  EXPECT_EQ(call("DELETE", "/api/passwords/generate-password/").status, 405);

  EXPECT_EQ(call("DELETE", "/api/passwords/" + uuid + "/").status, 204);
  EXPECT_EQ(call("GET", "/api/passwords/" + uuid + "/").status, 404);
  EXPECT_EQ(call("PATCH", "/api/passwords/" + uuid + "/", R"({"password":"x"})").status, 404);
  EXPECT_EQ(call("DELETE", "/api/passwords/" + uuid + "/").status, 404);
  EXPECT_EQ(call("GET", "/api/passwords/not-a-uuid/").status, 404);
  EXPECT_EQ(count(), 0);
  auto anonymous = http(svcd_->port(), "GET", "/api/passwords/");
  EXPECT_EQ(anonymous.status, 401);
  auto no_identity = call("POST", "/api/passwords/", R"({"domain":"x.example"})");
  EXPECT_EQ(no_identity.status, 400);
  EXPECT_EQ(no_identity.code(), "identity_required");
}

TEST_F(Passwords, APostWithoutPasswordStoresAGeneratedOne) {
  const std::string ann = identity("Ann");
  auto r = create(ann, R"({"domain":"example.com","username":"ann"})");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string password = r.json()->getValue<std::string>("password");
  ASSERT_EQ(password.size(), 16u);
  for (const char* cls : {"0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                          "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"}) {
    EXPECT_NE(password.find_first_of(cls), std::string::npos) << password;
  }
  auto got = call("GET", "/api/passwords/" + r.json()->getValue<std::string>("uuid") + "/");
  EXPECT_EQ(got.json()->getValue<std::string>("password"), password);
  auto again = create(ann, R"({"domain":"example.com"})");
  EXPECT_NE(again.json()->getValue<std::string>("password"), password);
}

TEST_F(Passwords, ListsNewestFirstFilteredByIdentityDomainAndSearch) {
  const std::string ann = identity("Ann"), bob = identity("Bob");
  created(ann, R"({"domain":"mail.example.com","password":"1"})");
  created(ann, R"({"domain":"EXAMPLE.com","password":"2"})");
  created(bob, R"({"domain":"example.com","password":"3"})");
  created(ann, R"({"domain":"shop.test","password":"4"})");
  auto all = call("GET", "/api/passwords/").json();
  EXPECT_EQ(all->getValue<int>("count"), 4);
  auto results = all->getArray("results");
  ASSERT_EQ(results->size(), 4u);
  EXPECT_EQ(results->getObject(0)->getValue<std::string>("password"), "4");
  EXPECT_EQ(results->getObject(3)->getValue<std::string>("password"), "1");
  EXPECT_EQ(count("?identity=" + ann), 3);
  EXPECT_EQ(count("?domain=Example.COM"), 2);
  EXPECT_EQ(count("?domain=example.com&identity=" + bob), 1);
  EXPECT_EQ(count("?search=EXAMPLE"), 3);
  EXPECT_EQ(count("?search=_"), 0);
  auto page = call("GET", "/api/passwords/?limit=1&offset=1").json();
  EXPECT_EQ(page->getArray("results")->getObject(0)->getValue<std::string>("password"), "3");
  EXPECT_FALSE(page->isNull("next"));
  EXPECT_FALSE(page->isNull("previous"));
}

TEST_F(Passwords, IdentityKeysSeeTheirOwnAndOtherAccountsNothing) {
  const std::string ann = identity("Ann"), bob = identity("Bob");
  const std::string ann_entry = created(ann, R"({"domain":"a.example","password":"a"})");
  const std::string bob_entry = created(bob, R"({"domain":"b.example","password":"b"})");
  const std::string ann_key = identityKey(ann);

  auto mine = call("GET", "/api/passwords/", "", ann_key);
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_EQ(mine.json()->getValue<int>("count"), 1);
  EXPECT_EQ(call("GET", "/api/passwords/" + ann_entry + "/", "", ann_key).status, 200);
  EXPECT_EQ(call("GET", "/api/passwords/" + bob_entry + "/", "", ann_key).status, 404);
  EXPECT_EQ(
      call("PATCH", "/api/passwords/" + bob_entry + "/", R"({"password":"x"})", ann_key).status,
      404);
  EXPECT_EQ(call("DELETE", "/api/passwords/" + bob_entry + "/", "", ann_key).status, 404);
  EXPECT_EQ(call("GET", "/api/passwords/?identity=" + bob, "", ann_key).status, 403);
  EXPECT_EQ(create(bob, R"({"domain":"x.example"})", ann_key).status, 403);
  // The identity key needs no identity= to create.
  EXPECT_EQ(call("POST", "/api/passwords/", R"({"domain":"c.example"})", ann_key).status, 201);

  const std::string other =
      operatorLogin(*svcd_, "other@example.com")->optValue<std::string>("management_key", "");
  auto theirs = call("GET", "/api/passwords/", "", other);
  EXPECT_EQ(theirs.json()->getValue<int>("count"), 0);
  for (const auto& uuid : {ann_entry, bob_entry}) {
    EXPECT_EQ(call("GET", "/api/passwords/" + uuid + "/", "", other).status, 404);
    EXPECT_EQ(call("PATCH", "/api/passwords/" + uuid + "/", R"({"password":"x"})", other).status,
              404);
    EXPECT_EQ(call("DELETE", "/api/passwords/" + uuid + "/", "", other).status, 404);
  }
  EXPECT_EQ(create(ann, R"({"domain":"x.example"})", other).status, 404);
  EXPECT_EQ(
      call("GET", "/api/passwords/" + bob_entry + "/").json()->getValue<std::string>("password"),
      "b");
  EXPECT_EQ(count(), 3);
}

TEST_F(Passwords, BadInputOnEveryFieldIsRefusedAndStoresNothing) {
  const std::string ann = identity("Ann");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "domain"},
      {R"({"domain":null})", "domain"},
      {R"({"domain":""})", "domain"},
      {R"({"domain":"   "})", "domain"},
      {R"({"domain":5})", "domain"},
      {R"({"domain":"two words"})", "domain"},
      {R"({"domain":"a\u0001b"})", "domain"},
      {"{\"domain\":\"" + std::string(254, 'a') + "\"}", "domain"},
      {R"({"domain":"x.example","username":["a"]})", "username"},
      {R"({"domain":"x.example","username":"a\tb"})", "username"},
      {"{\"domain\":\"x.example\",\"username\":\"" + std::string(4097, 'u') + "\"}", "username"},
      {R"({"domain":"x.example","password":""})", "password"},
      {R"({"domain":"x.example","password":true})", "password"},
      {R"({"domain":"x.example","password":"a\u001bb"})", "password"},
      {"{\"domain\":\"x.example\",\"password\":\"" + std::string(4097, 'p') + "\"}", "password"},
      {R"({"domain":"x.example","notes":{}})", "notes"},
      {R"({"domain":"x.example","notes":"\u0007"})", "notes"},
      {"{\"domain\":\"x.example\",\"notes\":\"" + std::string(65537, 'n') + "\"}", "notes"},
      // The vault's rule: no account here has end-to-end encryption, so nobody could open these.
      {R"({"domain":"x.example","password":"e2e::AAAA"})", "password"},
  };
  for (const auto& [body, field] : cases) {
    SCOPED_TRACE(body.substr(0, 80));
    auto r = create(ann, body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.code(), "invalid");
    auto errors = r.json()->getObject("errors");
    ASSERT_TRUE(errors) << r.body;
    EXPECT_TRUE(errors->has(field)) << r.body;
  }
  auto all_bad = create(ann, R"({"domain":"","username":1,"password":"","notes":2})");
  EXPECT_EQ(all_bad.json()->getObject("errors")->size(), 4u) << all_bad.body;
  EXPECT_EQ(create(ann, "not json").status, 400);
  EXPECT_EQ(count(), 0);

  const std::string uuid = created(ann, R"({"domain":"ok.example","password":"keep"})");
  for (const auto& [body, field] : cases) {
    // A PATCH may give nothing, and a null clears what may be empty.
    if (body == "{}" || body.find("null") != std::string::npos) continue;
    SCOPED_TRACE(body.substr(0, 80));
    auto r = call("PATCH", "/api/passwords/" + uuid + "/", body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_TRUE(r.json()->getObject("errors")->has(field)) << r.body;
  }
  auto kept = call("GET", "/api/passwords/" + uuid + "/").json();
  EXPECT_EQ(kept->getValue<std::string>("domain"), "ok.example");
  EXPECT_EQ(kept->getValue<std::string>("password"), "keep");
  EXPECT_EQ(kept->getValue<std::string>("created_dt"), kept->getValue<std::string>("updated_dt"));
  EXPECT_EQ(call("GET", "/api/passwords/?domain=a%20b").status, 400);
}

TEST_F(Passwords, EventsCarryTheEntryWithoutItsValues) {
  const std::string ann = identity("Ann");
  const std::string uuid =
      created(ann, R"({"domain":"example.com","username":"user-value","password":"pw-value-1",)"
                   R"("notes":"notes-value"})");
  ASSERT_EQ(call("PATCH", "/api/passwords/" + uuid + "/", R"({"password":"pw-value-2"})").status,
            200);
  ASSERT_EQ(call("DELETE", "/api/passwords/" + uuid + "/").status, 204);
  const std::string stream = eventStream(
      svcd_->port(), key_,
      "last_event_id=0&types=password.created,password.updated,password.deleted",
      {"event: password.created", "event: password.updated", "event: password.deleted"});
  for (const char* type : {"password.created", "password.updated", "password.deleted"}) {
    EXPECT_NE(stream.find(std::string("event: ") + type), std::string::npos) << stream;
  }
  EXPECT_NE(stream.find("\"domain\":\"example.com\""), std::string::npos) << stream;
  EXPECT_NE(stream.find(uuid), std::string::npos) << stream;
  for (const char* value : {"user-value", "pw-value-1", "pw-value-2", "notes-value", "\"password\"",
                            "\"username\"", "\"notes\""}) {
    EXPECT_EQ(stream.find(value), std::string::npos) << value << " in\n" << stream;
  }
}

TEST_F(Passwords, OnceTheAccountSealsItsValuesTheServerNeverReceivesAPlaintext) {
  const std::string ann = identity("Ann");
  const std::string before = created(ann, R"({"domain":"before.example","password":"old"})");
  ASSERT_EQ(call("PUT", "/api/encryption/", encryptionSetup()).status, 409)
      << "a vault with plaintext values needs the passphrase change";
  ASSERT_EQ(call("DELETE", "/api/passwords/" + before + "/").status, 204);
  auto setup = call("PUT", "/api/encryption/", encryptionSetup());
  ASSERT_EQ(setup.status, 200) << setup.body;

  // Without a password: the server must not make one up.
  auto generated = create(ann, R"({"domain":"x.example"})");
  EXPECT_EQ(generated.status, 400) << generated.body;
  EXPECT_TRUE(generated.json()->getObject("errors")->has("password")) << generated.body;
  // Plaintext in any protected field: 400 naming it.
  for (const char* field : {"username", "password", "notes"}) {
    std::string body = "{\"domain\":\"x.example\",\"password\":\"" + sealed('p') + "\",\"" + field +
                       "\":\"plain\"}";
    auto r = create(ann, body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_TRUE(r.json()->getObject("errors")->has(field)) << r.body;
  }
  EXPECT_EQ(count(), 0);

  const std::string value = sealed('p'), user = sealed('u', 3);
  auto r = create(ann, "{\"domain\":\"x.example\",\"password\":\"" + value + "\",\"username\":\"" +
                           user + "\"}");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string uuid = r.json()->getValue<std::string>("uuid");
  auto got = call("GET", "/api/passwords/" + uuid + "/").json();
  EXPECT_EQ(got->getValue<std::string>("password"), value);
  EXPECT_EQ(got->getValue<std::string>("username"), user);
  EXPECT_EQ(got->getValue<std::string>("notes"), "");
  auto plain = call("PATCH", "/api/passwords/" + uuid + "/", R"({"password":"plain"})");
  EXPECT_EQ(plain.status, 400) << plain.body;
  EXPECT_EQ(call("GET", "/api/passwords/" + uuid + "/").json()->getValue<std::string>("password"),
            value);
  // The generator still answers: the client may seal what it gives.
  EXPECT_EQ(call("GET", "/api/passwords/generate-password/").status, 200);

  // While the passphrase changes, every write waits for it (409) and changes nothing.
  auto lease = call("POST", "/api/encryption/rekey/", "{}");
  ASSERT_EQ(lease.status, 201) << lease.body;
  auto racing =
      call("PATCH", "/api/passwords/" + uuid + "/", "{\"password\":\"" + sealed('q') + "\"}");
  EXPECT_EQ(racing.status, 409) << racing.body;
  EXPECT_EQ(racing.code(), "vault_rekeying");
  auto racing_create =
      create(ann, "{\"domain\":\"y.example\",\"password\":\"" + sealed('q') + "\"}");
  EXPECT_EQ(racing_create.status, 409) << racing_create.body;
  EXPECT_EQ(call("DELETE", "/api/passwords/" + uuid + "/").status, 409);
  ASSERT_EQ(call("DELETE", "/api/encryption/rekey/",
                 "{\"rekey_token\":\"" + lease.json()->getValue<std::string>("rekey_token") + "\"}")
                .status,
            204);
  EXPECT_EQ(count(), 1);
  EXPECT_EQ(call("GET", "/api/passwords/" + uuid + "/").json()->getValue<std::string>("password"),
            value);
}

// A client that says which public key it sealed to (X-Svc-E2e-Public-Key) is refused when that
// is no longer the account's: a page unlocked before the passphrase changed elsewhere would
// otherwise store values nobody holding the new passphrase can open.
TEST_F(Passwords, ValuesSealedToAKeyThatIsNoLongerTheAccountsAreRefused) {
  const std::string ann = identity("Ann");
  ASSERT_EQ(call("PUT", "/api/encryption/", encryptionSetup()).status, 200);
  const std::string current = b64(32, 'k'), old = b64(32, 'o');
  auto send = [&](const std::string& method, const std::string& path, const std::string& body,
                  const std::string& key) {
    return http(svcd_->port(), method, path, body,
                {{"Authorization", "Bearer " + key_},
                 {"Content-Type", "application/json"},
                 {"X-Svc-E2e-Public-Key", key}});
  };
  const std::string body = "{\"domain\":\"x.example\",\"password\":\"" + sealed('p') + "\"}";
  auto stale = send("POST", "/api/passwords/?identity=" + ann, body, old);
  EXPECT_EQ(stale.status, 409) << stale.body;
  EXPECT_EQ(stale.code(), "e2e_key_changed");
  EXPECT_NE(stale.json()->getValue<std::string>("detail").find("Unlock the vault again"),
            std::string::npos)
      << stale.body;
  EXPECT_EQ(count(), 0) << "nothing stored";
  auto fresh = send("POST", "/api/passwords/?identity=" + ann, body, current);
  ASSERT_EQ(fresh.status, 201) << fresh.body;
  const std::string uuid = fresh.json()->getValue<std::string>("uuid");
  const std::string patch = "{\"password\":\"" + sealed('q') + "\"}";
  auto stale_patch = send("PATCH", "/api/passwords/" + uuid + "/", patch, old);
  EXPECT_EQ(stale_patch.status, 409) << stale_patch.body;
  EXPECT_EQ(stale_patch.code(), "e2e_key_changed");
  EXPECT_EQ(call("GET", "/api/passwords/" + uuid + "/").json()->getValue<std::string>("password"),
            sealed('p'));
  EXPECT_EQ(send("PATCH", "/api/passwords/" + uuid + "/", patch, current).status, 200);
}

TEST_F(Passwords, NoProtectedValueIsInTheDatabase) {
  const std::string ann = identity("Ann");
  created(ann, R"({"domain":"file.example","username":"plain-user-1f3a",)"
               R"("password":"plain-password-9c2e","notes":"plain-notes-77ab"})");
  ASSERT_EQ(svcd_->terminate(), 0);
  const std::string bytes = databaseBytes(svcd_->dbUrl());
  ASSERT_NE(bytes.find("file.example"), std::string::npos) << "the right database";
  for (const char* value : {"plain-user-1f3a", "plain-password-9c2e", "plain-notes-77ab"}) {
    EXPECT_EQ(bytes.find(value), std::string::npos) << value;
  }
}

TEST_F(Passwords, SvcctlCommands) {
  const std::string ann = identity("Ann");
  auto [rc, added] = ctl("passwords add Example.org --identity " + ann +
                             " --username ann --notes 'a note' --password-stdin --reveal",
                         "from stdin\n");
  ASSERT_EQ(rc, 0) << added;
  EXPECT_NE(added.find("domain:   example.org"), std::string::npos) << added;
  EXPECT_NE(added.find("password: from stdin"), std::string::npos) << added;
  const std::string uuid = added.substr(added.find("uuid:") + 10, 36);
  ASSERT_EQ(uuid.size(), 36u);

  auto [rc2, generated] = ctl("passwords add generated.example --identity " + ann);
  EXPECT_EQ(rc2, 0) << generated;
  EXPECT_NE(generated.find("password: "), std::string::npos) << generated;

  auto [rc3, listed] = ctl("passwords list --search EXAMPLE.O");
  EXPECT_EQ(rc3, 0) << listed;
  EXPECT_NE(listed.find(uuid), std::string::npos) << listed;
  EXPECT_EQ(listed.find("generated.example"), std::string::npos) << listed;
  EXPECT_EQ(listed.find("from stdin"), std::string::npos) << "lists show no password";

  auto [rc4, edited] = ctl("passwords edit " + uuid + " --domain new.example");
  EXPECT_EQ(rc4, 0) << edited;
  EXPECT_NE(edited.find("domain:   new.example"), std::string::npos) << edited;
  // Into a pipe, the protected fields only with --reveal (--json too).
  auto [rc5, got] = ctl("passwords get " + uuid + " --reveal");
  EXPECT_EQ(rc5, 0) << got;
  EXPECT_NE(got.find("password: from stdin"), std::string::npos) << got;
  EXPECT_NE(got.find("a note"), std::string::npos) << got;
  auto [hidden_rc, hidden] = ctl("passwords get " + uuid);
  EXPECT_EQ(hidden_rc, 0) << hidden;
  EXPECT_NE(hidden.find("password: (hidden: --reveal prints it)"), std::string::npos) << hidden;
  EXPECT_EQ(hidden.find("from stdin"), std::string::npos) << hidden;
  EXPECT_EQ(hidden.find("a note"), std::string::npos) << hidden;
  auto [json_rc, json] = ctl("--json passwords get " + uuid);
  EXPECT_EQ(json.find("from stdin"), std::string::npos) << json;
  EXPECT_NE(json.find("new.example"), std::string::npos) << json;

  auto [rc6, password] = ctl("passwords generate --length 30 --no-special --exclude abc");
  EXPECT_EQ(rc6, 0) << password;
  ASSERT_GE(password.size(), 31u) << password;
  EXPECT_EQ(password.find_first_of("abc!#%"), std::string::npos) << password;
  auto [rc7, refused] = ctl("passwords generate --length 2");
  EXPECT_NE(rc7, 0) << refused;
  EXPECT_NE(refused.find("length"), std::string::npos) << refused;

  auto [rc8, deleted] = ctl("passwords delete " + uuid);
  EXPECT_EQ(rc8, 0) << deleted;
  EXPECT_EQ(call("GET", "/api/passwords/" + uuid + "/").status, 404);
}

}  // namespace
}  // namespace svc::testing
