// The vault plugin over real HTTP: end-to-end encryption metadata (shape checks, who may set it,
// other accounts), the leased passphrase change, the master key file and its rotation.
#include "harness.h"

#include <Poco/Base64Encoder.h>
#include <Poco/UUIDGenerator.h>

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace svc::testing {
namespace {

std::string b64(std::size_t n, char fill = 'k') {
  std::ostringstream out;
  Poco::Base64Encoder encoder(out);
  encoder.rdbuf()->setLineLength(0);
  encoder << std::string(n, fill);
  encoder.close();
  return out.str();
}
std::string newUuid() {
  return Poco::UUIDGenerator::defaultGenerator().createRandom().toString();
}

std::string setupBody(char fill, const std::string& extra = "") {
  return "{\"salt\":\"" + b64(16, fill) + "\",\"public_key\":\"" + b64(32, fill) +
         "\",\"verifier\":\"" + b64(62, fill) + "\"" + extra + "}";
}

class Vault : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "owner@example.com")->optValue<std::string>("management_key", "");
    other_ =
        operatorLogin(*svcd_, "other@example.com")->optValue<std::string>("management_key", "");
  }

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& key = "") {
    return http(svcd_->port(), method, path, body, bearer(key.empty() ? key_ : key));
  }
  std::string identityKey() {
    auto i = call("POST", "/api/identities/", "{\"name\":\"agent\"}");
    EXPECT_EQ(i.status, 201) << i.body;
    auto k = call("POST", "/api/auth/keys/identity/",
                  "{\"identity\":\"" + i.json()->getValue<std::string>("uuid") + "\"}");
    EXPECT_EQ(k.status, 201) << k.body;
    return k.json()->getValue<std::string>("key");
  }
  std::string keyFile() const { return svcd_->dataDir() + "/vault/master.key"; }
  std::string keyFileText() const {
    std::ifstream in(keyFile());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_, other_;
};

TEST_F(Vault, EncryptionIsSetUpOnceByTheAccountAndReadByEveryKeyOfIt) {
  EXPECT_EQ(call("GET", "/api/encryption/").status, 404);
  const std::string agent = identityKey();
  EXPECT_EQ(call("PUT", "/api/encryption/", setupBody('a'), agent).status, 403);
  auto set = call("PUT", "/api/encryption/", setupBody('a'));
  ASSERT_EQ(set.status, 200) << set.body;
  auto j = set.json();
  EXPECT_EQ(j->getValue<std::string>("public_key"), b64(32, 'a'));
  EXPECT_EQ(j->getObject("kdf")->getValue<std::string>("alg"), "argon2id");
  EXPECT_EQ(j->getObject("kdf")->getValue<int>("t"), 3);
  EXPECT_EQ(j->getObject("kdf")->getValue<int>("m"), 65536);
  EXPECT_EQ(j->getObject("kdf")->getValue<int>("p"), 1);
  EXPECT_TRUE(j->isNull("rekey"));
  auto read = call("GET", "/api/encryption/", "", agent);
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(read.json()->getValue<std::string>("salt"), b64(16, 'a'));
  EXPECT_EQ(call("GET", "/api/encryption/", "", other_).status, 404);
  // Set up: a second PUT would orphan every value sealed to the first key.
  auto again = call("PATCH", "/api/encryption/", setupBody('b'));
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(again.json()->getValue<std::string>("code"), "rekey_required");
}

