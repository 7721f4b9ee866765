// The delivery lease (LeaseTable, LeaseWatch): who may take a webhook's lease is decided by the
// row's (owner, beat) and each svcd's own steady clock, never by comparing wall clocks. Two
// tables on one SQLite database stand for two svcd; their steady clocks are simulated, and the
// wall clock (sdk::nowMicros, which decides only what is due) is moved a minute ahead.
#include "database.h"
#include "lease_table.h"
#include "webhook_store.h"

#include <svc/sdk/util.h>

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::webhooks {
namespace {

using Clock = LeaseTable::Clock;
constexpr std::chrono::seconds kLease{30};

// A steady clock a test moves by hand.
struct FakeClock {
  Clock::time_point at = Clock::time_point{} + std::chrono::hours(1000);
  LeaseTable::Now fn() {
    return [this] { return at; };
  }
};

class WebhookLeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Poco::TemporaryFile::tempName();
    db_ = std::make_unique<kernel::SqlDatabase>("sqlite:" + dir_ + "/t.db", 4, "off");
    db_->migrate("webhooks", WebhookStore::migrations());
  }
  void TearDown() override {
    db_.reset();
    Poco::File(dir_).remove(true);
  }
  // An enabled webhook of `account` with one delivery due now.
  std::string webhookWithDue(const std::string& account) {
    const std::string id = sdk::newUuid(), delivery = sdk::newUuid(), event = sdk::newUuid();
    std::string acct = account;
    db_->transaction([&](Poco::Data::Session& tx) {
      std::string w = id, d = delivery, e = event;
      tx << "INSERT INTO webhooks (id, account_id, identity_uuid, url, event_types, description, "
            "enabled, disabled_reason, secret, previous_secret, previous_until_us, after_seq, "
            "retry_at_us, lease_owner, lease_until_us, created_us, updated_us) VALUES (?, ?, '', "
            "'http://x/', '', '', 1, '', 's', '', 0, 0, 0, '', 0, 0, 0)",
          use(w), use(acct), now;
      tx << "INSERT INTO webhook_deliveries (id, webhook_id, seq, event_id, event_type, payload, "
            "event_created_us, state, attempts, last_status, last_error, first_attempt_us, "
            "last_attempt_us, next_attempt_us, delivered_us, created_us) VALUES (?, ?, 1, ?, "
            "'t', '{}', 0, 'pending', 0, 0, '', 0, 0, 0, 0, 0)",
          use(d), use(w), use(e), now;
    });
    return id;
  }
  std::unique_ptr<LeaseTable> table(FakeClock& clock, int account_workers = 4) {
    return std::make_unique<LeaseTable>(*db_, kLease, account_workers, clock.fn());
  }

  std::string dir_;
  std::unique_ptr<kernel::SqlDatabase> db_;
};

// Moves the wall clock for one test and back.
struct WallClockAhead {
  explicit WallClockAhead(std::chrono::seconds by) : us(by.count() * 1000000LL) {
    sdk::advanceClockForTesting(us);
  }
  ~WallClockAhead() { sdk::advanceClockForTesting(-us); }
  std::int64_t us;
};

TEST(WebhookLeaseWatch, ALeaseLapsesOnlyWhenItsBeatStoodStillLongerThanThePatience) {
  LeaseWatch watch(std::chrono::seconds(10));
  Clock::time_point t = Clock::time_point{} + std::chrono::hours(1);
  const LeaseWatch::Held h{"w", "a", 1};
  EXPECT_TRUE(watch.observe({h}, t).empty());
  EXPECT_TRUE(watch.observe({h}, t + std::chrono::seconds(10)).empty());
  EXPECT_EQ(watch.observe({h}, t + std::chrono::seconds(11)).size(), 1u);
  // A new beat, or a new owner, starts the count again.
  EXPECT_TRUE(watch.observe({{"w", "a", 2}}, t + std::chrono::seconds(30)).empty());
  EXPECT_TRUE(watch.observe({{"w", "b", 2}}, t + std::chrono::seconds(35)).empty());
  EXPECT_TRUE(watch.observe({{"w", "b", 2}}, t + std::chrono::seconds(45)).empty());
  EXPECT_EQ(watch.observe({{"w", "b", 2}}, t + std::chrono::seconds(46)).size(), 1u);
  // Not held at one look: forgotten, counted afresh when held again.
  EXPECT_TRUE(watch.observe({}, t + std::chrono::seconds(50)).empty());
  EXPECT_TRUE(watch.observe({{"w", "b", 2}}, t + std::chrono::seconds(51)).empty());
}

TEST(WebhookLeaseWatch, TheTakerWaitsLongerThanTheHolderMaySendByAnExplicitMargin) {
  // The holder's deadline is the lease from the start of its last renewal; a taker waits the
  // lease plus an explicit margin from after that renewal committed.
  EXPECT_GE(LeaseTable::margin(kLease), std::chrono::seconds(2));
  EXPECT_GE(LeaseTable::margin(std::chrono::seconds(3600)), std::chrono::seconds(36));
}

