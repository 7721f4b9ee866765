// One call to wait: requests held (no thread) until something they wait for has happened.
//
// An agent that expects a message (a verification code by email or SMS) calls a wait route; the
// route answers at once when it is already there, else holds the connection in the kernel's hub
// until an event of the watched types arrives for the identity and the route's check accepts it,
// or the timeout passes (204). Events come from every svcd process on the database.
//
// A check is asked twice to look in the store (`check(nullptr)`: once on the request's thread, once
// more on the waits' thread right after the wait is held, for what arrived in between), and after
// that only about the one thing an event names (`check(&event)`), so a busy identity or many
// waiters never make a wait scan the store again. Checks run on this class's own thread, never on
// the event thread.
//
//   waits_ = std::make_unique<sdk::HeldWaits>(ctx.events(),
//   std::vector<std::string>{"sms.received"}); waits_->start(); // in Plugin::start() return
//   waits_->hold(window, [=](const sdk::Event* e) { return e ? offer(*e) : find(...); });
#pragma once

#include <svc/sdk/events.h>
#include <svc/sdk/http.h>
#include <svc/sdk/routes.h>
#include <svc/sdk/schema.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
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

/// What every wait looks for besides its own filters: the identity's rows created after a time.
struct WaitWindow {
  std::string account, identity;
  std::int64_t after_us = 0;       ///< rows created strictly after this
  std::set<std::string> excluded;  ///< rows already visible at the call (no created_after given)
  std::chrono::milliseconds timeout{30000};
  /// @return whether a row created at created_us with this id is new enough.
  bool admits(std::int64_t created_us, const std::string& id) const {
    return created_us > after_us && excluded.count(id) == 0;
  }
};

/// Reads the identity's rows created after (after_us, after_id), oldest first, at most limit.
template <class Row>
using WaitPage =
    std::function<std::vector<Row>(std::int64_t after_us, const std::string& after_id, int limit)>;

/// @return the query parameters every wait route declares: created_after and timeout (1-120 s).
std::vector<Param> waitWindowParams();

/// @return the errors every wait route may answer (429 `throttled`).
std::vector<RouteError> waitErrors();

/// How far before the call a wait without created_after still looks, for a row stamped before
/// the call whose transaction committed after it. Rows visible at the call are left out.
constexpr std::int64_t kWaitGraceMicros = 10'000'000;

/// @param r the (validated) request. @param page reads the identity's rows.
/// @return the window: created_after's time, else the call's minus kWaitGraceMicros with what is
/// already visible then excluded; timeout's seconds, else 30.
template <class Row>
WaitWindow waitWindow(const Request& r, const WaitPage<Row>& page);

/// @return the oldest row of the window that `wanted` accepts, looking at no more than max_rows.
template <class Row>
std::optional<Row> findInWindow(const WaitWindow& window, const WaitPage<Row>& page,
                                const std::function<bool(Row&)>& wanted, int max_rows = 1000);

/// What an event names, read once for all the waiters it is offered to (checks of one event run
/// one after another on the waits' thread).
template <class T>
class EventMemo {
 public:
  /// @return load()'s value for this event, calling load only when the event is a new one.
  std::shared_ptr<const T> get(const Event& event, const std::function<std::optional<T>()>& load) {
    std::lock_guard lock(mutex_);
    if (event_ != event.id) {
      event_ = event.id;
      auto loaded = load();
      value_ = loaded ? std::make_shared<const T>(std::move(*loaded)) : nullptr;
    }
    return value_;
  }

 private:
  std::mutex mutex_;
  std::string event_;
  std::shared_ptr<const T> value_;
};

class HeldWaits {
 public:
  /// What a wait looks for: the answer when it has arrived, nullopt while it has not. With a null
  /// event it looks in the store; with an event, at what that event names only. Thread-safe.
  using Check = std::function<std::optional<Response>(const Event* event)>;

