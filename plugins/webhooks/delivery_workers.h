// The delivery threads: a receiver that hangs costs its own webhook's time, not the others'.
//
// A delivery attempt blocks its thread until the receiver answers or the attempt's deadline
// (webhooks.timeout_seconds) cuts it. With a fixed pool, receivers that accept and never answer
// would hold every thread for the whole timeout, attempt after attempt, and every other
// account's deliveries would wait behind them. So the pool is elastic: `base` threads always, and
// whenever fewer than `base` are free (not in an attempt older than `patience`), one more is
// started, up to `most`; a thread beyond `base` ends when it finishes its webhook while `base`
// others are free. A slow attempt thus costs a parked thread (its stack, its socket), and the
// free threads go on serving the webhooks that answer. What bounds how many threads one account's
// hanging receivers can park is the per-account lease cap (DeliveryEngine::lease), so an account
// cannot fill the pool for the others.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace svc::plugins::webhooks {

class DeliveryWorkers {
 public:
  using Clock = std::chrono::steady_clock;
  class Worker;
  /// What each thread runs: until stop(), or until Worker::keep() says it is surplus.
  using Body = std::function<void(Worker&)>;

  /// @param base threads always running. @param most threads at most (at least base).
  /// @param patience how long an attempt runs before its thread counts as parked.
  DeliveryWorkers(int base, int most, std::chrono::milliseconds patience);
  ~DeliveryWorkers();
  DeliveryWorkers(const DeliveryWorkers&) = delete;
  DeliveryWorkers& operator=(const DeliveryWorkers&) = delete;

  /// Starts the base threads, each running body.
  void start(Body body);
  /// Joins every thread (the body must return once its running flag is down).
  void stop();

  /// @return threads running now (for tests and logs).
  std::size_t running() const;
  /// @return the most threads that ran at once since start.
  std::size_t peak() const;

  /// One thread's handle on the pool.
  class Worker {
   public:
    /// Marks the start of an attempt (the thread may be parked in it).
    void attemptStarted();
    /// Marks its end.
    void attemptEnded();
    /// Between webhooks. @return false when this thread is surplus and should return.
    bool keep();

   private:
    friend class DeliveryWorkers;
    Worker(DeliveryWorkers& pool) : pool_(pool) {}
    DeliveryWorkers& pool_;
    Clock::time_point attempt_since_{};  // zero while not in an attempt
    bool leaving_ = false;               // counted out: surplus, returning
    bool done_ = false;                  // its body returned: to be joined
    std::thread thread_;
  };

 private:
  /// Starts one thread (mutex_ held).
  void spawn();
  /// @return threads not returning (mutex_ held).
  int alive() const;
  /// @return threads neither parked in an attempt nor returning (mutex_ held).
  int free(Clock::time_point now) const;
  /// Starts threads while fewer than base are free; joins those that ended.
  void monitor();

  const int base_, most_;
  const std::chrono::milliseconds patience_;
  Body body_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::list<Worker> workers_;  // stable addresses: each thread holds its own
  std::size_t peak_ = 0;
  bool stopping_ = false;
  std::thread monitor_;
};

}  // namespace svc::plugins::webhooks
