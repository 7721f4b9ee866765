// When a failed delivery is tried again, and when it is given up.
//
// Delays double from the base (`webhooks.retry_base_ms`, 5 s) up to 720 times it (an hour at the
// default), each multiplied by a random factor in [0.75, 1) so that receivers coming back from an
// outage are not hit by every sender at once. A delivery whose first attempt is older than the
// window (24 hours) when an attempt fails is failed for good, and its webhook disabled.
#pragma once

#include <cstdint>

namespace svc::plugins::webhooks {

class RetryPolicy {
 public:
  /// @param base_us the first delay. @param window_us how long a delivery is tried.
  RetryPolicy(std::int64_t base_us, std::int64_t window_us)
      : base_us_(base_us), window_us_(window_us) {}

  /// @param failed_attempts attempts made so far, all failed (1 or more). @param unit a random
  /// number in [0, 1). @return how long to wait before the next attempt, in microseconds.
  std::int64_t delay(int failed_attempts, double unit) const;
  /// @return the longest delay before jitter.
  std::int64_t cap() const { return base_us_ * 720; }
  /// @param first_attempt_us when the delivery was first tried. @param now_us now.
  /// @return whether a failure now ends it.
  bool givesUp(std::int64_t first_attempt_us, std::int64_t now_us) const {
    return now_us - first_attempt_us >= window_us_;
  }
  std::int64_t window() const { return window_us_; }

 private:
  std::int64_t base_us_;
  std::int64_t window_us_;
};

}  // namespace svc::plugins::webhooks
