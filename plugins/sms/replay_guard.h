// Remembers the signed webhooks seen lately, so that a captured request sent again is refused:
// Twilio's signature covers the URL and the parameters but no time, so a copy verifies forever.
// Kept in a table (sms_twilio_seen), so that neither a restart nor another svcd on the same
// database lets a copy through; rows older than the window are deleted as requests come.
#pragma once

#include <svc/sdk/storage.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace svc::plugins::sms {

/// The digests of requests seen within a window of time. Thread-safe.
class ReplayGuard {
 public:
  /// @param version its place among the sms plugin's migrations.
  /// @return the migration that makes the table sms_twilio_seen.
  static sdk::Migration migration(int version);

  /// @param db the database holding sms_twilio_seen. @param window_us how long a request is
  /// remembered at least (sdk::nowMicros() time); rows are deleted a little after it ends.
  explicit ReplayGuard(sdk::Database& db, std::int64_t window_us = 24LL * 3600 * 1000000);
  /// @param key a digest of one request (at most 64 characters).
  /// @return true (and remembers it) when it was not seen within the window; false for a replay.
  bool admit(const std::string& key);
  /// Forgets a key admitted whose request then failed, so that the carrier's retry is served.
  void forget(const std::string& key);

 private:
  void prune(std::int64_t at);

  sdk::Database& db_;
  const std::int64_t window_us_;
  std::atomic<std::int64_t> last_prune_us_{0};
};

}  // namespace svc::plugins::sms
