// The vault's core: master keys, encryption at rest, the end-to-end rule, and the Vault service
// on a real SQLite database.
#include "../../test_database.h"
#include "at_rest.h"
#include "database.h"
#include "e2e_rule.h"
#include "encryption_shapes.h"
#include "rotation.h"
#include "vault_service.h"
#include "vault_store.h"

#include <svc/sdk/util.h>

#include <Poco/Data/MySQL/Connector.h>
#include <Poco/Environment.h>
#include <Poco/File.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Logger.h>
#include <Poco/TemporaryFile.h>
#include <Poco/URI.h>

#include <openssl/rand.h>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <memory>

namespace svc::plugins::vault {
namespace {

using svc::test::TempDir;
using svc::test::TestDatabase;

// A sealed box's shape: `e2e::` and base64 of at least 48 bytes.
std::string sealedLooking(std::size_t bytes = 60) {
  return std::string(sdk::kSealedValuePrefix) + sdk::base64(std::string(bytes, 'x'));
}

TEST(E2eRule, SealedValuesHaveTheirShape) {
  EXPECT_TRUE(isSealedValue(sealedLooking()));
  EXPECT_TRUE(isSealedValue(sealedLooking(48)));
  EXPECT_FALSE(isSealedValue(sealedLooking(47)));  // shorter than a sealed box's overhead
  EXPECT_FALSE(isSealedValue("e2e::"));
  EXPECT_FALSE(isSealedValue("hunter2"));
  EXPECT_FALSE(isSealedValue(sealedLooking() + "\n"));
  std::string unpadded = sealedLooking(49);
  while (unpadded.back() == '=') unpadded.pop_back();
  EXPECT_FALSE(isSealedValue(unpadded));
  std::string url_safe = sealedLooking(63);
  url_safe[10] = '-';
  EXPECT_FALSE(isSealedValue(url_safe));
}

TEST(E2eRule, PlaintextOnlyWithoutEncryptionAndSealedOnlyWithIt) {
  EXPECT_FALSE(protectedValueError("hunter2", false));
  EXPECT_TRUE(protectedValueError("hunter2", true));
  EXPECT_FALSE(protectedValueError(sealedLooking(), true));
  EXPECT_TRUE(protectedValueError(sealedLooking(), false));
  EXPECT_TRUE(protectedValueError("e2e::garbage", true));
  EXPECT_FALSE(protectedValueError("", true));
  EXPECT_FALSE(protectedValueError("", false));
}

sdk::Request jsonRequest(const std::string& body) {
  sdk::Request r;
  r.body = body;
  r.json = Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
  return r;
}

std::string b64(std::size_t n) {
  return sdk::base64(std::string(n, 'k'));
}

// The declaration's check, as the kernel makes it before the handler runs, then the reader's.
EncryptionSetup checkedSetup(const std::string& body) {
  const sdk::Request r = jsonRequest(body);
  sdk::FieldErrors errors;
  encryptionInputSchema().validate(r.json, "", errors);
  errors.throwIfAny();
  return parseEncryptionSetup(r);
}

TEST(E2eRule, EncryptionSetupIsCheckedForShapeAndEveryBadFieldIsNamed) {
  const std::string good = "{\"salt\":\"" + b64(16) + "\",\"public_key\":\"" + b64(32) +
                           "\",\"verifier\":\"" + b64(62) + "\"";
  const auto setup = checkedSetup(good + "}");
  EXPECT_EQ(setup.t, 3);
  EXPECT_EQ(setup.m, 65536);
  EXPECT_EQ(setup.p, 1);
  const auto stronger =
      checkedSetup(good + ",\"kdf\":{\"alg\":\"argon2id\",\"t\":4,\"m\":131072}}");
  EXPECT_EQ(stronger.t, 4);
  EXPECT_EQ(stronger.m, 131072);
  try {
    checkedSetup("{\"salt\":\"" + b64(15) +
                 "\",\"public_key\":7,"
                 "\"kdf\":{\"t\":2,\"m\":1024,\"p\":2,\"alg\":\"scrypt\"}}");
    FAIL() << "accepted";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    for (const char* f : {"salt", "public_key", "verifier", "kdf.t", "kdf.m", "kdf.p", "kdf.alg"}) {
      EXPECT_EQ(e.errors().count(f), 1u) << f;
    }
  }
  EXPECT_THROW(checkedSetup(good + ",\"kdf\":[1]}"), sdk::HttpError);
  // Base64 has one spelling: unused bits set, or no padding, is not it.
  std::string loose = b64(16);
  loose[21] = 'B';
  EXPECT_THROW(checkedSetup("{\"salt\":\"" + loose + "\"" + good.substr(good.find(",")) + "}"),
               sdk::HttpError);
  EXPECT_THROW(checkedSetup("{\"salt\":\"" + b64(16).substr(0, 22) + "\"" +
                            good.substr(good.find(",")) + "}"),
               sdk::HttpError);
}

// The service over a real database: SQLite, and MariaDB when the test run has one.
class VaultServiceTest : public ::testing::TestWithParam<std::string> {
 protected:
  VaultServiceTest() : database_(GetParam(), dir_.path) {
    if (database_.url.empty()) return;
    db_ = std::make_unique<kernel::SqlDatabase>(database_.url, 4, "off");
    cipher_ = std::make_unique<AtRestCipher>(dir_.path + "/master.key", *db_);
    store_ = std::make_unique<VaultStore>(*db_);
    service_ = std::make_unique<VaultService>(*store_, *cipher_, Poco::Logger::get("vault-test"));
  }
  void SetUp() override {
    if (!db_) GTEST_SKIP() << "SVC_TEST_MYSQL_URL is not set";
    db_->migrate("vault", VaultStore::migrations());
    cipher_->start();
  }

