#include "retry_policy.h"

#include <algorithm>

namespace svc::plugins::webhooks {

std::int64_t RetryPolicy::delay(int failed_attempts, double unit) const {
  std::int64_t d = base_us_;
  for (int i = 1; i < failed_attempts && d < cap(); ++i) d *= 2;
  d = std::min(d, cap());
  const double factor = 0.75 + 0.25 * std::clamp(unit, 0.0, 0.999999);
  return static_cast<std::int64_t>(static_cast<double>(d) * factor);
}

}  // namespace svc::plugins::webhooks
