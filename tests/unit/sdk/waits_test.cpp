#include <svc/sdk/waits.h>

#include "testing/held_response.h"

#include <svc/sdk/testing.h>
#include <svc/sdk/util.h>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace svc::sdk {
namespace {

using std::chrono::milliseconds;

class OneSubscriberBus : public EventBus {
 public:
  Event publish(const std::string&, const std::string&, const std::string&, Poco::JSON::Object::Ptr,
                Poco::Data::Session*) override {
    return {};
  }
  std::uint64_t subscribe(std::function<void(const Event&)> fn) override {
    subscriber = std::move(fn);
    return 7;
  }
  void unsubscribe(std::uint64_t token) override {
    EXPECT_EQ(token, 7u);
    subscriber = nullptr;
  }
  void deliver(const std::string& type, const std::string& account, const std::string& identity,
               const std::string& id = "") {
    Event e;
    e.id = id;
    e.type = type;
    e.account = account;
    e.identity = identity;
    subscriber(e);
  }
  std::function<void(const Event&)> subscriber;
};

// A held request that stays held: enough to fill a cap without a thread per wait.
class ParkedStream : public Stream {
 public:
  bool respond(const Response& r) override {
    std::lock_guard lock(mutex_);
    if (answered_) return false;
    answered_ = true;
    status_ = r.status;
    return true;
  }
  bool begin(int, const std::string&,
             const std::vector<std::pair<std::string, std::string>>&) override {
    return false;
  }
  bool write(const std::string&) override { return false; }
  void finish() override {}
  bool isOpen() const override {
    std::lock_guard lock(mutex_);
    return !answered_;
  }
  void onClose(std::function<void()>) override {}
  void expireAfter(std::chrono::milliseconds, std::function<void()>) override {}
  const std::string& requestId() const override { return id_; }
  std::size_t queued() const override { return 0; }
  int status() const {
    std::lock_guard lock(mutex_);
    return status_;
  }

 private:
  mutable std::mutex mutex_;
  bool answered_ = false;
  int status_ = 0;
  std::string id_ = "parked";
};

class HeldWaitsTest : public ::testing::Test {
 protected:
  HeldWaitsTest() : waits_(bus_, {"thing.received"}) { waits_.start(); }

  // Arrives when `arrived` is set: what a store lookup of the awaited message does.
  HeldWaits::Check arrivedCheck() {
    return [this](const Event*) -> std::optional<Response> {
      ++checks_;
      if (!arrived_) return std::nullopt;
      return Response::json(200, Poco::Dynamic::Var(std::string("here")));
    };
  }

  static WaitWindow window(milliseconds timeout, const std::string& identity = "ident") {
    WaitWindow w;
    w.account = "acct";
    w.identity = identity;
    w.timeout = timeout;
    return w;
  }

  OneSubscriberBus bus_;
  HeldWaits waits_;
  // The wait is let go by the stream's close callback, which runs on the waits' thread just
  // after the answer is handed over: it may still be on its way when the answer is read.
  // @return true once no wait is held (within 30 s).
  bool letGo() {
    for (const auto until = std::chrono::steady_clock::now() + milliseconds(30000);
         waits_.heldCount() != 0 && std::chrono::steady_clock::now() < until;) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    return waits_.heldCount() == 0;
  }

  std::atomic<bool> arrived_{false};
  std::atomic<int> checks_{0};
};

TEST_F(HeldWaitsTest, WhatIsAlreadyThereAnswersAtOnceWithoutHolding) {
  arrived_ = true;
  const Response r = waits_.hold(window(milliseconds(1000)), arrivedCheck());
  EXPECT_FALSE(r.on_hold);
  EXPECT_EQ(r.status, 200);
}

TEST_F(HeldWaitsTest, AnEventForTheIdentityAnswersTheHeldWait) {
  // The window is far off: a 200 is the event's answer (the timeout's is 204), however long a
  // loaded machine takes to deliver it.
  const Response held = waits_.hold(window(milliseconds(60000)), arrivedCheck());
  ASSERT_TRUE(held.on_hold);
  std::thread later([&] {
    while (waits_.heldCount() == 0) std::this_thread::sleep_for(milliseconds(5));
    arrived_ = true;
    bus_.deliver("thing.received", "acct", "ident");
  });
  const Response r = testing::awaitHeld(held, "req-1", milliseconds(30000));
  later.join();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "\"here\"");
  EXPECT_TRUE(letGo());
}

