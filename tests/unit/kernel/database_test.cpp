#include "database.h"
#include "../test_database.h"
#include "event_log.h"
#include "event_types.h"

#include <svc/sdk/schema.h>

#include <Poco/AutoPtr.h>
#include <Poco/Channel.h>
#include <Poco/Logger.h>
#include <Poco/Message.h>

#ifdef SVC_WITH_MYSQL
#include <Poco/Data/MySQL/Connector.h>
#endif
#include <Poco/Environment.h>
#include <Poco/File.h>
#include <Poco/TemporaryFile.h>
#include <Poco/URI.h>

#include <openssl/rand.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

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

// Every connection of the pool, not only the first: SQLite's synchronous is per connection.
TEST_F(DatabaseTest, SqliteCommitsReachTheDiskUnlessToldOtherwise) {
  auto synchronous = [](SqlDatabase& db) {
    std::vector<Poco::Data::Session> held;
    std::vector<int> values;
    for (int i = 0; i < 3; ++i) {
      held.push_back(db.session());
      int value = -1;
      held.back() << "PRAGMA synchronous", into(value), now;
      values.push_back(value);
    }
    return values;
  };
  EXPECT_EQ(synchronous(*db_), (std::vector<int>{2, 2, 2})) << "FULL by default";
  SqlDatabase fast("sqlite:" + dir_ + "/fast.db", 4, "off");
  EXPECT_EQ(synchronous(fast), (std::vector<int>{0, 0, 0}));
  EXPECT_THROW(SqlDatabase("sqlite:" + dir_ + "/bad.db", 4, "sometimes"), std::runtime_error);
}

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