  /// Waits held at most per identity, and in all; more are answered 429 `throttled`.
  static constexpr std::size_t kMaxPerIdentity = 1000;
  static constexpr std::size_t kMaxHeld = 20000;

  /// @param events the bus. @param types the event types that may satisfy a wait.
  HeldWaits(EventBus& events, std::vector<std::string> types);
  ~HeldWaits();
  HeldWaits(const HeldWaits&) = delete;
  HeldWaits& operator=(const HeldWaits&) = delete;

  /// Subscribes and starts the thread (Plugin::start()).
  void start();
  /// Answers every held wait 204 and stops (Plugin::stop()).
  void stop();

  /// @param window whose events may satisfy the wait, and how long to hold at most.
  /// @param check what it waits for.
  /// @return check's answer when it has one now, else a held response answered by a later check
  /// or, after the timeout, 204 No Content.
  Response hold(const WaitWindow& window, Check check);

  /// @return waits held now.
  std::size_t heldCount() const;

 private:
  struct Waiter {
    std::string account;
    Check check;
    std::weak_ptr<Stream> stream;
  };
  /// Work for the thread: look in the store for one new waiter, or offer an event to every
  /// waiter of its identity.
  struct Job {
    std::string identity;
    std::uint64_t waiter = 0;              ///< set: the store check of this waiter
    std::shared_ptr<const Event> event{};  ///< set: offer this event
  };
  void admit(const std::string& account, const std::string& identity, Check check,
             std::chrono::milliseconds timeout, const std::shared_ptr<Stream>& stream);
  void onEvent(const Event& event);
  void run();
  void runJob(const Job& job);
  void forget(const std::string& identity, std::uint64_t id);

  EventBus& events_;
  std::set<std::string> types_;
  std::optional<std::uint64_t> subscription_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool running_ = false;
  std::thread thread_;
  std::uint64_t next_id_ = 0;
  std::size_t held_ = 0;
  std::map<std::string, std::map<std::uint64_t, Waiter>> waiters_;  // by identity, then id
  std::deque<Job> jobs_;
};

// ---- templates ----

template <class Row>
std::optional<Row> findInWindow(const WaitWindow& window, const WaitPage<Row>& page,
                                const std::function<bool(Row&)>& wanted, int max_rows) {
  constexpr int kBatch = 50;
  std::int64_t after = window.after_us;
  std::string after_id = "~";  // after every id: strictly newer than after_us at first
  for (int scanned = 0; scanned < max_rows; scanned += kBatch) {
    auto rows = page(after, after_id, kBatch);
    for (auto& row : rows) {
      if (window.admits(row.created_us, row.id) && wanted(row)) return std::move(row);
    }
    if (static_cast<int>(rows.size()) < kBatch) break;
    after = rows.back().created_us;
    after_id = rows.back().id;
  }
  return std::nullopt;
}

std::int64_t waitAfterMicros(const Request& r);  // created_after, else now - kWaitGraceMicros

template <class Row>
WaitWindow waitWindow(const Request& r, const WaitPage<Row>& page) {
  WaitWindow w;
  w.account = r.principal.account_id;
  w.identity = scopeIdentity(r);
  w.after_us = waitAfterMicros(r);
  // The declaration bounds it to 1-120 digits-only seconds.
  w.timeout = std::chrono::seconds(std::stoi(r.queryParam("timeout").value_or("30")));
  if (!r.queryParam("created_after")) {
    // What is visible now is not new; what commits from now on is, whenever it was stamped.
    constexpr int kMaxExcluded = 1000;
    findInWindow<Row>(
        w, page,
        [&](Row& row) {
          w.excluded.insert(row.id);
          return false;
        },
        kMaxExcluded);
    if (w.excluded.size() >= static_cast<std::size_t>(kMaxExcluded)) {
      // Too busy an identity to list: only what is stamped after the call counts.
      w.after_us += kWaitGraceMicros;
      w.excluded.clear();
    }
  }
  return w;
}

}  // namespace svc::sdk