TEST_F(HeldWaitsTest, OtherEventsIdentitiesAndAccountsDoNotWakeItAndTheTimeoutAnswers204) {
  const Response held = waits_.hold(window(milliseconds(400)), arrivedCheck());
  ASSERT_TRUE(held.on_hold);
  std::thread noise([&] {
    // The look at the call and the registration's own look are done.
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         checks_ < 2 && std::chrono::steady_clock::now() < until;) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    const int before = checks_;
    arrived_ = true;  // a check now would answer 200: none may run
    bus_.deliver("thing.sent", "acct", "ident");
    bus_.deliver("thing.received", "acct", "another");
    bus_.deliver("thing.received", "other-acct", "ident");
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(checks_.load(), before);
  });
  const Response r = testing::awaitHeld(held, "req-2", milliseconds(30000));
  noise.join();
  EXPECT_EQ(r.status, 204);
  EXPECT_TRUE(letGo());
}

TEST_F(HeldWaitsTest, AFailingCheckAnswersTheErrorAndStopAnswersTheRest) {
  std::atomic<bool> fail{false};
  const Response failing =
      waits_.hold(window(milliseconds(60000)), [&](const Event*) -> std::optional<Response> {
        if (fail) throw HttpError(404, "not_found", "gone");
        return std::nullopt;
      });
  std::thread later([&] {
    while (waits_.heldCount() == 0) std::this_thread::sleep_for(milliseconds(5));
    fail = true;
    bus_.deliver("thing.received", "acct", "ident");
  });
  const Response r = testing::awaitHeld(failing, "req-3", milliseconds(30000));
  later.join();
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("not_found"), std::string::npos);

  const Response held = waits_.hold(window(milliseconds(60000)), arrivedCheck());
  std::thread stopper([&] {
    while (waits_.heldCount() == 0) std::this_thread::sleep_for(milliseconds(5));
    waits_.stop();
  });
  const Response stopped = testing::awaitHeld(held, "req-4", milliseconds(30000));
  stopper.join();
  EXPECT_EQ(stopped.status, 204);
}

// The store is looked at twice (at the call, and once the wait is held); after that a wait is
// only offered what events name, and a new waiter does not make the others look again.
TEST_F(HeldWaitsTest, TheStoreIsLookedAtTwiceThenOnlyEventsAreOffered) {
  std::atomic<int> store_looks{0}, offers{0}, other_looks{0};
  std::string offered;
  std::mutex offered_mutex;
  auto parked = std::make_shared<ParkedStream>();
  const Response held =
      waits_.hold(window(milliseconds(60000)), [&](const Event* e) -> std::optional<Response> {
        if (!e) {
          ++store_looks;
          return std::nullopt;
        }
        ++offers;
        std::lock_guard lock(offered_mutex);
        offered += e->id + ",";
        if (e->id != "m2") return std::nullopt;
        return Response::json(200, Poco::Dynamic::Var(e->id));
      });
  ASSERT_TRUE(held.on_hold);
  std::thread later([&] {
    while (waits_.heldCount() == 0) std::this_thread::sleep_for(milliseconds(5));
    while (store_looks < 2) std::this_thread::sleep_for(milliseconds(5));
    // A second waiter on the same identity: only its own look runs.
    const Response other =
        waits_.hold(window(milliseconds(200)), [&](const Event* e) -> std::optional<Response> {
          if (!e) ++other_looks;
          return std::nullopt;
        });
    ASSERT_TRUE(other.on_hold);
    other.on_hold(parked);
    while (other_looks < 2) std::this_thread::sleep_for(milliseconds(5));
    bus_.deliver("thing.received", "acct", "ident", "m1");
    bus_.deliver("thing.received", "acct", "ident", "m2");
  });
  const Response r = testing::awaitHeld(held, "req-5", milliseconds(30000));
  later.join();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "\"m2\"");
  EXPECT_EQ(store_looks.load(), 2);
  EXPECT_EQ(offers.load(), 2);
  EXPECT_EQ(offered, "m1,m2,");
  EXPECT_EQ(store_looks.load(), 2);  // the second waiter's looks were its own
  EXPECT_EQ(other_looks.load(), 2);
}