  void put(const std::string& record, sdk::ProtectedFields fields,
           const std::string& account = "acct", const std::string& sealed_to = "") {
    db_->transaction([&](Poco::Data::Session& tx) {
      service_->put(tx, {account, "ident", "passwords", record, std::move(fields), sealed_to});
    });
  }
  sdk::ProtectedFields get(const std::string& record) {
    Poco::Data::Session s = db_->session();
    return service_->get(s, "acct", "passwords", {record})[record];
  }
  void setUpEndToEnd() {
    db_->transaction([&](Poco::Data::Session& tx) {
      AccountRow a;
      a.account_id = "acct";
      a.public_key = b64(32);
      store_->saveAccount(tx, a);
    });
  }
  std::string storedSealed(const std::string& record, const std::string& field) {
    Poco::Data::Session s = db_->session();
    for (const auto& v : store_->values(s, "acct", "passwords", {record})) {
      if (v.field == field) return v.sealed;
    }
    return "";
  }

  TempDir dir_;
  TestDatabase database_;
  std::unique_ptr<kernel::SqlDatabase> db_;
  std::unique_ptr<AtRestCipher> cipher_;
  std::unique_ptr<VaultStore> store_;
  std::unique_ptr<VaultService> service_;
  const std::string r1_ = sdk::newUuid(), r2_ = sdk::newUuid();
};

TEST_P(VaultServiceTest, ValuesComeBackAsSentAndAreStoredEncrypted) {
  put(r1_, {{"password", "hunter2"}, {"notes", "the blue one"}});
  EXPECT_EQ(get(r1_), (sdk::ProtectedFields{{"password", "hunter2"}, {"notes", "the blue one"}}));
  EXPECT_EQ(storedSealed(r1_, "password").find("hunter2"), std::string::npos);
  // A long value (read in pieces on MariaDB) comes back whole.
  std::string long_value;
  for (int i = 0; long_value.size() < 70000; ++i) long_value += std::to_string(i) + ",";
  put(r2_, {{"notes", long_value}});
  EXPECT_EQ(get(r2_)["notes"], long_value);
  put(r1_, {{"notes", ""}});  // "" clears one field, the others stay
  EXPECT_EQ(get(r1_), (sdk::ProtectedFields{{"password", "hunter2"}}));
  db_->transaction([&](Poco::Data::Session& tx) { service_->erase(tx, "acct", "passwords", r1_); });
  EXPECT_TRUE(get(r1_).empty());
  EXPECT_FALSE(service_->endToEnd("acct"));
}

TEST_P(VaultServiceTest, TheEndToEndRuleNamesEveryRefusedFieldAndStoresNothing) {
  try {
    put(r1_, {{"password", sealedLooking()}});
    FAIL() << "a sealed value was accepted before encryption was set up";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
  }
  setUpEndToEnd();
  EXPECT_TRUE(service_->endToEnd("acct"));
  EXPECT_FALSE(service_->endToEnd("other"));
  try {
    put(r1_, {{"password", "hunter2"}, {"username", "bob"}, {"notes", sealedLooking()}});
    FAIL() << "plaintext was accepted";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.errors().size(), 2u);
    EXPECT_EQ(e.errors().count("password"), 1u);
    EXPECT_EQ(e.errors().count("username"), 1u);
  }
  EXPECT_TRUE(get(r1_).empty());
  put(r1_, {{"password", sealedLooking()}});
  EXPECT_EQ(get(r1_)["password"], sealedLooking());
  put(r2_, {{"password", "plain"}}, "other");  // another account keeps its own rule
}

// A write that names the key it sealed to is stored only while that is the account's key: a
// page unlocked before a passphrase change elsewhere must not store values sealed to the old one.
TEST_P(VaultServiceTest, AWriteSealedToAKeyThatIsNoLongerTheAccountsIsRefused) {
  try {
    put(r1_, {{"password", "plain"}}, "acct", b64(32));
    FAIL() << "a write sealed to a key was stored in an account without one";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 409);
    EXPECT_EQ(e.code(), "e2e_key_changed");
  }
  setUpEndToEnd();  // public key b64(32)
  put(r1_, {{"password", sealedLooking()}}, "acct", b64(32));
  try {
    put(r1_, {{"password", sealedLooking()}, {"notes", ""}}, "acct",
        sdk::base64(std::string(32, 'o')));
    FAIL() << "a value sealed to an old key was stored";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 409);
    EXPECT_EQ(e.code(), "e2e_key_changed");
    EXPECT_NE(std::string(e.what()).find("Unlock the vault again"), std::string::npos) << e.what();
  }
  EXPECT_EQ(get(r1_)["password"], sealedLooking());
  put(r2_, {{"password", sealedLooking()}});  // a client that does not say is not refused
}

