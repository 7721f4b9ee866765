// The vault's key scheme: one master key file, the same on every svcd, wrapping data keys kept in
// the database; rotation seen by every svcd at once; an older install's file keys moved into the
// database; the master key replaced without downtime; a file that does not open the database's
// keys refused at start, named. Several AtRestCipher on one database stand for several svcd, each
// with its own copy of the file.
#include "../../test_database.h"
#include "aead.h"
#include "at_rest.h"
#include "database.h"
#include "key_store.h"
#include "master_keys.h"
#include "vault_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/File.h>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <thread>

namespace svc::plugins::vault {
namespace {

using svc::test::TempDir;
using svc::test::TestDatabase;

TEST(MasterKeys, AFileOthersMayReadALinkOrADamagedFileIsRefused) {
  TempDir dir;
  const std::string path = dir.path + "/master.key";
  MasterKeys::fresh().save(path);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(MasterKeys::read(path));
  ::chmod(path.c_str(), 0644);
  EXPECT_THROW(MasterKeys::read(path), std::runtime_error);
  ::chmod(path.c_str(), 0600);
  ASSERT_EQ(::symlink(path.c_str(), (dir.path + "/link.key").c_str()), 0);
  EXPECT_THROW(MasterKeys::read(dir.path + "/link.key"), std::runtime_error);
  std::ofstream(path) << "k1 not-base64\n";
  EXPECT_THROW(MasterKeys::read(path), std::runtime_error);
  std::ofstream(path) << "# nothing\n";
  EXPECT_THROW(MasterKeys::read(path), std::runtime_error);
}

TEST(Aead, OpensOnlyWithItsKeyAndAssociatedData) {
  const std::string key = randomBytes(32), other = randomBytes(32);
  const std::string sealed = gcmSeal(key, "here", "value");
  EXPECT_EQ(gcmOpen(key, "here", sealed).value_or(""), "value");
  EXPECT_FALSE(gcmOpen(key, "there", sealed));
  EXPECT_FALSE(gcmOpen(other, "here", sealed));
  EXPECT_NE(gcmSeal(key, "here", "value"), sealed);  // a fresh nonce each time
  EXPECT_NE(wrappingKeyOf(key), key);  // the file's bytes never serve as the wrapping key itself
  EXPECT_EQ(wrappingKeyOf(key), wrappingKeyOf(key));
}

class KeyScheme : public ::testing::TestWithParam<std::string> {
 protected:
  KeyScheme() : database_(GetParam(), dir_.path) {
    if (database_.url.empty()) return;
    db_ = std::make_unique<kernel::SqlDatabase>(database_.url, 8, "off");
  }
  void SetUp() override {
    if (!db_) GTEST_SKIP() << "SVC_TEST_MYSQL_URL is not set";
    db_->migrate("vault", VaultStore::migrations());
  }

