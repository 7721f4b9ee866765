// SqlDatabase::transaction retries what a retry resolves, from the start and with fresh hooks.
#include "database.h"
#include "database_errors.h"

#include <Poco/Data/DataException.h>
#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <set>

using namespace Poco::Data::Keywords;

namespace svc::kernel {
namespace {

class DatabaseRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Poco::TemporaryFile::tempName();
    db_ = std::make_unique<SqlDatabase>("sqlite:" + dir_ + "/t.db", 4, "off");
    db_->setRetryPolicy(RetryPolicy{5, 1, 4});
    db_->transaction([](Poco::Data::Session& s) { s << "CREATE TABLE t (id INTEGER)", now; });
  }
  void TearDown() override {
    db_.reset();
    Poco::File(dir_).remove(true);
  }
  int rows() {
    Poco::Data::Session s = db_->session();
    int n = 0;
    s << "SELECT COUNT(*) FROM t", into(n), now;
    return n;
  }
  std::string dir_;
  std::unique_ptr<SqlDatabase> db_;
};

const char* kDeadlock =
    "MySQL: [MySQL]: [Comment]: mysql_stmt_execute error [mysql_stmt_error]: Deadlock found when "
    "trying to get lock; try restarting transaction [statement]: UPDATE t SET id = 1";

TEST_F(DatabaseRetryTest, AConflictIsRetriedAndTheWorkAppliesOnce) {
  int attempts = 0, before = 0, after = 0;
  std::set<std::uint64_t> serials;
  db_->transaction([&](Poco::Data::Session& s) {
    ++attempts;
    serials.insert(db_->transactionSerial());
    s << "INSERT INTO t VALUES (1)", now;
    db_->beforeCommit([&](Poco::Data::Session&) { ++before; });
    db_->afterCommit([&] { ++after; });
    if (attempts < 3) throw Poco::Data::DataException(kDeadlock);
  });
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(serials.size(), 3u) << "each attempt is a transaction of its own";
  EXPECT_EQ(rows(), 1) << "the failed attempts were rolled back";
  EXPECT_EQ(before, 1) << "hooks of a failed attempt are dropped";
  EXPECT_EQ(after, 1);
  EXPECT_EQ(db_->retries(), 2u);
  EXPECT_EQ(db_->transactionSerial(), 0u);
}

TEST_F(DatabaseRetryTest, WhenRetriesRunOutTheLastConflictIsThrown) {
  int attempts = 0, after = 0;
  EXPECT_THROW(db_->transaction([&](Poco::Data::Session& s) {
    ++attempts;
    s << "INSERT INTO t VALUES (1)", now;
    db_->afterCommit([&] { ++after; });
    throw Poco::Data::DataException("SQLite: database is locked");
  }),
               Poco::Data::DataException);
  EXPECT_EQ(attempts, 5);
  EXPECT_EQ(rows(), 0);
  EXPECT_EQ(after, 0);
}

TEST_F(DatabaseRetryTest, OtherFailuresAreNotRetried) {
  int attempts = 0;
  EXPECT_THROW(db_->transaction([&](Poco::Data::Session&) {
    ++attempts;
    throw Poco::Data::DataException("Duplicate entry 'x' for key 'PRIMARY'");
  }),
               Poco::Data::DataException);
  EXPECT_EQ(attempts, 1);
  EXPECT_THROW(db_->transaction([&](Poco::Data::Session&) {
    ++attempts;
    throw std::runtime_error("Deadlock found when trying to get lock, in a plugin's words");
  }),
               std::runtime_error);
  EXPECT_EQ(attempts, 2) << "only a database's exception says what the database did";
}

TEST_F(DatabaseRetryTest, AnAfterCommitHookFailingIsNotARetry) {
  int attempts = 0;
  EXPECT_THROW(db_->transaction([&](Poco::Data::Session& s) {
    ++attempts;
    s << "INSERT INTO t VALUES (1)", now;
    db_->afterCommit([] { throw Poco::Data::DataException(kDeadlock); });
  }),
               Poco::Data::DataException);
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(rows(), 1);
}

TEST(DatabaseErrors, ALostDatabaseIsToldFromAConflict) {
  for (const char* lost :
       {"MySQL: [MySQL]: [Comment]: mysql_stmt_prepare error [mysql_stmt_error]: Lost connection "
        "to server during query",
        "Connection to database failed: Can't connect to server on '127.0.0.1' (111)",
        "MySQL server has gone away", "No more sessions available from the session pool"}) {
    EXPECT_TRUE(isDatabaseUnreachableError(lost)) << lost;
    EXPECT_FALSE(isTransientDatabaseError(lost)) << lost;
  }
  EXPECT_TRUE(isTransientDatabaseError("WSREP has not yet prepared node for application use"));
  EXPECT_TRUE(isTransientDatabaseError(
      "WSREP detected deadlock/conflict and aborted the transaction. Try restarting the "
      "transaction"));
  EXPECT_FALSE(isDatabaseUnreachableError("Duplicate entry 'x' for key 'PRIMARY'"));
}

TEST(DatabaseErrors, PausesGrowAndStayUnderTheCap) {
  RetryPolicy policy{6, 8, 40};
  for (int i = 0; i < 200; ++i) {
    EXPECT_LE(policy.pauseMillis(2), 8);
    EXPECT_LE(policy.pauseMillis(3), 16);
    EXPECT_LE(policy.pauseMillis(6), 40);
    EXPECT_GE(policy.pauseMillis(6), 0);
  }
}

}  // namespace
}  // namespace svc::kernel
