// The webhooks' memory of requests seen: each key once within the window, in the database, so a
// second guard on it (a restart, another svcd) refuses the copy too.
#include "replay_guard.h"

#include "seen_database.h"

#include <svc/sdk/util.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace svc::plugins::sms {
namespace {

TEST(ReplayGuard, AdmitsAKeyOnceThenAgainWhenForgotten) {
  SeenDatabase seen;
  ReplayGuard guard(*seen.db);
  EXPECT_TRUE(guard.admit("a"));
  EXPECT_FALSE(guard.admit("a"));
  EXPECT_TRUE(guard.admit("b"));
  guard.forget("a");
  EXPECT_TRUE(guard.admit("a"));
  EXPECT_FALSE(guard.admit("a"));
}

TEST(ReplayGuard, ASecondGuardOnTheSameDatabaseRemembersToo) {
  SeenDatabase seen;
  ReplayGuard(*seen.db).admit("a");
  ReplayGuard restarted(*seen.db);
  EXPECT_FALSE(restarted.admit("a"));
  EXPECT_TRUE(restarted.admit("b"));
}

TEST(ReplayGuard, ForgetsKeysOlderThanItsWindow) {
  SeenDatabase seen;
  // A window no pause of a loaded machine comes near, passed by moving the guard's clock
  // (sdk::nowMicros) rather than by waiting.
  const std::int64_t window_us = 60LL * 1000000;
  ReplayGuard guard(*seen.db, window_us);
  EXPECT_TRUE(guard.admit("a"));
  EXPECT_FALSE(guard.admit("a"));
  sdk::advanceClockForTesting(window_us + 1000000);
  EXPECT_TRUE(guard.admit("a"));
  EXPECT_FALSE(guard.admit("a"));
}

TEST(ReplayGuard, OfCopiesArrivingAtOnceOneIsAdmitted) {
  SeenDatabase seen;
  ReplayGuard guard(*seen.db);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (guard.admit("same")) ++admitted;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 1);
}

}  // namespace
}  // namespace svc::plugins::sms
