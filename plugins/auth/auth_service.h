// The auth plugin's Authenticator and PlanService: checks keys, access tokens and browser
// sessions for the kernel, and says whether an account's plan is active.
#pragma once

#include "auth_store.h"
#include "jwt_issuer.h"

#include <svc/sdk/auth.h>
#include <svc/sdk/plans.h>
#include <svc/sdk/rate_limit.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

namespace svc::plugins::auth {

// Keys are looked up once and then served from memory; a revocation clears the entry here at once
// and, through the poller, in every other svcd process within a second.
class AuthService : public sdk::Authenticator, public sdk::PlanService {
 public:
  AuthService(AuthStore& store, JwtIssuer& jwt, int failures_per_minute)
      : store_(store), jwt_(jwt), failures_(failures_per_minute) {}
  ~AuthService() override { stop(); }

  std::optional<sdk::Principal> authenticate(const sdk::Credentials& c) override;
  bool isActive(const std::string& account_id) override;

  /// Drops a key from this process's cache (it was revoked). @param key_hash its SHA-256.
  void forget(const std::string& key_hash);
  /// Starts the poller that follows revocations made by other processes.
  void start();
  /// Stops the poller and writes the keys' last use.
  void stop();

 private:
  sdk::Principal checkSession(const std::string& token, const std::string& method);
  std::optional<sdk::Principal> check(const sdk::Credentials& c);
  sdk::Principal keyPrincipal(const std::string& key);
  void poll();
  void flushLastUsed();

  AuthStore& store_;
  JwtIssuer& jwt_;
  sdk::RateLimiter failures_;
  std::mutex mutex_;
  std::unordered_map<std::string, sdk::Principal> cache_;
  std::map<std::string, std::int64_t> last_used_;
  std::atomic<bool> running_{false};
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  std::thread poller_;
};

}  // namespace svc::plugins::auth