TEST_P(VaultServiceTest, APassphraseChangeHoldsEveryWriteWith409) {
  put(r1_, {{"password", "a"}});
  db_->transaction([&](Poco::Data::Session& tx) {
    AccountRow a;
    a.account_id = "acct";
    a.rekey_token_hash = "x";
    a.rekey_expires_us = sdk::nowMicros() + 60000000;
    store_->saveAccount(tx, a);
  });
  for (int i = 0; i < 2; ++i) {
    try {
      if (i == 0)
        put(r1_, {{"password", "b"}});
      else
        db_->transaction(
            [&](Poco::Data::Session& tx) { service_->erase(tx, "acct", "passwords", r1_); });
      FAIL() << "a write went through a passphrase change";
    } catch (const sdk::HttpError& e) {
      EXPECT_EQ(e.status(), 409);
      EXPECT_EQ(e.code(), "vault_rekeying");
    }
  }
  EXPECT_EQ(get(r1_)["password"], "a");
}

TEST_P(VaultServiceTest, ADamagedOrMovedValueIsAnErrorNeverGarbage) {
  put(r1_, {{"password", "hunter2"}});
  put(r2_, {{"password", "other"}});
  {
    Poco::Data::Session s = db_->session();
    std::string moved = storedSealed(r1_, "password");
    std::string target = r2_;
    using namespace Poco::Data::Keywords;
    s << "UPDATE vault_values SET sealed = ? WHERE record = ?", use(moved), use(target), now;
  }
  Poco::Data::Session s = db_->session();
  EXPECT_THROW(service_->get(s, "acct", "passwords", {r2_}), std::runtime_error);
  EXPECT_EQ(get(r1_)["password"], "hunter2");
}