  // A svcd's key file: its own path ("machine" directory), a copy of `from` when given.
  std::string machine(const std::string& name, const std::string& from = "") {
    const std::string dir = dir_.path + "/" + name;
    Poco::File(dir).createDirectories();
    const std::string path = dir + "/master.key";
    if (!from.empty()) copy(from, path);
    return path;
  }
  static void copy(const std::string& from, const std::string& to) {
    std::ifstream in(from);
    std::ofstream out(to + ".tmp");
    out << in.rdbuf();
    out.close();
    ::chmod((to + ".tmp").c_str(), 0600);
    ASSERT_EQ(::rename((to + ".tmp").c_str(), to.c_str()), 0);
  }
  std::unique_ptr<AtRestCipher> started(const std::string& file) {
    auto c = std::make_unique<AtRestCipher>(file, *db_);
    c->start();
    return c;
  }
  SealedAtRest seal(AtRestCipher& c, const std::string& aad, const std::string& value) {
    SealedAtRest out;
    db_->transaction([&](Poco::Data::Session& tx) { out = c.seal(tx, aad, value); });
    return out;
  }
  std::string startError(const std::string& file) {
    try {
      started(file);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }

  TempDir dir_;
  TestDatabase database_;
  std::unique_ptr<kernel::SqlDatabase> db_;
};

TEST_P(KeyScheme, ARotationOnOneSvcdIsUsedByEveryOtherAtOnceAndOpensEverywhere) {
  const std::string file_a = machine("a");
  auto a = started(file_a);
  EXPECT_TRUE(a->madeFile());
  auto b = started(machine("b", file_a));  // the same file, copied
  EXPECT_FALSE(b->madeFile());
  const auto before = seal(*b, "x", "old");
  const std::string first = a->currentKeyId();
  EXPECT_EQ(before.key_id, first);
  const std::string second = a->rotate();
  EXPECT_NE(second, first);
  // B never saw the new key: it seals under it at once, and opens what A sealed under it.
  const auto on_b = seal(*b, "y", "new on b");
  EXPECT_EQ(on_b.key_id, second);
  EXPECT_EQ(a->open(on_b, "y").value_or(""), "new on b");
  const std::string third = b->rotate();
  const auto on_b2 = seal(*b, "z", "newer");
  EXPECT_EQ(on_b2.key_id, third);
  EXPECT_EQ(a->open(on_b2, "z").value_or(""), "newer");
  EXPECT_EQ(a->open(before, "x").value_or(""), "old");
  EXPECT_FALSE(a->open(before, "elsewhere"));
  EXPECT_FALSE(a->open({"nokey", before.data}, "x"));
  // A fresh svcd (restart) opens every value from the database alone.
  EXPECT_EQ(started(machine("c", file_a))->open(on_b, "y").value_or(""), "new on b");
}

TEST_P(KeyScheme, AFileThatDoesNotOpenTheDatabasesKeysRefusesStartNamingIt) {
  auto a = started(machine("a"));
  const std::string other = machine("other");
  const std::string error = startError(other);
  EXPECT_NE(error.find("vault.master_key_file " + other), std::string::npos) << error;
  EXPECT_NE(error.find("did not exist and was made new"), std::string::npos) << error;
  // The same id with other bytes (a damaged copy) does not open the data keys either.
  std::ifstream in(a->path());
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto line = text.rfind('\n', text.size() - 2) + 1;
  const auto id = text.substr(line, text.find(' ', line) - line);
  const std::string damaged = machine("damaged");
  std::ofstream(damaged) << id << " " << sdk::base64(std::string(32, 'x')) << "\n";
  ::chmod(damaged.c_str(), 0600);
  const std::string error2 = startError(damaged);
  EXPECT_NE(error2.find("vault.master_key_file " + damaged + " does not open"), std::string::npos)
      << error2;
}

TEST_P(KeyScheme, SeveralSvcdStartingAtOnceAgreeOnOneCurrentKey) {
  const std::string file = machine("a");
  MasterKeys::fresh().save(file);
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<AtRestCipher>> ciphers(4);
  std::vector<std::string> errors(4);
  for (int i = 0; i < 4; ++i) {
    const std::string own = machine("m" + std::to_string(i), file);
    threads.emplace_back([&, i, own] {
      try {
        ciphers[i] = started(own);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ciphers[i]) << errors[i];
  for (int i = 1; i < 4; ++i) EXPECT_EQ(ciphers[i]->currentKeyId(), ciphers[0]->currentKeyId());
  EXPECT_EQ(ciphers[0]->status().data_keys.size(), 1u);
}

// An install from before data keys: values sealed straight under the file's keys.
TEST_P(KeyScheme, AnOlderInstallsFileKeysBecomeDataKeysAndItsValuesStayReadable) {
  const std::string file = machine("a");
  const MasterKey k1{"k1", randomBytes(32)}, k2{"k2", randomBytes(32)};
  std::ofstream(file) << "k2 " << sdk::base64(k2.bytes) << "\nk1 " << sdk::base64(k1.bytes) << "\n";
  ::chmod(file.c_str(), 0600);
  auto legacy = [&](const MasterKey& k, const std::string& record) {
    const std::string sealed = sdk::base64(gcmSeal(k.bytes, "aad-" + record, "v-" + record));
    using namespace Poco::Data::Keywords;
    Poco::Data::Session s = db_->session();
    std::string rec = record, id = k.id, data = sealed;
    s << "INSERT INTO vault_values (holder, record, field, account_id, identity_uuid, key_id, "
         "sealed) VALUES ('passwords', ?, 'password', 'acct', 'i', ?, ?)",
        use(rec), use(id), use(data), now;
    return SealedAtRest{k.id, sealed};
  };
  const auto v1 = legacy(k1, "r1"), v2 = legacy(k2, "r2");
  // The file lacking a key values use is refused, named.
  const std::string partial = machine("partial");
  std::ofstream(partial) << "k2 " << sdk::base64(k2.bytes) << "\n";
  ::chmod(partial.c_str(), 0600);
  const std::string error = startError(partial);
  EXPECT_NE(error.find("vault.master_key_file " + partial + " lacks key(s) k1"), std::string::npos)
      << error;
  // Two svcd upgraded at once, then once more: the keys are moved once.
  std::unique_ptr<AtRestCipher> a, b;
  std::thread other([&] { b = started(machine("b", file)); });
  a = started(file);
  other.join();
  ASSERT_TRUE(b);
  started(file);
  EXPECT_EQ(a->open(v1, "aad-r1").value_or(""), "v-r1");
  EXPECT_EQ(b->open(v2, "aad-r2").value_or(""), "v-r2");
  const auto keys = a->status();
  EXPECT_EQ(keys.state.wrap_id, "k2");   // the file's first line wraps
  EXPECT_EQ(keys.data_keys.size(), 3u);  // k1, k2 and a new current one
  EXPECT_NE(keys.state.current_key, "k1");
  EXPECT_NE(keys.state.current_key, "k2");
  // The values' keys are in the database now: a one-line file with the wrapping key suffices.
  const std::string one = machine("one");
  std::ofstream(one) << "k2 " << sdk::base64(k2.bytes) << "\n";
  ::chmod(one.c_str(), 0600);
  EXPECT_EQ(started(one)->open(v1, "aad-r1").value_or(""), "v-r1");
}

TEST_P(KeyScheme, TheMasterKeyIsReplacedWhileEverySvcdServes) {
  const std::string file_a = machine("a");
  auto a = started(file_a);
  const std::string file_b = machine("b", file_a);
  auto b = started(file_b);
  const auto old_value = seal(*a, "x", "before");
  const std::string old_copy = machine("old", file_a);
  const Replacement begun = a->beginReplacement();
  EXPECT_EQ(begun.file, file_a + ".new");
  EXPECT_EQ(begun.data_keys, 1);
  EXPECT_THROW(b->beginReplacement(), sdk::HttpError);   // one at a time
  EXPECT_THROW(b->finishReplacement(), sdk::HttpError);  // b's file is not the new one yet
  // Both files open the keys meanwhile: a svcd restarted on either starts.
  EXPECT_NO_THROW(started(old_copy));
  EXPECT_NO_THROW(started(machine("new", begun.file)));
  // A rotation needs both keys: b lacks the new one, a made it.
  EXPECT_THROW(b->rotate(), sdk::HttpError);
  const std::string rotated = a->rotate();
  const auto during = seal(*b, "y", "during");
  EXPECT_EQ(during.key_id, rotated);
  // The operator copies the new file to every machine; each svcd takes it up as it serves.
  copy(begun.file, file_a);
  copy(begun.file, file_b);
  const Replacement done = b->finishReplacement();
  EXPECT_EQ(done.wrap_id, begun.wrap_id);
  EXPECT_EQ(done.data_keys, 2);
  EXPECT_EQ(a->status().state.wrap_id, begun.wrap_id);
  EXPECT_TRUE(a->status().state.next_wrap_id.empty());
  // Every value opens on both, and on a svcd started afresh with the new file; the old file is
  // refused at start, named.
  for (auto* c : {a.get(), b.get()}) {
    EXPECT_EQ(c->open(old_value, "x").value_or(""), "before");
    EXPECT_EQ(c->open(during, "y").value_or(""), "during");
  }
  auto fresh = started(machine("c", file_b));
  EXPECT_EQ(fresh->open(during, "y").value_or(""), "during");
  const std::string error = startError(old_copy);
  EXPECT_NE(error.find("vault.master_key_file " + old_copy), std::string::npos) << error;
  b->rotate();  // no replacement runs: any svcd rotates again
}

TEST_P(KeyScheme, AReplacementCancelledLeavesTheOldFileAlone) {
  const std::string file_a = machine("a");
  auto a = started(file_a);
  const Replacement begun = a->beginReplacement();
  EXPECT_EQ(a->cancelReplacement(), begun.wrap_id);
  EXPECT_EQ(a->cancelReplacement(), "");
  EXPECT_THROW(a->finishReplacement(), sdk::HttpError);
  const std::string error = startError(machine("new", begun.file));
  EXPECT_NE(error.find("vault.master_key_file"), std::string::npos) << error;
  EXPECT_NO_THROW(started(machine("b", file_a)));
}

TEST_P(KeyScheme, AKeyFileThatVanishesIsNeverRemadeWhileServing) {
  const std::string file = machine("a");
  auto a = started(file);
  const auto sealed = seal(*a, "a", "v");
  Poco::File(file).remove();
  a->rotate();
  EXPECT_EQ(a->open(sealed, "a").value_or(""), "v");
  EXPECT_EQ(a->open(seal(*a, "b", "w"), "b").value_or(""), "w");
  EXPECT_FALSE(Poco::File(file).exists());
}

INSTANTIATE_TEST_SUITE_P(Databases, KeyScheme, ::testing::Values("sqlite", "mysql"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace svc::plugins::vault
