// The checking threads are shared fairly: one client's messages hold at most `per_client` of
// them, the clients waiting take turns, an IPv6 /64 counts as one client, the queue's bounds
// hold, and stopping answers every message still waiting.
#include "auth/authenticator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace svc::plugins::email {
namespace {

DnsResolver quietDns() {
  return DnsResolver(
      {}, [](const std::string&, int, std::chrono::milliseconds) { return DnsAnswer{}; },
      [] { return DnsResolver::Clock::now(); });
}

// Jobs that wait for release(), recording which client's ran when.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  std::map<std::string, int> running, most;
  std::vector<std::string> started;

  std::function<void()> job(const std::string& client) {
    return [this, client] {
      std::unique_lock lock(mutex);
      started.push_back(client);
      most[client] = std::max(most[client], ++running[client]);
      cv.notify_all();
      cv.wait(lock, [this] { return open; });
      --running[client];
    };
  }
  void waitStarted(std::size_t n) {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return started.size() >= n; }))
        << started.size() << " of " << n;
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    cv.notify_all();
  }
};

// Opens the gate when the test ends, before the checking threads are stopped.
struct Opens {
  Gate& gate;
  ~Opens() { gate.release(); }
};

TEST(AuthenticatorTest, OneClientHoldsAtMostItsShareAndAnotherIsCheckedMeanwhile) {
  DnsResolver dns = quietDns();
  Authenticator::Options o;
  o.threads = 4;
  o.per_client = 2;
  Gate gate;  // outlives the threads running its jobs, however the test ends
  Authenticator checks(o, dns);
  checks.start();
  const Opens opens{gate};  // a failed ASSERT must not leave stop() waiting on a closed gate
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(checks.post("192.0.2.1", gate.job("slow")));
  gate.waitStarted(2);
  // Two threads are free, but not for the slow client: the other client's message goes.
  ASSERT_TRUE(checks.post("198.51.100.7", gate.job("other")));
  gate.waitStarted(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    std::lock_guard lock(gate.mutex);
    EXPECT_EQ(gate.started.size(), 3u);
    EXPECT_EQ(gate.started.back(), "other");
    EXPECT_EQ(gate.running["slow"], 2);
    EXPECT_EQ(gate.most["slow"], 2);
  }
  gate.release();
  checks.stop();  // answers (runs) everything still waiting, no share holding any back
  EXPECT_EQ(gate.started.size(), 7u);
}

TEST(AuthenticatorTest, AnIpv6Slash64IsOneClient) {
  EXPECT_EQ(Authenticator::clientKey("2001:db8:1:2::1"),
            Authenticator::clientKey("2001:db8:1:2:ffff:eeee:dddd:cccc"));
  EXPECT_NE(Authenticator::clientKey("2001:db8:1:2::1"),
            Authenticator::clientKey("2001:db8:1:3::1"));
  EXPECT_NE(Authenticator::clientKey("192.0.2.1"), Authenticator::clientKey("192.0.2.2"));
  EXPECT_EQ(Authenticator::clientKey("192.0.2.1"), "192.0.2.1");

  DnsResolver dns = quietDns();
  Authenticator::Options o;
  o.threads = 4;
  o.per_client = 1;
  Gate gate;  // outlives the threads running its jobs, however the test ends
  Authenticator checks(o, dns);
  checks.start();
  const Opens opens{gate};  // a failed ASSERT must not leave stop() waiting on a closed gate
  ASSERT_TRUE(checks.post("2001:db8:1:2::1", gate.job("a")));
  ASSERT_TRUE(checks.post("2001:db8:1:2::99", gate.job("a")));  // same /64: waits its turn
  gate.waitStarted(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    std::lock_guard lock(gate.mutex);
    EXPECT_EQ(gate.started.size(), 1u);
    EXPECT_EQ(gate.most["a"], 1);
  }
  gate.release();
  checks.stop();
  EXPECT_EQ(gate.started.size(), 2u);
}

TEST(AuthenticatorTest, TheQueueIsBoundedByMessagesAndBytes) {
  DnsResolver dns = quietDns();
  Authenticator::Options o;
  o.threads = 1;
  o.per_client = 1;
  o.max_queued = 3;
  o.max_queued_bytes = 1000;
  Gate gate;  // outlives the threads running its jobs, however the test ends
  Authenticator checks(o, dns);
  checks.start();
  const Opens opens{gate};  // a failed ASSERT must not leave stop() waiting on a closed gate
  ASSERT_TRUE(checks.post("192.0.2.1", gate.job("a"), 10));
  gate.waitStarted(1);  // running: no longer queued
  EXPECT_TRUE(checks.post("192.0.2.2", gate.job("b"), 600));
  EXPECT_FALSE(checks.post("192.0.2.3", gate.job("c"), 600));  // bytes
  EXPECT_TRUE(checks.post("192.0.2.3", gate.job("c"), 300));
  EXPECT_TRUE(checks.post("192.0.2.4", gate.job("d"), 10));
  EXPECT_FALSE(checks.post("192.0.2.5", gate.job("e"), 10));  // messages
  gate.release();
  checks.stop();
  EXPECT_EQ(gate.started.size(), 4u);
  EXPECT_FALSE(checks.post("192.0.2.6", gate.job("f")));  // stopped
}

TEST(AuthenticatorTest, StoppingAnswersOneClientsBacklogOnEveryThread) {
  // Shutting down, svcd answers every waiting session as fast as it can: the per-client share,
  // which would run these eight one at a time, no longer applies. Each job waits (at most 30 s)
  // until two have run at once: under the share the first waits alone until stop() lets a
  // second run beside it, however slow the machine.
  DnsResolver dns = quietDns();
  Authenticator::Options o;
  o.threads = 4;
  o.per_client = 1;
  std::mutex mutex;
  std::condition_variable cv;
  int running = 0, peak = 0;
  Authenticator checks(o, dns);
  checks.start();
  std::atomic<int> done{0};
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(checks.post("192.0.2.1", [&] {
      std::unique_lock lock(mutex);
      peak = std::max(peak, ++running);
      cv.notify_all();
      cv.wait_for(lock, std::chrono::seconds(30), [&] { return peak > 1; });
      --running;
      ++done;
    }));
  }
  checks.stop();
  EXPECT_EQ(done.load(), 8);
  EXPECT_GT(peak, 1) << "one client's backlog ran one job at a time while stopping";
}

TEST(AuthenticatorTest, ClientsTakeTurns) {
  DnsResolver dns = quietDns();
  Authenticator::Options o;
  o.threads = 1;
  o.per_client = 1;
  Gate gate;
  gate.open = true;
  Authenticator checks(o, dns);
  // Queued before any thread runs: a, a, a, b, b then run one at a time in turns.
  checks.start();
  std::mutex hold;
  std::unique_lock block(hold);
  ASSERT_TRUE(checks.post("192.0.2.9", [&] { std::lock_guard wait(hold); }));
  for (const char* c : {"a", "a", "a", "b", "b"}) {
    ASSERT_TRUE(checks.post(std::string("192.0.2.") + (c[0] == 'a' ? "1" : "2"), gate.job(c)));
  }
  block.unlock();
  checks.stop();
  EXPECT_EQ(gate.started, (std::vector<std::string>{"a", "b", "a", "b", "a"}));
}

}  // namespace
}  // namespace svc::plugins::email
