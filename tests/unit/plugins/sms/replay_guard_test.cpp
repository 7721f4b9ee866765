// The webhooks' memory of requests seen: each key once within the window, bounded in count.
#include "replay_guard.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace svc::plugins::sms {
namespace {

TEST(ReplayGuard, AdmitsAKeyOnceThenAgainWhenForgotten) {
  ReplayGuard guard;
  EXPECT_TRUE(guard.admit("a"));
  EXPECT_FALSE(guard.admit("a"));
  EXPECT_TRUE(guard.admit("b"));
  guard.forget("a");
  EXPECT_TRUE(guard.admit("a"));
  EXPECT_FALSE(guard.admit("a"));
}

TEST(ReplayGuard, ForgetsKeysOlderThanItsWindow) {
  ReplayGuard guard(20000);  // 20 ms
  EXPECT_TRUE(guard.admit("a"));
  EXPECT_FALSE(guard.admit("a"));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_TRUE(guard.admit("a"));
}

TEST(ReplayGuard, KeepsAtMostItsCapacityForgettingTheOldestFirst) {
  ReplayGuard guard(3600LL * 1000000, 3);
  for (const char* key : {"a", "b", "c", "d"}) EXPECT_TRUE(guard.admit(key));
  // "a", the oldest, made room for "d"; checking a replay makes no room.
  EXPECT_FALSE(guard.admit("d"));
  EXPECT_FALSE(guard.admit("c"));
  EXPECT_FALSE(guard.admit("b"));
  EXPECT_TRUE(guard.admit("a"));  // "b" goes
  EXPECT_TRUE(guard.admit("b"));  // "c" goes
  // A key forgotten and admitted again counts from its new admission.
  guard.forget("d");
  EXPECT_TRUE(guard.admit("d"));  // there was room
  EXPECT_TRUE(guard.admit("e"));  // "a" goes: the stale entry of the first "d" is passed over
  EXPECT_FALSE(guard.admit("d"));
  EXPECT_FALSE(guard.admit("b"));
  EXPECT_TRUE(guard.admit("a"));
}

}  // namespace
}  // namespace svc::plugins::sms
