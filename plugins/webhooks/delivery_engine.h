// The background work of the webhooks plugin: the fan-out thread and the delivery workers.
//
// The fan-out thread runs FanOut rounds when an event arrives (the bus calls back on its thread,
// which only wakes this one) and every poll interval, then wakes the workers.
//
// A worker leases one webhook at a time (webhooks.lease_owner/lease_until_us, taken with a
// compare-and-set, so one svcd process delivers a webhook's deliveries at any moment) and sends
// its pending deliveries oldest first over one kept-alive connection, recording a batch of
// outcomes in one transaction. A drained webhook's lease is kept a moment (kIdleHold) for the
// deliveries the fan-out makes next, so a steady flow costs no lease and release per event. The
// first failure stops the run: nothing later is sent before the delivery ahead of it is delivered
// or given up (in order per webhook). A failed attempt is retried after the retry policy's delay;
// one still failing after its window is failed, and the webhook is disabled with a
// `webhook.disabled` event saying why. A delivery sent but not yet recorded when svcd dies is sent
// again by the next lease holder: at least once.
#pragma once

#include "fan_out.h"
#include "retry_policy.h"
#include "sender.h"
#include "webhook_store.h"

#include <svc/sdk/events.h>
#include <svc/sdk/storage.h>

#include <Poco/Logger.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace svc::plugins::webhooks {

struct EngineSettings {
  bool allow_private_urls = false;
  std::chrono::milliseconds timeout{10000};  ///< Connect, and each read and write.
  std::int64_t retry_base_us = 5000000;
  std::int64_t retry_window_us = 86400LL * 1000000;
  std::int64_t lease_us = 30000000;
  std::chrono::milliseconds poll{
      250};  ///< How often due retries and other svcds' work are looked for.
  int workers = 4;
};

class DeliveryEngine {
 public:
  DeliveryEngine(sdk::Database& db, sdk::EventBus& events, WebhookStore& store,
                 EngineSettings settings, Poco::Logger& log);
  ~DeliveryEngine();

  void start();
  /// Stops the threads (a send in flight finishes, within its timeout) and gives up the leases.
  void stop();
  /// Has the fan-out look at the log now (from the bus's thread: never blocks).
  void eventArrived();
  /// Has the workers look for due deliveries now.
  void wakeWorkers();

  std::uint64_t delivered() const { return delivered_.load(); }
  std::uint64_t failedAttempts() const { return failed_attempts_.load(); }

 private:
  void fanOutLoop();
  void workerLoop();
  /// @return a webhook with due deliveries whose lease this process took, or nullopt.
  std::optional<std::string> lease();
  /// Delivers the leased webhook's due deliveries in order, then gives up the lease.
  void deliverFor(const std::string& webhook, Sender& sender);
  void release(const std::string& webhook);
  /// Extends this process's lease. @return false when it is no longer this process's.
  bool renew(const std::string& webhook);
  /// @return the webhook's pending deliveries, oldest first (a batch).
  std::vector<DeliveryRow> pendingOf(const std::string& webhook);

  struct Outcome {
    DeliveryRow delivery;
    SendResult result;
    std::int64_t at_us = 0;
  };
  /// Records a run's outcomes (all delivered but maybe the last) and renews the lease.
  /// @return false when the webhook is gone, disabled or no longer leased by this process.
  bool record(const std::string& webhook, const std::vector<Outcome>& outcomes);

  sdk::Database& db_;
  sdk::EventBus& events_;
  WebhookStore& store_;
  const EngineSettings settings_;
  const RetryPolicy policy_;
  Poco::Logger& log_;
  FanOut fan_out_;
  const std::string owner_;  // this process's lease name

  std::atomic<bool> running_{false};
  std::mutex mutex_;
  std::condition_variable fan_out_wake_, workers_wake_;
  bool event_arrived_ = false;
  std::uint64_t work_generation_ = 0;
  std::thread fan_out_thread_;
  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> delivered_{0}, failed_attempts_{0};
};

}  // namespace svc::plugins::webhooks
