#include "delivery_workers.h"

#include <algorithm>

namespace svc::plugins::webhooks {

DeliveryWorkers::DeliveryWorkers(int base, int most, std::chrono::milliseconds patience)
    : base_(base), most_(std::max(base, most)), patience_(patience) {}

DeliveryWorkers::~DeliveryWorkers() {
  stop();
}

void DeliveryWorkers::start(Body body) {
  std::lock_guard lock(mutex_);
  body_ = std::move(body);
  stopping_ = false;
  for (int i = 0; i < base_; ++i) spawn();
  monitor_ = std::thread([this] { monitor(); });
}

void DeliveryWorkers::stop() {
  {
    std::lock_guard lock(mutex_);
    if (!monitor_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  monitor_.join();
  // No thread is started from now on: the monitor was the only one starting them.
  for (auto& w : workers_) {
    if (w.thread_.joinable()) w.thread_.join();
  }
  workers_.clear();
}

std::size_t DeliveryWorkers::running() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(alive());
}

int DeliveryWorkers::alive() const {
  return static_cast<int>(std::count_if(workers_.begin(), workers_.end(),
                                        [](const Worker& w) { return !w.leaving_ && !w.done_; }));
}

std::size_t DeliveryWorkers::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

void DeliveryWorkers::spawn() {
  Worker& w = workers_.emplace_back(Worker(*this));
  w.thread_ = std::thread([this, &w] {
    body_(w);
    {
      std::lock_guard lock(mutex_);
      w.done_ = true;
    }
    wake_.notify_all();  // to be joined
  });
  peak_ = std::max(peak_, static_cast<std::size_t>(alive()));
}

int DeliveryWorkers::free(Clock::time_point now) const {
  int n = 0;
  for (const auto& w : workers_) {
    if (w.leaving_ || w.done_) continue;
    if (w.attempt_since_ == Clock::time_point{} || now - w.attempt_since_ < patience_) ++n;
  }
  return n;
}

void DeliveryWorkers::monitor() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    // Join the threads that ended (they no longer touch their Worker).
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->done_ && it->thread_.joinable()) {
        it->thread_.join();
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
    for (int f = free(now), n = alive(); f < base_ && n < most_; ++f, ++n) spawn();
    // Next look: when the oldest attempt still counted free becomes parked.
    Clock::time_point next = now + std::chrono::seconds(1);
    for (const auto& w : workers_) {
      if (!w.leaving_ && !w.done_ && w.attempt_since_ != Clock::time_point{} &&
          now - w.attempt_since_ < patience_)
        next = std::min(next, w.attempt_since_ + patience_);
    }
    wake_.wait_until(lock, next);
  }
}

void DeliveryWorkers::Worker::attemptStarted() {
  std::lock_guard lock(pool_.mutex_);
  attempt_since_ = Clock::now();
  pool_.wake_.notify_all();  // the monitor times its next look by it
}

void DeliveryWorkers::Worker::attemptEnded() {
  std::lock_guard lock(pool_.mutex_);
  attempt_since_ = Clock::time_point{};
}

bool DeliveryWorkers::Worker::keep() {
  std::lock_guard lock(pool_.mutex_);
  if (pool_.alive() <= pool_.base_) return true;
  // Surplus: end when base others are free without this one.
  const int others_free = pool_.free(Clock::now()) - 1;
  if (others_free < pool_.base_) return true;
  leaving_ = true;  // counted out now, so two surplus threads do not both look free
  return false;
}

}  // namespace svc::plugins::webhooks
