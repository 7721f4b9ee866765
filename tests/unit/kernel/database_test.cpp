#include "database.h"

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

using namespace Poco::Data::Keywords;

namespace svc::kernel {
namespace {

class DatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Poco::TemporaryFile::tempName();
    db_ = std::make_unique<SqlDatabase>("sqlite:" + dir_ + "/t.db", 4);
  }
  void TearDown() override {
    db_.reset();
    Poco::File(dir_).remove(true);
  }
  std::string dir_;
  std::unique_ptr<SqlDatabase> db_;
};

TEST_F(DatabaseTest, MigrationsApplyOnceInOrderAndAreRecorded) {
  std::vector<sdk::Migration> steps = {
      sdk::Migration::portable(1, "t", {"CREATE TABLE t (id INT)"}),
      sdk::Migration::portable(2, "u", {"CREATE TABLE u (id INT)"})};
  db_->migrate("p", steps);
  db_->migrate("p", steps);  // nothing to do the second time
  Poco::Data::Session s = db_->session();
  int applied = 0;
  s << "SELECT COUNT(*) FROM svc_migrations WHERE plugin = 'p'", into(applied), now;
  EXPECT_EQ(applied, 2);
}

TEST_F(DatabaseTest, AFailedMigrationRollsBackAndNamesItself) {
  std::vector<sdk::Migration> steps = {
      sdk::Migration::portable(1, "half", {"CREATE TABLE half (id INT)", "NOT SQL AT ALL"})};
  try {
    db_->migrate("p", steps);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("migration 1 (half) failed at statement 2"),
              std::string::npos)
        << e.what();
  }
  Poco::Data::Session s = db_->session();
  int tables = 0;
  s << "SELECT COUNT(*) FROM sqlite_master WHERE name = 'half'", into(tables), now;
  EXPECT_EQ(tables, 0);
}

TEST_F(DatabaseTest, TransactionsCommitRollBackAndDoNotNest) {
  db_->migrate("p", {sdk::Migration::portable(1, "t", {"CREATE TABLE t (id INT)"})});
  db_->transaction([](Poco::Data::Session& s) { s << "INSERT INTO t VALUES (1)", now; });
  EXPECT_THROW(db_->transaction([](Poco::Data::Session& s) {
    s << "INSERT INTO t VALUES (2)", now;
    throw std::runtime_error("changed my mind");
  }),
               std::runtime_error);
  EXPECT_THROW(db_->transaction([this](Poco::Data::Session&) { db_->transaction([](auto&) {}); }),
               std::logic_error);
  Poco::Data::Session s = db_->session();
  int rows = 0;
  s << "SELECT COUNT(*) FROM t", into(rows), now;
  EXPECT_EQ(rows, 1);
  EXPECT_TRUE(db_->ping());
}

}  // namespace
}  // namespace svc::kernel
