#include <svc/sdk/rate_limit.h>

#include <svc/sdk/util.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace svc::sdk {

RateLimiter::RateLimiter(int per_minute) : RateLimiter(per_minute, 60) {}

RateLimiter::RateLimiter(int burst, int period_seconds)
    : capacity_(burst), per_us_(static_cast<double>(burst) / (std::max(1, period_seconds) * 1e6)) {}

int RateLimiter::take(const std::string& key) {
  return check(key, true);
}
int RateLimiter::peek(const std::string& key) {
  return check(key, false);
}

int RateLimiter::check(const std::string& key, bool take) {
  if (capacity_ <= 0) return 0;
  const std::int64_t now = nowMicros();
  std::lock_guard lock(mutex_);
  // Forget full buckets now and then, so memory follows the active clients, not all clients ever.
  if (now - last_sweep_us_ > 60000000) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      double tokens = it->second.tokens + (now - it->second.at_us) * per_us_;
      it = tokens >= capacity_ ? buckets_.erase(it) : std::next(it);
    }
    last_sweep_us_ = now;
  }
  // A key never seen has a full bucket: peeking at it stores nothing, so peeks at many keys
  // (each credential a client makes up) do not grow the map.
  if (!take && !buckets_.count(key)) return 0;
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{capacity_, now});
  Bucket& b = it->second;
  b.tokens = std::min(capacity_, b.tokens + (now - b.at_us) * per_us_);
  b.at_us = now;
  if (b.tokens >= 1.0) {
    if (take) b.tokens -= 1.0;
    return 0;
  }
  return std::max(1, static_cast<int>(std::ceil((1.0 - b.tokens) / per_us_ / 1e6)));
}

void RateLimiter::takeOrThrow(const std::string& key, const std::string& what) {
  if (int wait = take(key)) throw throttled(wait, what);
}

HttpError RateLimiter::throttled(int seconds, const std::string& what) {
  HttpError e(429, "throttled",
              "Too many " + what + "; retry in " + std::to_string(seconds) + " seconds.");
  e.extra("retry_after_seconds", seconds);
  e.header("Retry-After", std::to_string(seconds));
  return e;
}

std::optional<int> windowWait(const std::vector<std::int64_t>& recent, int limit,
                              int window_seconds, std::int64_t now_us) {
  if (limit <= 0 || static_cast<int>(recent.size()) < limit) return std::nullopt;
  // The oldest of the last `limit` events leaves the window first.
  const std::int64_t window_us = static_cast<std::int64_t>(window_seconds) * 1000000;
  return static_cast<int>(
      (recent[static_cast<std::size_t>(limit) - 1] + window_us - now_us) / 1000000 + 1);
}

void enforceSendingLimits(
    int per_hour, int per_day, const std::string& what,
    const std::function<std::vector<std::int64_t>(std::int64_t since_us, int limit)>& recent) {
  const std::int64_t now_us = nowMicros();
  for (auto [limit, seconds, window] :
       {std::tuple{per_hour, 3600, "an hour"}, std::tuple{per_day, 86400, "a day"}}) {
    if (limit <= 0) continue;
    const auto times = recent(now_us - static_cast<std::int64_t>(seconds) * 1000000, limit);
    if (auto wait = windowWait(times, limit, seconds, now_us)) {
      throw RateLimiter::throttled(*wait, what + " from this identity (it may send " +
                                              std::to_string(limit) + " " + window + ")");
    }
  }
}

}  // namespace svc::sdk
