// Remembers the signed webhooks seen lately, so that a captured request sent again is refused:
// Twilio's signature covers the URL and the parameters but no time, so a copy verifies forever.
// In memory (a restart forgets), bounded in time and in count; the oldest go first when full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

namespace svc::plugins::sms {

/// A set of keys, each remembered for a window of time. Thread-safe.
class ReplayGuard {
 public:
  /// @param window_us how long a key is remembered (sdk::nowMicros() time).
  /// @param capacity how many keys at most (1 or more); beyond, the oldest are forgotten first.
  explicit ReplayGuard(std::int64_t window_us = 24LL * 3600 * 1000000,
                       std::size_t capacity = 100000);
  /// @param key a digest of one request. @return true (and remembers it) when it was not seen
  /// within the window; false for a replay.
  bool admit(const std::string& key);
  /// Forgets a key admitted whose request then failed, so that the carrier's retry is served.
  void forget(const std::string& key);

 private:
  // Forgets keys older than the window, and the oldest until at most `keep` remain.
  void expire(std::int64_t now, std::size_t keep);

  const std::int64_t window_us_;
  const std::size_t capacity_;
  std::mutex mutex_;
  struct Admission {
    std::int64_t when;
    std::uint64_t
        serial;  // tells a key's admissions apart (one may be forgotten, then re-admitted)
    std::string key;
  };
  std::uint64_t next_serial_ = 0;
  std::unordered_map<std::string, std::uint64_t> seen_;  // key → serial of its live admission
  std::deque<Admission> order_;                          // admissions, oldest first
};

}  // namespace svc::plugins::sms
