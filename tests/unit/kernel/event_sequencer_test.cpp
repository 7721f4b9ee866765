// The event log numbered after commit (MySQL/MariaDB): a private database on the server
// SVC_TEST_MYSQL_URL names (tools/test.sh starts one), dropped afterwards.
#include "event_sequencer.h"
#include "database.h"
#include "event_log.h"

#include "../test_database.h"

#include <gtest/gtest.h>

#include <thread>

using namespace Poco::Data::Keywords;

namespace svc::kernel {
namespace {

#ifdef SVC_WITH_MYSQL

class EventSequencerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    database_ = std::make_unique<test::TestDatabase>("mysql", dir_.path);
    if (database_->url.empty()) GTEST_SKIP() << "SVC_TEST_MYSQL_URL is not set";
    db_ = std::make_unique<SqlDatabase>(database_->url, 8);
    db_->migrate("kernel", eventLogMigrations());
  }
  void TearDown() override {
    db_.reset();
    database_.reset();
  }
  // The log's sequences in the order of the events' insertion, and how many are unnumbered.
  std::vector<Poco::Int64> numbers(int* unnumbered = nullptr) {
    Poco::Data::Session s = db_->session();
    std::vector<Poco::Int64> seqs;
    s << "SELECT seq FROM svc_events WHERE seq IS NOT NULL ORDER BY row_id", into(seqs), now;
    if (unnumbered) {
      s << "SELECT COUNT(*) FROM svc_events WHERE seq IS NULL", into(*unnumbered), now;
    }
    return seqs;
  }
  void setHolder(const std::string& holder) {
    Poco::Data::Session s = db_->session();
    std::string h = holder;
    s << "UPDATE svc_event_counter SET holder = ?, beat = beat + 1 WHERE name = 'events'", use(h),
        now;
  }

  test::TempDir dir_;
  std::unique_ptr<test::TestDatabase> database_;
  std::unique_ptr<SqlDatabase> db_;
};

// A publishing transaction writes no shared row: its events wait unnumbered until the leader
// numbers them, in the order they were published, going on from the counter.
TEST_F(EventSequencerTest, EventsAreNumberedAfterCommitInTheOrderTheyWerePublished) {
  EventLog log(*db_, 7);  // not started: the test drives the sequencer itself
  db_->transaction([&](Poco::Data::Session& tx) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(log.publish("note.made", "acct-a", "", nullptr, &tx).sequence, 0);
    }
  });
  EXPECT_THROW(db_->transaction([&](Poco::Data::Session& tx) {
    log.publish("note.made", "acct-a", "", nullptr, &tx);
    throw std::runtime_error("no");
  }),
               std::runtime_error);
  log.publish("note.made", "acct-b", "", nullptr, nullptr);
  int waiting = 0;
  EXPECT_TRUE(numbers(&waiting).empty());
  EXPECT_EQ(waiting, 4);

  int calls = 0;
  EventSequencer sequencer(*db_, [&] { ++calls; });
  EXPECT_EQ(sequencer.runOnce(), 4u);
  EXPECT_TRUE(sequencer.leading());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(numbers(&waiting), (std::vector<Poco::Int64>{1, 2, 3, 4}));
  EXPECT_EQ(waiting, 0);
  log.publish("note.made", "acct-a", "", nullptr, nullptr);
  EXPECT_EQ(sequencer.runOnce(), 1u);
  EXPECT_EQ(numbers(), (std::vector<Poco::Int64>{1, 2, 3, 4, 5}));
  EXPECT_EQ(log.newest(), 5);
  const auto read = log.read(3, 10);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].sequence, 4);
  EXPECT_EQ(read[0].account, "acct-b");
  EXPECT_EQ(read[1].sequence, 5);
}

// One svcd numbers at a time. One that stops hands over at once; one that dies is replaced once
// its beat has stood still for the lease, by the replacement's own clock; one replaced while it
// paused numbers nothing more.
TEST_F(EventSequencerTest, OneLeaderAtATimeHandedOverOrTakenOverWhenItsBeatStops) {
  EventLog log(*db_, 7);
  EventSequencer first(*db_, nullptr), second(*db_, nullptr);
  log.publish("note.made", "acct-a", "", nullptr, nullptr);
  EXPECT_EQ(first.runOnce(), 1u);
  log.publish("note.made", "acct-a", "", nullptr, nullptr);
  EXPECT_EQ(second.runOnce(), 0u);
  EXPECT_FALSE(second.leading());
  first.stop();  // never started: stop() releases all the same
  EXPECT_FALSE(first.leading());
  EXPECT_EQ(second.runOnce(), 1u);
  EXPECT_TRUE(second.leading());

  setHolder("a-process-that-died");
  log.publish("note.made", "acct-a", "", nullptr, nullptr);
  EXPECT_EQ(second.runOnce(), 0u) << "a leader that lost the row numbered";
  EXPECT_FALSE(second.leading());
  EXPECT_EQ(first.runOnce(), 0u) << "the dead holder's beat was taken over before the lease";
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(EventSequencer::kLeaseSeconds + 2);
  std::size_t numbered = 0;
  while (numbered == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    numbered = first.runOnce();
  }
  EXPECT_EQ(numbered, 1u);
  EXPECT_EQ(numbers(), (std::vector<Poco::Int64>{1, 2, 3}));
}

// Started as svcd starts them: several logs on one database, publishing from many threads at
// once, each event numbered exactly once, without gaps, and every log's event thread hands each
// of them to its subscribers once, in order.
TEST_F(EventSequencerTest, ManyPublishersThroughSeveralLogsAreNumberedOnceAndHeardInOrder) {
  EventLog a(*db_, 7), b(*db_, 7);
  std::mutex mutex;
  std::vector<std::int64_t> heard_a, heard_b;
  a.subscribe([&](const sdk::Event& e) {
    std::lock_guard lock(mutex);
    heard_a.push_back(e.sequence);
  });
  b.subscribe([&](const sdk::Event& e) {
    std::lock_guard lock(mutex);
    heard_b.push_back(e.sequence);
  });
  a.start();
  b.start();
  constexpr int kThreads = 6, kEach = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      EventLog& log = t % 2 ? a : b;
      for (int i = 0; i < kEach; ++i) {
        db_->transaction([&](Poco::Data::Session& tx) {
          log.publish("note.made", "acct-" + std::to_string(t), "", nullptr, &tx);
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::size_t total = kThreads * kEach;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto heard = [&] {
    std::lock_guard lock(mutex);
    return heard_a.size() >= total && heard_b.size() >= total;
  };
  while (!heard() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  a.stop();
  b.stop();
  std::vector<std::int64_t> expected(total);
  for (std::size_t i = 0; i < total; ++i) expected[i] = static_cast<std::int64_t>(i + 1);
  auto stored = numbers();
  std::sort(stored.begin(), stored.end());
  EXPECT_EQ(std::vector<std::int64_t>(stored.begin(), stored.end()), expected);
  std::lock_guard lock(mutex);
  EXPECT_EQ(heard_a, expected);
  EXPECT_EQ(heard_b, expected);
}

#endif

}  // namespace
}  // namespace svc::kernel
