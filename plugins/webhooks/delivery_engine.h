// The background work of the webhooks plugin: the fan-out thread and the delivery workers.
//
// The fan-out thread runs FanOut rounds when an event arrives (the bus calls back on its thread,
// which only wakes this one) and every poll interval, and wakes the workers when it made
// deliveries; the workers also look every poll interval (retries come due, other svcds' work).
//
// A worker leases one webhook at a time (LeaseTable: the row's owner and a beat its holder bumps,
// judged by each svcd's own steady clock, never by comparing clocks; one worker of one svcd
// process delivers a webhook's deliveries at any moment) and sends its pending deliveries oldest
// first over one kept-alive connection, recording a batch of outcomes in one transaction while it
// sends the next (at most one batch is being recorded: a database writer busy elsewhere, and
// SQLite has one, does not stop the sending; the rows of the batch being recorded are still
// pending and are skipped by id when the next batch is read; a batch is at most 500 deliveries or
// a second of sending, and a record that finds the lease lost stops the sending at once; a record
// renews the lease, and an outcome does not overwrite a replay asked while it was being sent).
// The lease is renewed before a send whenever what is left of it (to its deadline on this
// process's steady clock) is shorter than the longest attempt could take (an attempt is cut at
// webhooks.timeout_seconds, and the lease is at least three times that); when it cannot be
// renewed, the worker stops: every attempt ends before the deadline, and no other svcd takes the
// lease before it (LeaseTable::margin()). Webhooks are leased those of the account holding
// the fewest leases first, then least recently served, then oldest-due first, and a worker gives
// its webhook up after kFairDeliveries deliveries or kFairTime when another webhook is due: a busy
// webhook does not keep a worker from the others. An account holds at most `account_workers` leases
// at once (counted in the database, so across every svcd), and the pool of workers grows past
// `workers` while attempts hang (DeliveryWorkers): receivers that accept and never answer park a
// thread each, at most `account_workers` of one account's, and the free workers go on serving the
// other accounts' webhooks. A drained webhook's lease is kept a moment (kIdleHold) for the
// deliveries the fan-out makes next, unless another is due, so a steady flow costs no lease and
// release per event. The first failure stops the run: nothing later is sent before the delivery
// ahead of it is delivered or given up (in order per webhook). A failed attempt is retried after
// the retry policy's delay; one still failing after its window is failed, and the webhook is
// disabled with a `webhook.disabled` event saying why. A delivery sent but not yet recorded when
// svcd dies is sent again by the next lease holder: at least once.
#pragma once

#include "delivery_sweep.h"
#include "delivery_workers.h"
#include "fan_out.h"
#include "lease_table.h"
#include "retry_policy.h"
#include "sender.h"
#include "watchdog.h"
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
#include <unordered_set>
#include <vector>

namespace svc::plugins::webhooks {

struct EngineSettings {
  bool allow_private_urls = false;
  std::chrono::milliseconds timeout{10000};  ///< A whole attempt.
  std::int64_t retry_base_us = 5000000;
  std::int64_t retry_window_us = 86400LL * 1000000;
  std::int64_t lease_us = 30000000;
  std::chrono::milliseconds poll{
      250};                 ///< How often due retries and other svcds' work are looked for.
  int workers = 4;          ///< Threads always running.
  int max_workers = 128;    ///< Threads at most, parked ones (in a hanging attempt) included.
  int account_workers = 4;  ///< Webhooks of one account leased at once, at most.
  std::int64_t retention_us = 7LL * 86400 * 1000000;  ///< events.retention_days: finished
                                                      ///< deliveries are kept as long.
};

class DeliveryEngine {
 public:
  DeliveryEngine(sdk::Database& db, sdk::EventBus& events, WebhookStore& store,
                 EngineSettings settings, Poco::Logger& log);
  ~DeliveryEngine();

  void start();
  /// Stops the threads (a send in flight is cut) and gives up the leases.
  void stop();
  /// Has the fan-out look at the log now (from the bus's thread: never blocks).
  void eventArrived();
  /// Has the workers look for due deliveries now.
  void wakeWorkers();

  std::uint64_t delivered() const { return delivered_.load(); }
  std::uint64_t failedAttempts() const { return failed_attempts_.load(); }

 private:
  void fanOutLoop();
  /// Prunes and caps the delivery log (DeliverySweep), every kSweepEvery.
  void sweep();
  void workerLoop(DeliveryWorkers::Worker& worker);
  /// Delivers the leased webhook's due deliveries in order, until drained, failing, or its fair
  /// share spent while others are due.
  void deliverFor(Lease& lease, Sender& sender, DeliveryWorkers::Worker& worker);
  /// @return the webhook's pending deliveries, oldest first (a batch), but those in `skip` (sent
  /// and being recorded).
  std::vector<DeliveryRow> pendingOf(const std::string& webhook,
                                     const std::unordered_set<std::string>& skip);

  struct Outcome {
    DeliveryRow delivery;
    SendResult result;
    std::int64_t at_us = 0;
  };
  /// Records a run's outcomes (all delivered but maybe the last) and renews the lease (on any
  /// thread: it reads the lease, never changes it). @return when the renewal started (this
  /// process's steady clock, for LeaseTable::extend), or nullopt when the webhook is gone,
  /// disabled or no longer leased by this process.
  std::optional<Lease::Clock::time_point> record(const Lease& lease,
                                                 const std::vector<Outcome>& outcomes);

  sdk::Database& db_;
  sdk::EventBus& events_;
  WebhookStore& store_;
  const EngineSettings settings_;
  const RetryPolicy policy_;
  Poco::Logger& log_;
  LeaseTable leases_;
  FanOut fan_out_;
  DeliverySweep sweep_;
  Watchdog watchdog_;

  std::atomic<bool> running_{false};
  std::mutex mutex_;
  std::condition_variable fan_out_wake_, workers_wake_;
  bool event_arrived_ = false;
  std::uint64_t work_generation_ = 0;
  std::chrono::steady_clock::time_point swept_{};
  std::thread fan_out_thread_;
  DeliveryWorkers workers_;
  std::atomic<std::uint64_t> delivered_{0}, failed_attempts_{0};
};

}  // namespace svc::plugins::webhooks
