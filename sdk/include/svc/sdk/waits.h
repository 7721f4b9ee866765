// One call to wait: requests held (no thread) until something they wait for has happened.
//
// An agent that expects a message (a verification code by email or SMS) calls a wait route; the
// route answers at once when it is already there, else holds the connection in the kernel's hub
// until an event of the watched types arrives for the identity and the route's check finds it,
// or the timeout passes (204). The check reads the store, so it runs on this class's own thread,
// never on the event thread; events come from every svcd process on the database.
//
//   waits_ = std::make_unique<sdk::HeldWaits>(ctx.events(),
//   std::vector<std::string>{"sms.received"}); waits_->start(); // in Plugin::start() return
//   waits_->hold(account, identity, timeout, [=] { return findMessage(...); });
#pragma once

#include <svc/sdk/events.h>
#include <svc/sdk/http.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace svc::sdk {

class HeldWaits {
 public:
  /// What a wait looks for: the answer when it has arrived, nullopt while it has not. Runs on a
  /// request's thread first, then on the waits' thread; it must be thread-safe.
  using Check = std::function<std::optional<Response>()>;

  /// @param events the bus. @param types the event types that may satisfy a wait.
  HeldWaits(EventBus& events, std::vector<std::string> types);
  ~HeldWaits();
  HeldWaits(const HeldWaits&) = delete;
  HeldWaits& operator=(const HeldWaits&) = delete;

  /// Subscribes and starts the thread (Plugin::start()).
  void start();
  /// Answers every held wait 204 and stops (Plugin::stop()).
  void stop();

  /// @param account and @param identity whose events may satisfy the wait. @param timeout how
  /// long to hold at most. @param check what it waits for.
  /// @return check's answer when it has one now, else a held response answered by a later check
  /// or, after timeout, 204 No Content.
  Response hold(const std::string& account, const std::string& identity,
                std::chrono::milliseconds timeout, Check check);

  /// @return waits held now.
  std::size_t heldCount() const;

 private:
  struct Waiter {
    std::string account;
    Check check;
    std::weak_ptr<Stream> stream;
  };
  void onEvent(const Event& event);
  void run();
  void checkIdentity(const std::string& identity);
  void forget(const std::string& identity, std::uint64_t id);

  EventBus& events_;
  std::set<std::string> types_;
  std::optional<std::uint64_t> subscription_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool running_ = false;
  std::thread thread_;
  std::uint64_t next_id_ = 0;
  std::map<std::string, std::map<std::uint64_t, Waiter>> waiters_;  // by identity, then id
  std::set<std::string> due_;  // identities with something new to check
};

}  // namespace svc::sdk
