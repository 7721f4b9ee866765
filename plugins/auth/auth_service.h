// The auth plugin's Authenticator and PlanService: checks keys, access tokens and browser
// sessions for the kernel, and says whether an account's plan is active.
#pragma once

#include "auth_store.h"
#include "jwt_issuer.h"
#include "revocations.h"

#include <svc/sdk/auth.h>
#include <svc/sdk/plans.h>
#include <svc/sdk/rate_limit.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace svc::plugins::auth {

/// What a failed authentication counts against besides the client's address. A key's visible
/// prefix (its kind and four characters, checksum right or not): one agent repeating a bad key,
/// or guesses at one key from many addresses, use up that prefix's allowance and no one else's.
/// Anything else (tokens, cookies, garbage): `sha256:` and its hash.
std::string failureKey(std::string_view credential);

// Keys are looked up once and then served from memory; a revocation clears the entry here at once
// and, through the poller, in every other svcd process within a second.
//
// Rejected credentials are counted per client address and per key prefix (see guarded()); past
// either allowance, credentials that would need a lookup get 429 instead of one.
class AuthService : public sdk::Authenticator, public sdk::PlanService {
 public:
  /// @param failures_per_address failed authentications one address may have a minute.
  /// @param failures_per_key failed authentications one key prefix (or other credential) may have
  /// a minute, from all addresses together.
  AuthService(AuthStore& store, JwtIssuer& jwt, int failures_per_address, int failures_per_key)
      : store_(store),
        jwt_(jwt),
        by_address_(failures_per_address),
        by_key_(failures_per_key),
        families_((kAccessLifetimeSeconds + 300) * std::int64_t{1000000}) {}
  ~AuthService() override { stop(); }

  std::optional<sdk::Principal> authenticate(const sdk::Credentials& c) override;
  bool isActive(const std::string& account_id) override;

  /// Drops a key from this process's cache (it was revoked). @param key_hash its SHA-256.
  void forget(const std::string& key_hash);
  /// @return the sign-ins whose access tokens are refused.
  RevokedFamilies& revokedFamilies() { return families_; }
  /// Starts the poller that follows revocations made by other processes.
  void start();
  /// Stops the poller and writes the keys' last use.
  void stop();

 private:
  /// Runs check, counting a 401 against address and limit_key; 429 once either is used up.
  /// @param lookup whether check reads the database (then the limits are asked before it).
  sdk::Principal guarded(const std::string& address, const std::string& limit_key, bool lookup,
                         const std::function<sdk::Principal()>& check);
  /// Throws 429 when limit_key or address has no failures left.
  void admit(const std::string& address, const std::string& limit_key);
  sdk::Principal checkSession(const std::string& token, const sdk::Credentials& c);
  sdk::Principal checkToken(const std::string& jwt);
  std::optional<sdk::Principal> cachedKey(const std::string& hash);
  sdk::Principal lookUpKey(const std::string& hash);
  void poll();
  void flushLastUsed();

  AuthStore& store_;
  JwtIssuer& jwt_;
  sdk::RateLimiter by_address_;
  sdk::RateLimiter by_key_;
  std::mutex mutex_;
  static constexpr std::size_t kMaxCachedKeys = 100000;
  std::unordered_map<std::string, sdk::Principal> cache_;  ///< by key hash, at most kMaxCachedKeys
  std::map<std::string, std::int64_t> last_used_;
  RevokedFamilies families_;
  std::atomic<bool> running_{false};
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  std::thread poller_;
};

}  // namespace svc::plugins::auth
