// The read cache of `GET /api/secrets/?key=`, what an agent does most: an identity's secret by
// key, its row and its vault record as fetched (still encrypted at rest: every read decrypts).
//
// It is never staler than what this process wrote: a write here drops its secret once it has
// committed, and a reader that began before a drop does not keep what it read (its ticket is
// stale). Writes in other svcd processes arrive as `secret.*` events, within the event log's
// poll. The vault says when a kept record has gone stale for its own reasons (a passphrase change,
// a key rotation). Entries also lapse (`secrets.read_cache_seconds`, 5), for changes no event
// tells of (an operator's restore, say).
#pragma once

#include "secret_store.h"

#include <svc/sdk/events.h>
#include <svc/sdk/vault.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
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
  static constexpr std::chrono::seconds kFreshFor{5};
  static constexpr std::size_t kMaxBytes = 16 << 20;    ///< Beyond this, the cache starts over.
  static constexpr std::size_t kMaxEntryBytes = 16384;  ///< Larger secrets are not kept.

  /// @param fresh_for how long an entry is served; zero keeps nothing.
  explicit SecretCache(Clock::duration fresh_for = kFreshFor) : fresh_for_(fresh_for) {}

  /// A reader's claim, taken before it reads the database. @return it.
  std::uint64_t ticket();
  /// @return the identity's secret with that key, when kept and fresh, else nullptr.
  std::shared_ptr<const CachedSecret> find(const std::string& identity, const std::string& key);
  /// Keeps what a reader read, unless something was dropped since it took its ticket.
  void keep(std::uint64_t ticket, std::shared_ptr<const CachedSecret> secret);
  /// Drops a secret (written or deleted, here or elsewhere). @param id its uuid.
  void drop(const std::string& id);
  /// Drops the secret a `secret.*` event (from any svcd) says changed; other events are not
  /// its business.
  void follow(const sdk::Event& event);
  /// @return how many secrets are kept.
  std::size_t size();

 private:
  struct Entry {
    std::shared_ptr<const CachedSecret> secret;
    Clock::time_point until;
    std::size_t bytes = 0;
  };
  static std::string slot(const std::string& identity, const std::string& key);
  void eraseLocked(std::unordered_map<std::string, Entry>::iterator it);

  const Clock::duration fresh_for_;
  std::mutex mutex_;
  std::uint64_t drops_ = 0;
  std::size_t bytes_ = 0;
  std::unordered_map<std::string, Entry> entries_;      ///< by identity and key
  std::unordered_map<std::string, std::string> slots_;  ///< secret id → its slot in entries_
};

}  // namespace svc::plugins::secrets