TEST_P(VaultServiceTest, AFetchedRecordOpensUntilAPassphraseChangeOrKeyChangeMakesItStale) {
  put(r1_, {{"password", "hunter2"}, {"notes", "n"}});
  auto fetched = [&] {
    Poco::Data::Session s = db_->session();
    return service_->fetch(s, "acct", "passwords", {r1_, r2_});
  };
  auto stored = fetched();
  ASSERT_EQ(stored.size(), 2u) << "every record asked for, with or without values";
  EXPECT_TRUE(stored[r2_].fields.empty());
  for (const auto& f : stored[r1_].fields) {
    EXPECT_EQ(f.sealed.find("hunter2"), std::string::npos) << "kept encrypted";
  }
  const sdk::ProtectedFields want{{"password", "hunter2"}, {"notes", "n"}};
  EXPECT_EQ(service_->open(stored[r1_]), std::optional<sdk::ProtectedFields>(want));
  EXPECT_EQ(service_->open(stored[r1_]), std::optional<sdk::ProtectedFields>(want));
  service_->invalidate("other");  // another account's passphrase change
  EXPECT_EQ(service_->open(stored[r1_]), std::optional<sdk::ProtectedFields>(want));
  service_->invalidate("acct");  // its own, here or (its event) in another svcd
  EXPECT_FALSE(service_->open(stored[r1_]));
  stored = fetched();
  EXPECT_EQ(service_->open(stored[r1_]), std::optional<sdk::ProtectedFields>(want));
  cipher_->rotate();  // the keys changed (here, or another svcd's rotation noticed)
  EXPECT_FALSE(service_->open(stored[r1_]));
  // A damaged value fetched now is an error, never garbage or "stale".
  stored = fetched();
  stored[r1_].fields[0].sealed[20] ^= 1;
  EXPECT_THROW(service_->open(stored[r1_]), std::runtime_error);
}

TEST_P(VaultServiceTest, AnotherAccountNeverSeesOrReplacesARecordsValues) {
  put(r1_, {{"password", "mine"}});
  Poco::Data::Session s = db_->session();
  EXPECT_TRUE(service_->get(s, "other", "passwords", {r1_}).empty());
  put(r1_, {{"password", "theirs"}}, "other");  // a holder bug naming another account's record
  EXPECT_EQ(get(r1_)["password"], "mine");
  // Upper-case ids are the same record.
  std::string upper = r1_;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(service_->get(s, "acct", "passwords", {upper})[upper]["password"], "mine");
}

TEST_P(VaultServiceTest, RotationMovesEveryValueAndRetiresKeysOneRotationLater) {
  for (int i = 0; i < 250; ++i) {
    put(sdk::newUuid(), {{"password", "p" + std::to_string(i)}});
  }
  put(r1_, {{"password", "hunter2"}});
  const std::string old_key = cipher_->currentKeyId();
  Rotation rotation(*store_, *service_, *cipher_, 0);
  const RotationResult first = rotation.run();
  EXPECT_EQ(first.reencrypted, 251);
  EXPECT_EQ(first.failed, 0);
  EXPECT_TRUE(first.retired.empty());  // kept one rotation, for writes committing late
  EXPECT_EQ(get(r1_)["password"], "hunter2");
  {
    Poco::Data::Session s = db_->session();
    EXPECT_EQ(store_->keyIdsInUse(s), std::vector<std::string>{first.key_id});
  }
  const RotationResult second = rotation.run();
  EXPECT_EQ(second.reencrypted, 251);
  EXPECT_EQ(second.retired, std::vector<std::string>{old_key});
  EXPECT_EQ(get(r1_)["password"], "hunter2");
  auto kept = cipher_->status().data_keys;
  std::vector<std::string> want{second.key_id, first.key_id};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(kept, want);
}

TEST_P(VaultServiceTest, ARotationThatMeetsANewerKeyStops) {
  put(r1_, {{"password", "x"}});
  AtRestCipher other(dir_.path + "/master.key", *db_);
  other.start();
  other.rotate();  // another svcd's rotation: this one uses its key at once
  EXPECT_EQ(cipher_->currentKeyId(), other.currentKeyId());
  Rotation rotation(*store_, *service_, *cipher_, 0);
  // This process's rotation makes a key after the other's, so it is not superseded.
  EXPECT_NO_THROW(rotation.run());
}

INSTANTIATE_TEST_SUITE_P(Databases, VaultServiceTest, ::testing::Values("sqlite", "mysql"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace svc::plugins::vault
