// The webhooks plugin's core: Standard Webhooks signatures (the specification's published test
// vector), the retry schedule, the public-address rule for target URLs (the SDK's, shared with
// voice agents), which events a webhook wants and what a delivery carries.
#include "delivery_workers.h"
#include "fan_out.h"
#include "replay_gate.h"
#include "retry_policy.h"
#include "sender.h"
#include "signature.h"
#include "watchdog.h"
#include "webhook_store.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Parser.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/StreamSocket.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace svc::plugins::webhooks {
namespace {

// From the Standard Webhooks specification's test vectors (standard-webhooks/spec).
TEST(WebhookSignature, SignsTheSpecificationsTestVector) {
  auto key = secretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  ASSERT_TRUE(key);
  EXPECT_EQ(sign(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSignature, RotationSignsWithBothSecretsSpaceSeparated) {
  const std::string a = newSecret(), b = newSecret();
  const std::string header = signatureHeader({a, b}, "id", 10, "{}");
  EXPECT_EQ(header,
            sign(*secretKey(a), "id", 10, "{}") + " " + sign(*secretKey(b), "id", 10, "{}"));
  EXPECT_EQ(signatureHeader({a}, "id", 10, "{}"), sign(*secretKey(a), "id", 10, "{}"));
}

TEST(WebhookSignature, SecretsAreWhsecAndThirtyTwoRandomBytes) {
  const std::string s = newSecret();
  ASSERT_EQ(s.rfind("whsec_", 0), 0u);
  EXPECT_EQ(secretKey(s)->size(), 32u);
  EXPECT_NE(s, newSecret());
  EXPECT_FALSE(secretKey("whsec_c2hvcnQ="));  // 5 bytes
  EXPECT_FALSE(secretKey("whsec_not base64!"));
}

TEST(WebhookRetries, DelaysDoubleWithJitterUpToTheCap) {
  const RetryPolicy p(5000000, 86400LL * 1000000);
  EXPECT_EQ(p.delay(1, 0.999999), 4999998);  // just under the base
  EXPECT_EQ(p.delay(1, 0.0), 3750000);       // three quarters of it
  EXPECT_EQ(p.delay(2, 0.0), 7500000);
  EXPECT_EQ(p.delay(3, 0.0), 15000000);
  EXPECT_EQ(p.cap(), 3600LL * 1000000);  // an hour
  EXPECT_LE(p.delay(40, 0.999999), p.cap());
  EXPECT_GE(p.delay(40, 0.0), p.cap() * 3 / 4);
  // Over 24 hours: about 30 attempts, never more than an hour apart.
  std::int64_t t = 0;
  int attempts = 1;
  while (!p.givesUp(0, t)) t += p.delay(attempts++, 0.5);
  EXPECT_GT(attempts, 20);
  EXPECT_LT(attempts, 40);
}

TEST(WebhookRetries, GivesUpOnceTheWindowHasPassed) {
  const RetryPolicy p(1000, 1000000);
  EXPECT_FALSE(p.givesUp(100, 999999));
  EXPECT_TRUE(p.givesUp(100, 1000100));
}

TEST(WebhookUrls, InternalAddressesAreRefusedUnlessAllowed) {
  using Poco::Net::IPAddress;
  for (const char* internal :
       {"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.1.1", "100.64.0.1",
        "0.0.0.0", "::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "224.0.0.1"}) {
    EXPECT_TRUE(sdk::isInternalAddress(IPAddress(internal))) << internal;
  }
  for (const char* outside : {"8.8.8.8", "1.1.1.1", "2606:4700::1111", "100.128.0.1"}) {
    EXPECT_FALSE(sdk::isInternalAddress(IPAddress(outside))) << outside;
  }
  auto refusal = [](const std::string& url, bool allow = false) -> std::string {
    try {
      sdk::checkedPublicUrl(url, "url", allow);
      return "";
    } catch (const sdk::HttpError& e) {
      EXPECT_EQ(e.status(), 400);
      return e.errors().count("url") ? e.errors().at("url").front() : "?";
    }
  };
  EXPECT_EQ(refusal("https://8.8.8.8/hook"), "");
  EXPECT_NE(refusal("http://127.0.0.1:9/hook").find("private"), std::string::npos);
  EXPECT_NE(refusal("http://[::1]/hook").find("private"), std::string::npos);
  EXPECT_NE(refusal("http://10.0.0.1/").find("private"), std::string::npos);
  EXPECT_EQ(refusal("http://127.0.0.1:9/hook", true), "");
  // The key that allows them, when the caller names one, is named in the refusal.
  try {
    sdk::checkedPublicUrl("http://127.0.0.1:9/hook", "url", false, "webhooks.allow_private_urls");
    ADD_FAILURE() << "accepted";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.errors().at("url").front(),
              "must not point at a loopback, private or link-local address (an operator may "
              "allow such URLs on a test server with webhooks.allow_private_urls=true)");
  }
  EXPECT_NE(refusal("ftp://8.8.8.8/").find("http"), std::string::npos);
  EXPECT_NE(refusal("https://user:pw@8.8.8.8/").find("credentials"), std::string::npos);
  EXPECT_NE(refusal("https://8.8.8.8/#x").find("fragment"), std::string::npos);
  EXPECT_NE(refusal("/relative").find("absolute"), std::string::npos);
  EXPECT_NE(refusal("https://no-such-host.invalid/").find("resolve"), std::string::npos);
  EXPECT_NE(refusal("https://8.8.8.8/" + std::string(2100, 'a')).find("2048"), std::string::npos);
}

TEST(WebhookUrls, TheSenderRefusesToConnectToAnInternalAddress) {
  Watchdog watchdog;
  Sender sender(false, std::chrono::milliseconds(500), watchdog);
  const SendResult r = sender.post("http://127.0.0.1:9/hook", {}, "{}");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("private"), std::string::npos) << r.error;
}

// A read that would wait for its own (long) timeout returns once the attempt's deadline passes.
TEST(WebhookWatchdog, ShutsASocketDownAtItsDeadline) {
  Poco::Net::ServerSocket server(Poco::Net::SocketAddress("127.0.0.1", 0));
  Poco::Net::StreamSocket client(server.address());
  Poco::Net::StreamSocket peer = server.acceptConnection();  // never writes
  client.setReceiveTimeout(Poco::Timespan(30, 0));
  Watchdog watchdog;
  const auto start = Watchdog::Clock::now();
  const auto token = watchdog.arm(client.impl()->sockfd(), start + std::chrono::milliseconds(200));
  char byte = 0;
  EXPECT_EQ(client.receiveBytes(&byte, 1), 0);  // the end, not 30 s of waiting
  EXPECT_LT(Watchdog::Clock::now() - start, std::chrono::seconds(10));
  EXPECT_GE(Watchdog::Clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_TRUE(watchdog.disarm(token));
  // Disarmed in time, a socket is left alone; after stop(), one armed is cut at once.
  Poco::Net::StreamSocket other(server.address());
  EXPECT_FALSE(watchdog.disarm(
      watchdog.arm(other.impl()->sockfd(), Watchdog::Clock::now() + std::chrono::hours(1))));
  watchdog.stop();
  const auto cut =
      watchdog.arm(other.impl()->sockfd(), Watchdog::Clock::now() + std::chrono::hours(1));
  EXPECT_EQ(other.receiveBytes(&byte, 1), 0);
  EXPECT_TRUE(watchdog.disarm(cut));
}

TEST(WebhookEvents, CarryTheUrlsSchemeAndHostOnly) {
  WebhookRow w;
  w.id = sdk::newUuid();
  w.url = "https://hooks.slack.com/services/T0/B0/tok3n?x=1";
  auto o = WebhookStore::eventJson(w);
  EXPECT_FALSE(o->has("url"));
  EXPECT_EQ(o->getValue<std::string>("url_host"), "https://hooks.slack.com");
  w.url = "http://[2001:db8::1]:8080/a?token=t";
  EXPECT_EQ(WebhookStore::eventJson(w)->getValue<std::string>("url_host"),
            "http://[2001:db8::1]:8080");
  EXPECT_EQ(WebhookStore::json(w)->getValue<std::string>("url"), w.url);
}

sdk::Event event(const std::string& type, const std::string& account, const std::string& identity,
                 std::int64_t seq) {
  sdk::Event e;
  e.sequence = seq;
  e.id = sdk::newUuid();
  e.type = type;
  e.created_us = 1764000000000000;
  e.account = account;
  e.identity = identity;
  e.object = new Poco::JSON::Object;
  e.object->set("uuid", "x\"y");
  return e;
}

TEST(WebhookFanOut, AWebhookWantsItsAccountsOrIdentitysEventsOfItsTypesAfterItWasMade) {
  WebhookRow w;
  w.account_id = "acct";
  w.after_seq = 10;
  EXPECT_TRUE(matches(w, event("contact.created", "acct", "", 11)));
  EXPECT_TRUE(matches(w, event("contact.created", "acct", "idA", 11)));
  EXPECT_FALSE(matches(w, event("contact.created", "other", "", 11)));
  EXPECT_FALSE(matches(w, event("contact.created", "acct", "", 10)));  // before it was made
  w.event_types = {"email.received"};
  EXPECT_FALSE(matches(w, event("contact.created", "acct", "", 11)));
  EXPECT_TRUE(matches(w, event("email.received", "acct", "", 11)));
  w.identity_uuid = "idA";
  EXPECT_TRUE(matches(w, event("email.received", "acct", "idA", 11)));
  EXPECT_FALSE(matches(w, event("email.received", "acct", "idB", 11)));
  EXPECT_FALSE(matches(w, event("email.received", "acct", "", 11)));
  w.enabled = false;
  EXPECT_FALSE(matches(w, event("email.received", "acct", "idA", 11)));
}

TEST(WebhookFanOut, APayloadIsTheEventStreamsEnvelope) {
  const sdk::Event e = event("contact.created", "acct", "", 5);
  const std::string body = payloadOf(e);
  auto o = Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
  EXPECT_EQ(o->getValue<std::string>("id"), e.id);
  EXPECT_EQ(o->getValue<std::string>("type"), "contact.created");
  EXPECT_EQ(o->getValue<std::string>("created_dt"), sdk::isoTimestamp(e.created_us));
  EXPECT_EQ(o->getValue<std::string>("account"), "acct");
  EXPECT_TRUE(o->isNull("identity"));
  EXPECT_EQ(o->getObject("object")->getValue<std::string>("uuid"), "x\"y");
  EXPECT_EQ(body.rfind("{\"id\":", 0), 0u);  // members in the stream's order
}

// Jobs for a pool's threads: some hang until released (a receiver that never answers), the
// others are quick; each thread takes the next job, runs it as an attempt, and asks keep().
class Jobs {
 public:
  void add(bool hangs) {
    std::lock_guard lock(mutex_);
    queue_.push_back(hangs);
    wake_.notify_all();
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    wake_.notify_all();
  }
  void stop() {
    std::lock_guard lock(mutex_);
    stopped_ = released_ = true;
    wake_.notify_all();
  }
  void run(DeliveryWorkers::Worker& w) {
    while (w.keep()) {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(20),
                     [&] { return !queue_.empty() || stopped_; });
      if (stopped_) return;
      if (queue_.empty()) continue;
      const bool hangs = queue_.front();
      queue_.pop_front();
      lock.unlock();
      w.attemptStarted();
      if (hangs) {
        ++hanging;
        std::unique_lock held(mutex_);
        wake_.wait(held, [&] { return released_; });
        --hanging;
      }
      w.attemptEnded();
      if (!hangs) ++quick_done;
    }
  }
  std::atomic<int> hanging{0}, quick_done{0};

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<bool> queue_;
  bool released_ = false, stopped_ = false;
};

template <class F>
bool eventually(F done, std::chrono::seconds bound = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(WebhookWorkers, HangingAttemptsParkTheirThreadsAndTheOthersGoOn) {
  Jobs jobs;
  DeliveryWorkers pool(2, 16, std::chrono::milliseconds(30));
  pool.start([&](DeliveryWorkers::Worker& w) { jobs.run(w); });
  for (int i = 0; i < 10; ++i) jobs.add(true);  // more hanging jobs than the base threads
  ASSERT_TRUE(eventually([&] { return jobs.hanging.load() == 10; }))
      << jobs.hanging.load() << " hanging: the pool did not grow past its parked threads";
  for (int i = 0; i < 5; ++i) jobs.add(false);
  EXPECT_TRUE(eventually([&] { return jobs.quick_done.load() == 5; }))
      << "quick jobs waited behind hanging ones";
  EXPECT_LE(pool.peak(), 16u);
  // Ten parked, two free (a thread that looked surplus for a moment, while an attempt was not yet
  // parked, is replaced once it is).
  EXPECT_TRUE(eventually([&] { return pool.running() == 12; })) << pool.running() << " running";
  // Released, the surplus threads end: back to the base.
  jobs.release();
  EXPECT_TRUE(eventually([&] { return pool.running() == 2; })) << pool.running() << " running";
  jobs.stop();
  pool.stop();
}

TEST(WebhookWorkers, NeverMoreThreadsThanTheMost) {
  Jobs jobs;
  DeliveryWorkers pool(1, 3, std::chrono::milliseconds(10));
  pool.start([&](DeliveryWorkers::Worker& w) { jobs.run(w); });
  for (int i = 0; i < 8; ++i) jobs.add(true);
  ASSERT_TRUE(eventually([&] { return jobs.hanging.load() == 3; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // had it grown, it would have now
  EXPECT_EQ(jobs.hanging.load(), 3);
  EXPECT_EQ(pool.peak(), 3u);
  jobs.stop();
  pool.stop();
}

TEST(WebhookReplays, ABackingOffWebhooksPendingDeliveryIsNotMadeDueSooner) {
  const std::int64_t now = 1000000000;
  auto refusal = replayRefusal(now + 29500000, true, {}, 20, now);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status(), 429);
  EXPECT_EQ(refusal->code(), "throttled");
  bool extra = false, header = false;
  for (const auto& [name, value] : refusal->extras()) {
    if (name == "retry_after_seconds") extra = value.convert<int>() == 30;
  }
  for (const auto& [name, value] : refusal->headers()) {
    if (name == "Retry-After") header = value == "30";
  }
  EXPECT_TRUE(extra);
  EXPECT_TRUE(header);
  // A delivered or failed one may be replayed meanwhile (it is due when the backoff ends), and
  // once the backoff ended a pending one may too.
  EXPECT_FALSE(replayRefusal(now + 29500000, false, {}, 20, now));
  EXPECT_FALSE(replayRefusal(now - 1, true, {}, 20, now));
}

TEST(WebhookReplays, AtMostTheLimitInAnyMinute) {
  const std::int64_t now = 1000000000;
  std::vector<std::int64_t> recent;  // newest first: one a second for the last 20 seconds
  for (int i = 0; i < 20; ++i) recent.push_back(now - i * 1000000LL);
  EXPECT_FALSE(replayRefusal(0, false, {recent.begin(), recent.begin() + 19}, 20, now));
  auto refusal = replayRefusal(0, false, recent, 20, now);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->code(), "throttled");
  // The oldest of the 20 (19 s ago) leaves the window in 41 s: a second past that, whole.
  int wait = 0;
  for (const auto& [name, value] : refusal->extras()) {
    if (name == "retry_after_seconds") wait = value.convert<int>();
  }
  EXPECT_EQ(wait, 42);
  EXPECT_FALSE(replayRefusal(0, false, recent, 0, now));  // 0: no limit
}

}  // namespace
}  // namespace svc::plugins::webhooks
