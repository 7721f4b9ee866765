#include "database.h"
#include "event_log.h"

#ifdef SVC_WITH_MYSQL
#include <Poco/Data/MySQL/Connector.h>
#endif
#include <Poco/Environment.h>
#include <Poco/File.h>
#include <Poco/TemporaryFile.h>
#include <Poco/URI.h>

#include <openssl/rand.h>

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

TEST_F(DatabaseTest, CommitHooksRunAroundTheCommitAndNeverAfterARollback) {
  db_->migrate("p", {sdk::Migration::portable(1, "t", {"CREATE TABLE t (id INT)"})});
  std::vector<std::string> seen;
  EXPECT_EQ(db_->transactionSerial(), 0u);
  std::uint64_t first = 0;
  db_->transaction([&](Poco::Data::Session&) {
    first = db_->transactionSerial();
    db_->beforeCommit([&](Poco::Data::Session& s) {
      s << "INSERT INTO t VALUES (7)", now;  // still inside the transaction
      seen.push_back("before");
    });
    db_->afterCommit([&] { seen.push_back("after"); });
    seen.push_back("work");
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"work", "before", "after"}));
  EXPECT_NE(first, 0u);
  EXPECT_THROW(db_->transaction([&](Poco::Data::Session&) {
    EXPECT_NE(db_->transactionSerial(), first);  // never reused
    db_->beforeCommit([&](Poco::Data::Session&) { seen.push_back("rolled back before"); });
    db_->afterCommit([&] { seen.push_back("rolled back after"); });
    throw std::runtime_error("no");
  }),
               std::runtime_error);
  EXPECT_EQ(seen.size(), 3u);
  db_->afterCommit([&] { seen.push_back("now"); });  // outside a transaction: at once
  EXPECT_EQ(seen.back(), "now");
  EXPECT_THROW(db_->beforeCommit([](Poco::Data::Session&) {}), std::logic_error);
  Poco::Data::Session s = db_->session();
  int rows = 0;
  s << "SELECT COUNT(*) FROM t WHERE id = 7", into(rows), now;
  EXPECT_EQ(rows, 1);
}

// Several events published in one transaction take consecutive numbers, the counter is stored
// once before the commit, and the next transaction goes on from there; a rollback takes none.
TEST_F(DatabaseTest, EventsOfOneTransactionAreNumberedInARow) {
  db_->migrate("kernel", eventLogMigrations());
  EventLog log(*db_, 7);
  std::vector<std::int64_t> seqs;
  db_->transaction([&](Poco::Data::Session& tx) {
    for (int i = 0; i < 3; ++i) {
      seqs.push_back(log.publish("email.received", "acct", "ident", nullptr, &tx).sequence);
    }
  });
  EXPECT_THROW(db_->transaction([&](Poco::Data::Session& tx) {
    log.publish("email.received", "acct", "ident", nullptr, &tx);
    throw std::runtime_error("no");
  }),
               std::runtime_error);
  seqs.push_back(log.publish("email.sent", "acct", "ident", nullptr, nullptr).sequence);
  db_->transaction([&](Poco::Data::Session& tx) {
    seqs.push_back(log.publish("email.sent", "acct", "ident", nullptr, &tx).sequence);
  });
  ASSERT_EQ(seqs.size(), 5u);
  for (std::size_t i = 1; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], seqs[i - 1] + 1) << i;
  Poco::Data::Session s = db_->session();
  Poco::Int64 counter = 0, stored = 0;
  s << "SELECT seq FROM svc_event_counter WHERE name = 'events'", into(counter), now;
  s << "SELECT COUNT(*) FROM svc_events", into(stored), now;
  EXPECT_EQ(counter, seqs.back());
  EXPECT_EQ(stored, 5);
  EXPECT_EQ(log.newest(), seqs.back());
}

#ifdef SVC_WITH_MYSQL
// On MySQL a pooled session that ran a transaction must not keep serving an old snapshot: a row
// another connection commits afterwards is visible to the next read.
TEST(DatabaseMysqlTest, ReadsAfterATransactionSeeLaterCommits) {
  const std::string server = Poco::Environment::get("SVC_TEST_MYSQL_URL", "");
  if (server.empty()) GTEST_SKIP() << "SVC_TEST_MYSQL_URL is not set";
  Poco::URI uri(server);
  const std::string info = uri.getUserInfo();
  const std::string user = info.substr(0, info.find(':')),
                    password = info.substr(info.find(':') + 1);
  const std::string base = "host=" + uri.getHost() + ";port=" + std::to_string(uri.getPort()) +
                           ";user=" + user + ";password=" + password;
  unsigned char r[4];
  RAND_bytes(r, sizeof r);
  const std::string name = "svc_u_" + std::to_string(r[0] * 65536 + r[1] * 256 + r[2]);
  Poco::Data::MySQL::Connector::registerConnector();
  Poco::Data::Session admin("MySQL", base);
  admin << "CREATE DATABASE " + name, now;
  {
    SqlDatabase db(server + "/" + name, 1);  // one pooled session: every read reuses it
    db.transaction([](Poco::Data::Session& s) {
      s << "CREATE TABLE t (id INT NOT NULL PRIMARY KEY)", now;
      s << "INSERT INTO t VALUES (1)", now;
    });
    auto count = [&] {
      Poco::Data::Session s = db.session();
      int n = 0;
      s << "SELECT COUNT(*) FROM t", into(n), now;
      return n;
    };
    EXPECT_EQ(count(), 1);
    Poco::Data::Session other("MySQL", base + ";db=" + name);
    other << "INSERT INTO t VALUES (2)", now;
    EXPECT_EQ(count(), 2);
  }
  admin << "DROP DATABASE " + name, now;
}
#endif

}  // namespace
}  // namespace svc::kernel
