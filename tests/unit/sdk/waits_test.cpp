#include <svc/sdk/waits.h>

#include "testing/held_response.h"

#include <gtest/gtest.h>

#include <atomic>
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
  void deliver(const std::string& type, const std::string& account, const std::string& identity) {
    Event e;
    e.type = type;
    e.account = account;
    e.identity = identity;
    subscriber(e);
  }
  std::function<void(const Event&)> subscriber;
};

class HeldWaitsTest : public ::testing::Test {
 protected:
  HeldWaitsTest() : waits_(bus_, {"thing.received"}) { waits_.start(); }

  // Arrives when `arrived` is set: what a store lookup of the awaited message does.
  HeldWaits::Check arrivedCheck() {
    return [this]() -> std::optional<Response> {
      ++checks_;
      if (!arrived_) return std::nullopt;
      return Response::json(200, Poco::Dynamic::Var(std::string("here")));
    };
  }

  OneSubscriberBus bus_;
  HeldWaits waits_;
  std::atomic<bool> arrived_{false};
  std::atomic<int> checks_{0};
};

TEST_F(HeldWaitsTest, WhatIsAlreadyThereAnswersAtOnceWithoutHolding) {
  arrived_ = true;
  const Response r = waits_.hold("acct", "ident", milliseconds(1000), arrivedCheck());
  EXPECT_FALSE(r.on_hold);
  EXPECT_EQ(r.status, 200);
}

TEST_F(HeldWaitsTest, AnEventForTheIdentityAnswersTheHeldWait) {
  const Response held = waits_.hold("acct", "ident", milliseconds(5000), arrivedCheck());
  ASSERT_TRUE(held.on_hold);
  std::thread later([&] {
    while (waits_.heldCount() == 0) std::this_thread::sleep_for(milliseconds(5));
    arrived_ = true;
    bus_.deliver("thing.received", "acct", "ident");
  });
  const auto start = std::chrono::steady_clock::now();
  const Response r = testing::awaitHeld(held, "req-1", milliseconds(4000));
  later.join();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "\"here\"");
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));
  EXPECT_EQ(waits_.heldCount(), 0u);
}

TEST_F(HeldWaitsTest, OtherEventsIdentitiesAndAccountsDoNotWakeItAndTheTimeoutAnswers204) {
  const Response held = waits_.hold("acct", "ident", milliseconds(400), arrivedCheck());
  ASSERT_TRUE(held.on_hold);
  std::thread noise([&] {
    while (waits_.heldCount() == 0) std::this_thread::sleep_for(milliseconds(5));
    std::this_thread::sleep_for(milliseconds(50));  // the registration's own look is done
    const int before = checks_;
    arrived_ = true;  // a check now would answer 200: none may run
    bus_.deliver("thing.sent", "acct", "ident");
    bus_.deliver("thing.received", "acct", "another");
    bus_.deliver("thing.received", "other-acct", "ident");
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(checks_.load(), before);
  });
  const Response r = testing::awaitHeld(held, "req-2", milliseconds(3000));
  noise.join();
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(waits_.heldCount(), 0u);
}

TEST_F(HeldWaitsTest, AFailingCheckAnswersTheErrorAndStopAnswersTheRest) {
  std::atomic<bool> fail{false};
  const Response failing =
      waits_.hold("acct", "ident", milliseconds(5000), [&]() -> std::optional<Response> {
        if (fail) throw HttpError(404, "not_found", "gone");
        return std::nullopt;
      });
  std::thread later([&] {
    while (waits_.heldCount() == 0) std::this_thread::sleep_for(milliseconds(5));
    fail = true;
    bus_.deliver("thing.received", "acct", "ident");
  });
  const Response r = testing::awaitHeld(failing, "req-3", milliseconds(4000));
  later.join();
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("not_found"), std::string::npos);

  const Response held = waits_.hold("acct", "ident", milliseconds(60000), arrivedCheck());
  std::thread stopper([&] {
    while (waits_.heldCount() == 0) std::this_thread::sleep_for(milliseconds(5));
    waits_.stop();
  });
  const Response stopped = testing::awaitHeld(held, "req-4", milliseconds(4000));
  stopper.join();
  EXPECT_EQ(stopped.status, 204);
}

}  // namespace
}  // namespace svc::sdk