TEST_F(WebhookLeaseTest, AClockAMinuteAheadDoesNotTakeALeaseAnotherHolds) {
  FakeClock a_clock, b_clock;
  auto a = table(a_clock), b = table(b_clock);
  const std::string hook = webhookWithDue("acct");
  auto held = a->takeOne();
  ASSERT_TRUE(held);
  EXPECT_EQ(held->webhook, hook);
  EXPECT_EQ(held->deadline, a_clock.at + kLease);

  // B's wall clock is a minute ahead (past anything a wall-clock lease would have said): B sees
  // the lease held, and takes nothing.
  WallClockAhead ahead(std::chrono::seconds(60));
  EXPECT_FALSE(b->takeOne());
  // Its own clock moves almost the whole wait: still A's.
  b_clock.at += b->takeoverAfter();
  EXPECT_FALSE(b->takeOne());
  // A renews (its beat moves): B counts again from its next look.
  a_clock.at += std::chrono::seconds(20);
  ASSERT_TRUE(a->renew(*held));
  EXPECT_EQ(held->deadline, a_clock.at + kLease);
  b_clock.at += std::chrono::seconds(1);
  EXPECT_FALSE(b->takeOne());
  b_clock.at += kLease;
  EXPECT_FALSE(b->takeOne()) << "taken before the holder's deadline plus the margin";
  // A stops renewing (paused, cut off): once B saw the same beat for longer than the wait, B
  // takes it, and A's next renewal finds it lost.
  b_clock.at += LeaseTable::margin(kLease) + std::chrono::milliseconds(1);
  auto taken = b->takeOne();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->webhook, hook);
  EXPECT_NE(taken->token, held->token);
  EXPECT_FALSE(a->renew(*held));
  EXPECT_FALSE(a->takeOne()) << "the new holder's lease is fresh in A's eyes";
}

TEST_F(WebhookLeaseTest, AReleasedLeaseIsFreeAtOnce) {
  FakeClock a_clock, b_clock;
  auto a = table(a_clock), b = table(b_clock);
  webhookWithDue("acct");
  auto held = a->takeOne();
  ASSERT_TRUE(held);
  EXPECT_FALSE(b->takeOne());
  a->release(*held);
  EXPECT_TRUE(b->takeOne());  // no clock moved
}

TEST_F(WebhookLeaseTest, AHolderBehindOnTheWallClockKeepsItsLeaseWhileItRenews) {
  // A's wall clock a minute behind B's is the same case seen from the other side: nothing A
  // writes is a time B reads.
  FakeClock a_clock, b_clock;
  auto a = table(a_clock), b = table(b_clock);
  webhookWithDue("acct");
  WallClockAhead behind(std::chrono::seconds(-60));
  auto held = a->takeOne();
  ASSERT_TRUE(held);
  EXPECT_FALSE(b->takeOne());
  for (int i = 0; i < 5; ++i) {  // renewed every 20 s for 100 s of B's clock: never B's
    a_clock.at += std::chrono::seconds(20);
    b_clock.at += std::chrono::seconds(20);
    ASSERT_TRUE(a->renew(*held));
    EXPECT_FALSE(b->takeOne());
  }
}

TEST_F(WebhookLeaseTest, TheAccountCapCountsHeldLeasesAndALapsedOneIsTakenOverWhateverTheCap) {
  FakeClock a_clock, b_clock;
  auto a = table(a_clock, 1), b = table(b_clock, 1);
  const std::string first = webhookWithDue("acct");
  auto held = a->takeOne();
  ASSERT_TRUE(held);
  const std::string second = webhookWithDue("acct");
  const std::string other = webhookWithDue("other");
  // acct holds its one lease: B gets the other account's webhook, not acct's second.
  auto o = b->takeOne();
  ASSERT_TRUE(o);
  EXPECT_EQ(o->webhook, other);
  EXPECT_FALSE(b->takeOne());
  EXPECT_FALSE(b->othersDue(o->webhook));
  // A died holding `first`: B takes it over once lapsed (the cap does not stop that), and o
  // renewed meanwhile stays B's.
  b_clock.at += b->takeoverAfter() + std::chrono::milliseconds(1);
  ASSERT_TRUE(b->renew(*o));
  auto over = b->takeOne();
  ASSERT_TRUE(over);
  EXPECT_EQ(over->webhook, first);
  // Released, acct's share is free: its second webhook is next.
  b->release(*over);
  EXPECT_TRUE(b->othersDue(o->webhook));
  auto next = b->takeOne();
  ASSERT_TRUE(next);
  EXPECT_TRUE(next->webhook == first || next->webhook == second);
  (void)second;
}

}  // namespace
}  // namespace svc::plugins::webhooks