TEST_F(Vault, BadMetadataIsRefusedNamingEveryFieldAndNothingIsStored) {
  auto bad = call("PUT", "/api/encryption/",
                  "{\"salt\":\"" + b64(15) + "\",\"public_key\":\"not base64!\",\"verifier\":\"" +
                      b64(61) + "\",\"kdf\":{\"t\":2,\"m\":65536,\"p\":1}}");
  ASSERT_EQ(bad.status, 400) << bad.body;
  auto errors = bad.json()->getObject("errors");
  ASSERT_TRUE(errors) << bad.body;
  for (const char* f : {"salt", "public_key", "verifier", "kdf.t"}) {
    EXPECT_TRUE(errors->has(f)) << f << " " << bad.body;
  }
  EXPECT_EQ(call("PUT", "/api/encryption/", "{}").status, 400);
  EXPECT_EQ(call("PUT", "/api/encryption/", "[1]").status, 400);
  EXPECT_EQ(call("GET", "/api/encryption/").status, 404);
  // Stronger parameters are kept.
  auto strong = call("PUT", "/api/encryption/",
                     setupBody('a', ",\"kdf\":{\"alg\":\"argon2id\",\"t\":4,\"m\":262144}"));
  ASSERT_EQ(strong.status, 200) << strong.body;
  EXPECT_EQ(call("GET", "/api/encryption/").json()->getObject("kdf")->getValue<int>("m"), 262144);
}

TEST_F(Vault, APassphraseChangeIsLeasedThenAtomic) {
  ASSERT_EQ(call("PUT", "/api/encryption/", setupBody('a')).status, 200);
  EXPECT_EQ(call("POST", "/api/encryption/rekey/", "{}", identityKey()).status, 403);
  auto lease = call("POST", "/api/encryption/rekey/", "{}");
  ASSERT_EQ(lease.status, 201) << lease.body;
  const std::string token = lease.json()->getValue<std::string>("rekey_token");
  EXPECT_EQ(lease.json()->getArray("records")->size(), 0u);
  EXPECT_FALSE(call("GET", "/api/encryption/").json()->isNull("rekey"));
  // A wrong token changes nothing.
  auto wrong =
      call("PUT", "/api/encryption/", setupBody('b', ",\"rekey_token\":\"" + b64(32, 'z') + "\""));
  EXPECT_EQ(wrong.status, 409) << wrong.body;
  EXPECT_EQ(call("GET", "/api/encryption/").json()->getValue<std::string>("public_key"),
            b64(32, 'a'));
  // A record the vault does not hold is refused, whole.
  auto stray =
      call("PUT", "/api/encryption/",
           setupBody('b', ",\"rekey_token\":\"" + token +
                              "\",\"records\":[{\"holder\":\"secrets\",\"uuid\":\"" + newUuid() +
                              "\",\"fields\":{\"value\":\"e2e::" + b64(60) + "\"}}]"));
  EXPECT_EQ(stray.status, 400) << stray.body;
  auto changed = call("PUT", "/api/encryption/",
                      setupBody('b', ",\"rekey_token\":\"" + token + "\",\"records\":[]"));
  ASSERT_EQ(changed.status, 200) << changed.body;
  EXPECT_EQ(changed.json()->getValue<std::string>("public_key"), b64(32, 'b'));
  EXPECT_TRUE(changed.json()->isNull("rekey"));
  // The lease is spent.
  EXPECT_EQ(
      call("PUT", "/api/encryption/", setupBody('c', ",\"rekey_token\":\"" + token + "\"")).status,
      409);
  // An abandoned change ends without changing anything, by its own token only.
  auto again = call("POST", "/api/encryption/rekey/", "{}");
  ASSERT_EQ(again.status, 201);
  const std::string mine = again.json()->getValue<std::string>("rekey_token");
  EXPECT_EQ(call("DELETE", "/api/encryption/rekey/", "{\"rekey_token\":\"" + mine + "\"}").status,
            204);
  EXPECT_TRUE(call("GET", "/api/encryption/").json()->isNull("rekey"));
}

