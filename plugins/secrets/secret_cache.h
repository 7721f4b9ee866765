// The read cache of `GET /api/secrets/?key=`, what an agent does most: an identity's secret by
// key, its row and its vault record as fetched (still encrypted at rest: every read decrypts).
//
// A write through this process is seen by the next read: it drops its secret once it has
// committed, and a reader that began before a drop keeps nothing of what it read (its claim is
// stale). Writes through other svcd processes arrive as `secret.*` events (the event log's poll,
// 50 ms, plus its delivery). The vault says when a kept record has gone stale for its own reasons
// (a passphrase change, a key change). Entries lapse after `secrets.read_cache_seconds` (5), for
// changes no event tells of (an operator's restore, say).
#pragma once

#include "secret_store.h"

#include <svc/sdk/events.h>
#include <svc/sdk/vault.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace svc::plugins::secrets {

/// A secret as kept: its row and its vault record (as Vault::fetch() gave it).
struct CachedSecret {
  SecretRow row;
  sdk::StoredRecord stored;
};

class SecretCache {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kMaxBytes = 16 << 20;    ///< Beyond this, the cache starts over.
  static constexpr std::size_t kMaxEntryBytes = 16384;  ///< Larger secrets are not kept.

  /// @param fresh_for how long an entry is served; zero keeps nothing.
  /// @param now the time entries lapse by (tests give their own).
  explicit SecretCache(
      Clock::duration fresh_for,
      std::function<Clock::time_point()> now = [] { return Clock::now(); })
      : fresh_for_(fresh_for), now_(std::move(now)) {}

  /// A reader's claim, taken before it reads the database: how many drops there have been.
  std::uint64_t claim();
  /// @return the identity's secret with that key, when kept and fresh, else nullptr.
  std::shared_ptr<const CachedSecret> find(const std::string& identity, const std::string& key);
  /// Keeps what a reader read, unless something was dropped since it made its claim. A copy of
  /// the same secret under another key (it was renamed) goes.
  void keep(std::uint64_t claim, std::shared_ptr<const CachedSecret> secret);
  /// Drops a secret (written or deleted, here or elsewhere). @param id its uuid.
  void drop(const std::string& id);
  /// Drops the secret a `secret.*` event (from any svcd) says changed; other events are not
  /// its business.
  void follow(const sdk::Event& event);
  /// @return how many secrets are kept.
  std::size_t size();
  /// @return the memory they are counted as holding.
  std::size_t bytes();
  /// @return how many reads found their secret kept, and how many did not.
  std::uint64_t hits() const { return hits_.load(); }
  std::uint64_t misses() const { return misses_.load(); }

 private:
  struct Entry {
    std::shared_ptr<const CachedSecret> secret;
    Clock::time_point until;
    std::size_t bytes = 0;
  };
  using Entries = std::unordered_map<std::string, Entry>;
  static std::string slot(const std::string& identity, const std::string& key);
  void eraseLocked(Entries::iterator it);
  void dropLocked(const std::string& id);

  const Clock::duration fresh_for_;
  const std::function<Clock::time_point()> now_;
  std::mutex mutex_;
  std::uint64_t drops_ = 0;
  std::size_t bytes_ = 0;
  Entries entries_;                                          ///< by identity and key
  std::unordered_map<std::string, std::string> slot_by_id_;  ///< secret id → its key in entries_
  std::atomic<std::uint64_t> hits_{0}, misses_{0};
};

}  // namespace svc::plugins::secrets
