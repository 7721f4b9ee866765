// The vault on several svcd sharing one MariaDB database, each with its own data directory and
// its own copy of the one key file (issue 39): a data key rotated on one is used by the others
// at once, values stored on either open on both, a svcd with another key file refuses to start
// naming it, and the master key is replaced while both serve. Two svcd on one SQLite file are
// not supported: skipped there.
#include "cluster_fixture.h"
#include "harness.h"

#include <Poco/File.h>

#include <gtest/gtest.h>

#include <memory>

namespace svc::testing {
namespace {

class VaultCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (databaseKind() != "mariadb") GTEST_SKIP() << "two svcd on one SQLite file: unsupported";
    a_ = std::make_unique<Svcd>(options());
    ASSERT_TRUE(a_->start()) << a_->log();
    b_ = joining(keyFile(*a_));
    ASSERT_TRUE(b_->start()) << b_->log();
    key_ = operatorLogin(*a_, "owner@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
    auto i = call(*a_, "POST", "/api/identities/", "{\"name\":\"agent\"}");
    ASSERT_EQ(i.status, 201) << i.body;
    identity_ = i.json()->getValue<std::string>("uuid");
  }

  Svcd::Options options() const {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault", "secrets"};
    if (a_) o.db_url = a_->dbUrl();
    return o;
  }
  // Another svcd on the database, with its own data directory and a copy of `key_file`.
  std::unique_ptr<Svcd> joining(const std::string& key_file) {
    auto svcd = std::make_unique<Svcd>(options());
    if (!key_file.empty()) copyKeyFile(key_file, keyFile(*svcd));
    return svcd;
  }
  static std::string keyFile(const Svcd& svcd) { return vaultKeyFile(svcd); }

  HttpReply call(Svcd& at, const std::string& method, const std::string& path,
                 const std::string& body = "") {
    return http(at.port(), method, path, body, bearer(key_));
  }
  HttpReply admin(Svcd& at, const std::string& method, const std::string& path) {
    return http(at.adminPort(), method, path, method == "GET" ? "" : "{}", bearer(at.adminToken()));
  }
  std::string store(Svcd& at, const std::string& name, const std::string& value) {
    auto r = call(at, "POST", "/api/secrets/?identity=" + identity_,
                  "{\"key\":\"" + name + "\",\"value\":\"" + value + "\"}");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? r.json()->getValue<std::string>("uuid") : "";
  }
  std::string read(Svcd& at, const std::string& uuid) {
    auto r = call(at, "GET", "/api/secrets/" + uuid + "/");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.json()->getValue<std::string>("value") : "";
  }

  std::unique_ptr<Svcd> a_, b_;
  std::string key_, identity_;
};

TEST_F(VaultCluster, ARotationOnOneSvcdIsUsedByTheOtherAndValuesOpenOnBoth) {
  const std::string before = store(*a_, "BEFORE", "v-before");
  EXPECT_EQ(read(*b_, before), "v-before");
  auto rotated = admin(*a_, "POST", "/admin/vault/rotate-key/");
  ASSERT_EQ(rotated.status, 200) << rotated.body;
  const std::string key_id = rotated.json()->getValue<std::string>("key_id");
  EXPECT_EQ(rotated.json()->getValue<long>("reencrypted"), 1);
  // B names the new data key at once, without having seen the rotation.
  auto keys = admin(*b_, "GET", "/admin/vault/keys/");
  ASSERT_EQ(keys.status, 200) << keys.body;
  EXPECT_EQ(keys.json()->getValue<std::string>("current_key_id"), key_id);
  EXPECT_TRUE(keys.json()->getValue<bool>("file_holds_master_key"));
  const std::string on_a = store(*a_, "ON_A", "v-a");
  const std::string on_b = store(*b_, "ON_B", "v-b");
  EXPECT_EQ(read(*b_, on_a), "v-a");
  EXPECT_EQ(read(*a_, on_b), "v-b");
  EXPECT_EQ(read(*b_, before), "v-before");
  // And the reverse: rotated on B, stored on B, read on A.
  ASSERT_EQ(admin(*b_, "POST", "/admin/vault/rotate-key/").status, 200);
  const std::string after = store(*b_, "AFTER", "v-after");
  EXPECT_EQ(read(*a_, after), "v-after");
  EXPECT_EQ(read(*a_, on_a), "v-a");
}

TEST_F(VaultCluster, ASvcdWithAnotherKeyFileRefusesToStartNamingIt) {
  auto c = joining("");  // makes a key file of its own
  EXPECT_EQ(c->startExpectingFailure(), 78);
  EXPECT_NE(c->log().find("vault.master_key_file " + keyFile(*c)), std::string::npos) << c->log();
}

TEST_F(VaultCluster, TheMasterKeyIsReplacedWhileBothServe) {
  const std::string old_file = a_->dataDir() + "/old-master.key";
  copyKeyFile(keyFile(*a_), old_file);
  const std::string before = store(*a_, "BEFORE", "v-before");
  auto begun = admin(*a_, "POST", "/admin/vault/master-key/");
  ASSERT_EQ(begun.status, 200) << begun.body;
  const std::string new_file = begun.json()->getValue<std::string>("file");
  const std::string new_id = begun.json()->getValue<std::string>("master_key_id");
  EXPECT_EQ(new_file, keyFile(*a_) + ".new");
  EXPECT_EQ(admin(*b_, "POST", "/admin/vault/master-key/").status, 409);         // one at a time
  EXPECT_EQ(admin(*b_, "POST", "/admin/vault/master-key/finish/").status, 409);  // B: old file
  const std::string during = store(*b_, "DURING", "v-during");
  // The operator copies the new file to every machine; neither svcd restarts.
  copyKeyFile(new_file, keyFile(*a_));
  copyKeyFile(new_file, keyFile(*b_));
  auto keys = admin(*b_, "GET", "/admin/vault/keys/");
  EXPECT_TRUE(keys.json()->getValue<bool>("file_holds_new_master_key")) << keys.body;
  auto finished = admin(*b_, "POST", "/admin/vault/master-key/finish/");
  ASSERT_EQ(finished.status, 200) << finished.body;
  EXPECT_EQ(finished.json()->getValue<std::string>("master_key_id"), new_id);
  ASSERT_EQ(admin(*a_, "POST", "/admin/vault/rotate-key/").status, 200);
  const std::string after = store(*a_, "AFTER", "v-after");
  for (Svcd* at : {a_.get(), b_.get()}) {
    EXPECT_EQ(read(*at, before), "v-before");
    EXPECT_EQ(read(*at, during), "v-during");
    EXPECT_EQ(read(*at, after), "v-after");
  }
  // B restarted on the new file serves; a svcd with the old file is refused, named.
  EXPECT_EQ(b_->terminate(), 0);
  ASSERT_TRUE(b_->start()) << b_->log();
  EXPECT_EQ(read(*b_, after), "v-after");
  auto stale = joining(old_file);
  EXPECT_EQ(stale->startExpectingFailure(), 78);
  EXPECT_NE(stale->log().find("vault.master_key_file " + keyFile(*stale)), std::string::npos)
      << stale->log();
}

}  // namespace
}  // namespace svc::testing