// DELETE /api/encryption/rekey/ took no token: any client of the account (a page that failed,
// a second svcctl) ended whichever change held the vault, and writes sealed to the old key then
// went in while that change re-sealed everything to a new one.
TEST_F(Vault, OnlyTheLeasesOwnTokenEndsIt) {
  ASSERT_EQ(call("PUT", "/api/encryption/", setupBody('a')).status, 200);
  auto first = call("POST", "/api/encryption/rekey/", "{}");
  ASSERT_EQ(first.status, 201);
  const std::string old_token = first.json()->getValue<std::string>("rekey_token");
  auto lease = call("POST", "/api/encryption/rekey/", "{}");  // takes the first one over
  ASSERT_EQ(lease.status, 201);
  const std::string token = lease.json()->getValue<std::string>("rekey_token");

  auto bare = call("DELETE", "/api/encryption/rekey/");
  EXPECT_EQ(bare.status, 400) << bare.body;
  EXPECT_NE(bare.body.find("rekey_token"), std::string::npos) << bare.body;
  auto replaced =
      call("DELETE", "/api/encryption/rekey/", "{\"rekey_token\":\"" + old_token + "\"}");
  EXPECT_EQ(replaced.status, 409) << replaced.body;
  EXPECT_NE(replaced.body.find("rekey_expired"), std::string::npos) << replaced.body;
  EXPECT_FALSE(call("GET", "/api/encryption/").json()->isNull("rekey")) << "still held";

  // Nor does setting up again without it: another change holds the vault (not "start one").
  auto without = call("PUT", "/api/encryption/", setupBody('b'));
  EXPECT_EQ(without.status, 409) << without.body;
  EXPECT_NE(without.body.find("vault_rekeying"), std::string::npos) << without.body;

  EXPECT_EQ(call("DELETE", "/api/encryption/rekey/", "{\"rekey_token\":\"" + token + "\"}").status,
            204);
  EXPECT_TRUE(call("GET", "/api/encryption/").json()->isNull("rekey"));
  // Ended already: nothing to end.
  EXPECT_EQ(call("DELETE", "/api/encryption/rekey/", "{\"rekey_token\":\"" + token + "\"}").status,
            204);
}

// The key file holds the master key alone: a rotation makes a data key in the database and leaves
// the file as it is (every svcd of the database holds the same copy).
TEST_F(Vault, TheMasterKeyFileIsOwnerOnlyAndRotationLeavesItAlone) {
  struct stat st {};
  ASSERT_EQ(::stat(keyFile().c_str(), &st), 0) << keyFile();
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string before = keyFileText();
  auto admin = [&](const std::string& method, const std::string& path) {
    auto r = http(svcd_->adminPort(), method, path, method == "GET" ? "" : "{}",
                  bearer(svcd_->adminToken()));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  };
  const std::string initial =
      admin("GET", "/admin/vault/keys/")->getValue<std::string>("current_key_id");
  auto first = admin("POST", "/admin/vault/rotate-key/");
  const std::string id = first->getValue<std::string>("key_id");
  EXPECT_NE(id, initial);
  EXPECT_EQ(keyFileText(), before);
  EXPECT_EQ(admin("GET", "/admin/vault/keys/")->getValue<std::string>("current_key_id"), id);
  // The data key current until now stays one rotation, then goes.
  EXPECT_EQ(first->getArray("retired")->size(), 0u);
  auto second = admin("POST", "/admin/vault/rotate-key/");
  ASSERT_EQ(second->getArray("retired")->size(), 1u);
  EXPECT_EQ(second->getArray("retired")->getElement<std::string>(0), initial);
  EXPECT_EQ(admin("GET", "/admin/vault/keys/")->getArray("data_keys")->size(), 2u);
}

TEST_F(Vault, AKeyFileOthersMayReadRefusesStart) {
  svcd_->terminate();
  ::chmod(keyFile().c_str(), 0644);
  Svcd::Options o;
  o.plugins = {"auth", "identities", "vault"};
  o.args = {"--set", "vault.master_key_file=" + keyFile()};
  Svcd second(o);
  EXPECT_NE(second.startExpectingFailure(), 0);
  EXPECT_NE(second.log().find("chmod 600"), std::string::npos) << second.log();
}

}  // namespace
}  // namespace svc::testing
