// Rate limiting: a token bucket per key (a client address, an identity...), in memory.
//
// Limits are per svcd process: behind a load balancer with N processes a client gets up to N
// times the limit, which bounds abuse without a database round trip per request.
#pragma once

#include <svc/sdk/http.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace svc::sdk {

class RateLimiter {
 public:
  /// @param per_minute how many events a key may have per minute (0: unlimited); bursts up to the
  /// same number.
  explicit RateLimiter(int per_minute);
  /// @param burst how many events a key may have at once (0: unlimited). @param period_seconds
  /// how long an emptied bucket takes to fill again: `burst` events per period on average.
  RateLimiter(int burst, int period_seconds);
  /// Takes one token for key. @return 0 when allowed, else the seconds until one is available.
  int take(const std::string& key);
  /// @return 0 when key has a token left (without taking it), else the seconds to wait.
  int peek(const std::string& key);
  /// Takes one token or throws 429 `throttled` with `retry_after_seconds` and `Retry-After`.
  /// @param key the key. @param what what is limited, for the message.
  void takeOrThrow(const std::string& key, const std::string& what);
  /// @return the 429 error the contract specifies. @param seconds the wait.
  static HttpError throttled(int seconds, const std::string& what);

 private:
  struct Bucket {
    double tokens;
    std::int64_t at_us;
  };
  int check(const std::string& key, bool take);
  double capacity_;
  double per_us_;
  std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
  std::int64_t last_sweep_us_ = 0;
};

/// A sliding-window limit over stored events (an identity's sent messages), durable and shared by
/// every svcd process because the events are rows. @param recent the times (microseconds) of the
/// events within the window, newest first, at most `limit` of them. @param limit events allowed
/// per window (0 or less: no limit). @param window_seconds the window. @param now_us the time now.
/// @return the seconds to wait when the limit is reached (until the oldest of the last `limit`
/// events leaves the window), else nullopt.
std::optional<int> windowWait(const std::vector<std::int64_t>& recent, int limit,
                              int window_seconds, std::int64_t now_us);

/// An identity's sending limits, an hour's and a day's, over the messages it sent (rows).
/// @param per_hour, per_day how many it may send (0 or less: no limit). @param what what is
/// sent, for the message ("messages", "SMS"). @param recent the identity's sends after since_us,
/// newest first, at most limit of them (the plugin's query).
/// @throws HttpError 429 `throttled` with Retry-After when a limit is reached.
void enforceSendingLimits(
    int per_hour, int per_day, const std::string& what,
    const std::function<std::vector<std::int64_t>(std::int64_t since_us, int limit)>& recent);

}  // namespace svc::sdk