// One identity may hold kMaxPerIdentity waits; the next is told to come back (429).
TEST_F(HeldWaitsTest, WaitsBeyondTheCapAreRefusedWith429) {
  std::vector<std::shared_ptr<ParkedStream>> streams;
  for (std::size_t i = 0; i < HeldWaits::kMaxPerIdentity; ++i) {
    Response held = waits_.hold(window(milliseconds(60000)), arrivedCheck());
    ASSERT_TRUE(held.on_hold);
    streams.push_back(std::make_shared<ParkedStream>());
    held.on_hold(streams.back());
  }
  EXPECT_EQ(waits_.heldCount(), HeldWaits::kMaxPerIdentity);
  const Response over = waits_.hold(window(milliseconds(60000)), arrivedCheck());
  const Response refused = testing::awaitHeld(over, "req-over", milliseconds(30000));
  EXPECT_EQ(refused.status, 429);
  EXPECT_NE(refused.body.find("\"throttled\""), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("\"retry_after_seconds\":5"), std::string::npos) << refused.body;
  ASSERT_EQ(refused.headers.size(), 1u);
  EXPECT_EQ(refused.headers[0], (std::pair<std::string, std::string>{"Retry-After", "5"}));
  // Another identity is not affected.
  const Response elsewhere = waits_.hold(window(milliseconds(100), "other"), arrivedCheck());
  EXPECT_EQ(testing::awaitHeld(elsewhere, "req-other", milliseconds(30000)).status, 204);
  waits_.stop();
  EXPECT_EQ(waits_.heldCount(), 0u);
  for (const auto& parked : streams) EXPECT_EQ(parked->status(), 204);
}

// What one event names is read once for all its waiters; a read that fails is not remembered as
// the event's (the next waiter reads again), and a new event reads anew.
TEST(EventMemo, ReadsOncePerEventAndForgetsAFailedRead) {
  EventMemo<std::string> memo;
  Event first, second;
  first.id = "e1";
  second.id = "e2";
  int loads = 0;
  EXPECT_THROW(memo.get(first,
                        [&]() -> std::optional<std::string> {
                          ++loads;
                          throw std::runtime_error("database away");
                        }),
               std::runtime_error);
  const auto load = [&](std::string value) {
    return [&loads, value]() -> std::optional<std::string> {
      ++loads;
      return value;
    };
  };
  EXPECT_EQ(*memo.get(first, load("one")), "one");
  EXPECT_EQ(*memo.get(first, load("other")), "one");
  EXPECT_EQ(loads, 2);
  EXPECT_EQ(*memo.get(second, load("two")), "two");
  EXPECT_EQ(memo.get(first, [&]() -> std::optional<std::string> { return std::nullopt; }), nullptr);
  EXPECT_EQ(loads, 3);
}

struct Row {
  std::int64_t created_us;
  std::string id;
};

// Without created_after a wait wants what was not there at the call: what is visible then is
// left out, and a row stamped before the call but committed after it is still new.
TEST(WaitWindow, WithoutCreatedAfterWhatIsVisibleAtTheCallIsOldAndALateCommitIsNew) {
  std::vector<Row> rows;
  std::mutex rows_mutex;
  const WaitPage<Row> page = [&](std::int64_t after, const std::string& after_id, int limit) {
    std::lock_guard lock(rows_mutex);
    std::vector<Row> out;
    for (const auto& r : rows) {
      if ((r.created_us > after || (r.created_us == after && r.id > after_id)) &&
          static_cast<int>(out.size()) < limit) {
        out.push_back(r);
      }
    }
    return out;
  };
  const std::int64_t now = nowMicros();
  rows = {{now - 60'000'000, "ancient"}, {now - 1'000, "visible"}};
  Request r;
  r.principal = testing::identityPrincipal("acct", "ident");
  r.identity = IdentityRef{"ident", "Ident"};  // as the kernel resolves it
  r.query = {{"timeout", "5"}};
  const WaitWindow w = waitWindow(r, page);
  EXPECT_EQ(w.identity, "ident");
  EXPECT_EQ(w.timeout, std::chrono::seconds(5));
  const std::function<bool(Row&)> any = [](Row&) { return true; };
  EXPECT_FALSE(findInWindow(w, page, any));
  rows.push_back({now - 500, "stamped-before-committed-after"});
  auto found = findInWindow(w, page, any);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, "stamped-before-committed-after");

  // With created_after, exactly what was created after it.
  r.query = {{"created_after", "2000-01-01T00:00:00Z"}};
  const WaitWindow since = waitWindow(r, page);
  EXPECT_TRUE(since.excluded.empty());
  EXPECT_EQ(findInWindow(since, page, any)->id, "ancient");
  EXPECT_EQ(since.timeout, std::chrono::seconds(30));
}

}  // namespace
}  // namespace svc::sdk
