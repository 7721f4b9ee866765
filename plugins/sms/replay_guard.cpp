#include "replay_guard.h"

#include <svc/sdk/util.h>

namespace svc::plugins::sms {

ReplayGuard::ReplayGuard(std::int64_t window_us, std::size_t capacity)
    : window_us_(window_us), capacity_(capacity) {}

void ReplayGuard::expire(std::int64_t now, std::size_t keep) {
  while (!order_.empty() && (order_.front().when <= now - window_us_ || seen_.size() > keep ||
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
  expire(now, capacity_);
  if (seen_.count(key) != 0) return false;
  expire(now, capacity_ - 1);  // room for one more
  seen_.emplace(key, next_serial_);
  order_.push_back({now, next_serial_++, key});
  return true;
}

void ReplayGuard::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  seen_.erase(key);
}

}  // namespace svc::plugins::sms