TEST_F(DatabaseTest, EveryPooledSqliteConnectionGetsTheLargerCacheAndNoMapping) {
  // Four sessions held at once: the pool opens four connections, each set up as it opens.
  std::vector<Poco::Data::Session> held;
  for (int i = 0; i < 4; ++i) held.push_back(db_->session());
  for (auto& s : held) {
    int cache = 0;
    Poco::Int64 mmap = -1, heap_limit = 0;
    s << "PRAGMA cache_size", into(cache), now;
    s << "PRAGMA mmap_size", into(mmap), now;
    s << "PRAGMA soft_heap_limit", into(heap_limit), now;
    EXPECT_EQ(cache, -16384);
    EXPECT_EQ(mmap, 0);  // mapped pages would count in svcd's RSS and follow the file's size
    EXPECT_EQ(heap_limit, 33554432);
  }
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

// Records what is logged through it.
class LogRecorder : public Poco::Channel {
 public:
  void log(const Poco::Message& m) override { texts.push_back(m.getText()); }
  std::vector<std::string> texts;
};

// With the test suites' check on, an event whose object does not fit its type's declaration is
// logged (and stored all the same: the change it reports is made).
TEST_F(DatabaseTest, APublishedObjectThatDoesNotFitItsDeclarationIsLogged) {
  db_->migrate("kernel", eventLogMigrations());
  EventTypeRegistry types;
  types.declare(
      "notes",
      {"note.created", "", {}, sdk::Schema::object().required("id", sdk::Schema::string())});
  EventLog log(*db_, 7);
  log.setEventTypes(&types);
  log.checkObjects(true);
  Poco::AutoPtr<LogRecorder> recorder(new LogRecorder);
  Poco::Logger::get("svcd").setChannel(recorder);
  Poco::JSON::Object::Ptr fits = new Poco::JSON::Object;
  fits->set("id", "n1");
  log.publish("note.created", "acct", "", fits, nullptr);
  EXPECT_TRUE(recorder->texts.empty());
  Poco::JSON::Object::Ptr wrong = new Poco::JSON::Object;
  wrong->set("id", 7);
  wrong->set("title", "x");
  EXPECT_GT(log.publish("note.created", "acct", "", wrong, nullptr).sequence, 0);
  ASSERT_EQ(recorder->texts.size(), 1u);
  EXPECT_NE(recorder->texts[0].find("event_mismatch"), std::string::npos);
  EXPECT_NE(recorder->texts[0].find("object.id"), std::string::npos) << recorder->texts[0];
  EXPECT_NE(recorder->texts[0].find("object.title"), std::string::npos) << recorder->texts[0];
  Poco::Logger::get("svcd").setChannel(nullptr);
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

// A stream that counts what it is sent; a write takes a while, as a send on a busy machine does.
class CountingStream : public sdk::Stream {
 public:
  CountingStream(std::atomic<int>& pings_done, std::vector<int>* seen_at)
      : pings_done_(pings_done), seen_at_(seen_at) {}
  bool respond(const sdk::Response&) override { return true; }
  bool begin(int, const std::string&,
             const std::vector<std::pair<std::string, std::string>>&) override {
    return true;
  }
  bool write(const std::string& data) override {
    const auto until = std::chrono::steady_clock::now() + cost;
    while (std::chrono::steady_clock::now() < until) {
    }
    if (data == ": ping\n\n") {
      ++pings;
      ++pings_done_;
    } else if (seen_at_) {
      seen_at_->push_back(pings_done_.load());
    }
    return true;
  }
  void finish() override {}
  bool isOpen() const override { return true; }
  void onClose(std::function<void()>) override {}
  void expireAfter(std::chrono::milliseconds, std::function<void()>) override {}
  const std::string& requestId() const override { return id_; }
  std::size_t queued() const override { return 0; }
  std::atomic<int> pings{0};
  std::chrono::microseconds cost{20};  ///< What one write takes (busy), set before it is added.

 private:
  std::atomic<int>& pings_done_;
  std::vector<int>* seen_at_;
  std::string id_ = "r";
};

// A ping round over thousands of streams is written a slice at a time, and events published
// meanwhile reach their streams between slices instead of waiting for the whole round.
TEST_F(DatabaseTest, EventsAreDeliveredBetweenTheSlicesOfAPingRound) {
  // Publishes must outpace the round: without fsync they take well under a millisecond, and
  // 100 us a write makes the round last ~300 ms, so a slow disk or a loaded CI machine still
  // commits many events while it runs (with FULL sync, one publish took up to the whole round).
  db_ = std::make_unique<SqlDatabase>("sqlite:" + dir_ + "/fast.db", 4, "off");
  db_->migrate("kernel", eventLogMigrations());
  EventLog log(*db_, 7, 1);
  log.start();
  std::atomic<int> pings_done{0};
  std::vector<int> seen_at;  // written by the event thread only, read after stop()
  std::vector<std::shared_ptr<CountingStream>> idle;
  for (int i = 0; i < 3000; ++i) {
    idle.push_back(std::make_shared<CountingStream>(pings_done, nullptr));
    idle.back()->cost = std::chrono::microseconds(100);
    log.addStream(idle.back(), {"acct", "quiet", {}}, log.newest());
  }
  auto watcher = std::make_shared<CountingStream>(pings_done, &seen_at);
  log.addStream(watcher, {"acct", "busy", {}}, log.newest());
  const int total = 3001;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // Until a round has reached every stream: a round that began while the streams were still
  // being added (a slow machine) has only the first, and the total alone does not say so.
  while ((pings_done.load() < total || watcher->pings.load() < 1) &&
         std::chrono::steady_clock::now() < deadline) {
    log.publish("identity.updated", "acct", "busy", nullptr, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  log.stop();
  ASSERT_GE(pings_done.load(), total);
  for (const auto& s : idle) ASSERT_GE(s->pings.load(), 1);
  EXPECT_GE(watcher->pings.load(), 1);
  // Some event reached the watcher while the round was part way through.
  const bool between = std::any_of(seen_at.begin(), seen_at.end(),
                                   [&](int done) { return done > 0 && done < total; });
  EXPECT_TRUE(between) << seen_at.size() << " events seen";
}

TEST_F(DatabaseTest, APingRoundSlowerThanItsIntervalIsNotOvertakenByTheNext) {
  // 600 streams whose writes take 3 ms: a round lasts 1.8 s, the interval is 1 s. Rounds that
  // overlapped pinged the newest entries first again and again; the first streams never.
  db_->migrate("kernel", eventLogMigrations());
  EventLog log(*db_, 7, 1);
  log.start();
  std::atomic<int> pings_done{0};
  std::vector<std::shared_ptr<CountingStream>> streams;
  for (int i = 0; i < 600; ++i) {
    streams.push_back(std::make_shared<CountingStream>(pings_done, nullptr));
    streams.back()->cost = std::chrono::milliseconds(3);
    log.addStream(streams.back(), {"acct", "", {}}, log.newest());
  }
  // Until every stream has been pinged (a round takes 1.8 s, more on a loaded machine): rounds
  // that overtook each other would leave the first streams unpinged however long it waited.
  const auto never = [&] {
    return std::count_if(streams.begin(), streams.end(),
                         [](const auto& s) { return s->pings.load() == 0; });
  };
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       never() > 0 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  log.stop();
  EXPECT_EQ(never(), 0) << "of 600 streams, after " << pings_done.load() << " pings";
}

TEST(DatabaseErrors, PassingConflictsAreToldFromOtherFailures) {
  EXPECT_TRUE(isTransientDatabaseError(
      "mysql_stmt_error]: Deadlock found when trying to get lock; try restarting transaction"));
  EXPECT_TRUE(isTransientDatabaseError("Lock wait timeout exceeded; try restarting transaction"));
  EXPECT_TRUE(isTransientDatabaseError("SQLite: database is locked"));
  EXPECT_FALSE(isTransientDatabaseError("Duplicate entry 'x' for key 'secrets_identity_key'"));
  EXPECT_FALSE(isTransientDatabaseError("no such table: vault_values"));
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

    // Statements stay prepared on their connection: the server closing it (a restart, a
    // failover, KILL) costs no request once it has been idle a moment; the next statements are
    // prepared again on the new connection, bound values and all.
    int id = 0;
    {
      Poco::Data::Session s = db.session();
      s << "SELECT CONNECTION_ID()", into(id), now;
    }
    other << "KILL " + std::to_string(id), now;
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    try {
      EXPECT_EQ(count(), 2);
    } catch (const Poco::Exception& e) {
      FAIL() << e.displayText();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    db.transaction([](Poco::Data::Session& s) {
      int three = 3;
      s << "INSERT INTO t VALUES (?)", use(three), now;
    });
    EXPECT_EQ(count(), 3);
    // A change with its values in its text (sent as a text query) reports what it changed.
    Poco::Data::Session s = db.session();
    Poco::Data::Statement update(s);
    update << "UPDATE t SET id = id + 10 WHERE id > 1";
    EXPECT_EQ(update.execute(), 2u);
  }
  admin << "DROP DATABASE " + name, now;
}
// A connection lost in the middle of a transaction (the server rolled it back) fails the rest of
// it, even for work that swallows the first error: nothing of it commits, not a statement after
// the loss on a fresh connection either.
TEST(DatabaseMysqlTest, AConnectionLostInATransactionCommitsNothingOfIt) {
  test::TempDir dir;
  test::TestDatabase database("mysql", dir.path);
  if (database.url.empty()) GTEST_SKIP() << "SVC_TEST_MYSQL_URL is not set";
  {
    SqlDatabase db(database.url, 1);
    db.transaction(
        [](Poco::Data::Session& s) { s << "CREATE TABLE t (id INT NOT NULL PRIMARY KEY)", now; });
    EXPECT_ANY_THROW(db.transaction(RetryPolicy{1}, [&](Poco::Data::Session& s) {
      s << "INSERT INTO t VALUES (1)", now;
      Poco::Int64 id = 0;
      s << "SELECT CONNECTION_ID()", into(id), now;
      database.admin() << "KILL CONNECTION " + std::to_string(id), now;
      try {
        s << "INSERT INTO t VALUES (2)", now;
      } catch (const Poco::Exception&) {
        // careless work that goes on
      }
      s << "INSERT INTO t VALUES (3)", now;
    }));
    Poco::Data::Session s = db.session();
    int n = -1;
    s << "SELECT COUNT(*) FROM t", into(n), now;
    EXPECT_EQ(n, 0);
  }
}
#endif

}  // namespace
}  // namespace svc::kernel
