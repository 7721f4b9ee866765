#include "replay_guard.h"

#include <svc/sdk/util.h>

namespace svc::plugins::sms {

ReplayGuard::ReplayGuard(std::int64_t window_us, std::size_t capacity)
    : window_us_(window_us), capacity_(capacity) {}

void ReplayGuard::expire(std::int64_t now) {
  while (!order_.empty() && (order_.front().when <= now - window_us_ || seen_.size() >= capacity_ ||
                             order_.size() > 2 * capacity_)) {
    const Admission& oldest = order_.front();
    auto it = seen_.find(oldest.key);
    if (it != seen_.end() && it->second == oldest.serial) seen_.erase(it);
    order_.pop_front();
  }
}

bool ReplayGuard::admit(const std::string& key) {
  const std::int64_t now = sdk::nowMicros();
  std::lock_guard lock(mutex_);
  expire(now);
  if (!seen_.emplace(key, next_serial_).second) return false;
  order_.push_back({now, next_serial_++, key});
  return true;
}

void ReplayGuard::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  seen_.erase(key);
}

}  // namespace svc::plugins::sms
