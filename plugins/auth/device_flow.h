// The OAuth 2.0 device flow (RFC 8628) by which a human approves an agent once and the agent
// receives its keys: starting a login, polling it (at once, or held until it is decided), and
// deciding it. Held polls are answered when this process decides the code, or within half a
// second when another process (or a race) did.
#pragma once

#include "auth_store.h"
#include "jwt_issuer.h"
#include "keys.h"
#include "settings.h"

#include <svc/sdk/plugin.h>
#include <svc/sdk/rate_limit.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace svc::plugins::auth {

class DeviceFlow {
 public:
  DeviceFlow(sdk::PluginContext& context, AuthStore& store, JwtIssuer& jwt, KeyManager& keys,
             const AuthSettings& settings);
  ~DeviceFlow() { stop(); }

  /// Registers starting a device login and polling it for its tokens.
  void registerRoutes(sdk::RouteRegistry& routes);
  /// Approves (for user, whose account is created on its first approval) or denies a pending
  /// code and answers the agents waiting on it. @param code the normalized user code.
  /// @return the account id ("" on deny), or nullopt when no pending code matches (unknown,
  /// expired, or decided a moment ago).
  std::optional<std::string> decide(const std::string& code, std::optional<User> user,
                                    bool approve);
  /// Starts the watcher of held polls.
  void start();
  /// Stops the watcher and ends every held poll.
  void stop();

 private:
  struct Waiter {
    std::string code_hash;
    std::weak_ptr<sdk::Stream> stream;
  };
  struct Evaluation {
    sdk::Response response;
    bool pending = false;
    std::string device_id;
    std::int64_t expires_us = 0;
  };

  sdk::Response startLogin(sdk::Request& r);
  sdk::Response token(sdk::Request& r);
  Evaluation evaluate(const std::string& code_hash, bool waiting);
  void dropWaiter(const std::string& device_id, const std::weak_ptr<sdk::Stream>& gone);
  void wakeWaiters(const std::string& device_id);
  void watchWaiters();
  void answerWaiter(sdk::Stream& stream, const std::string& code_hash);

  sdk::PluginContext& context_;
  AuthStore& store_;
  JwtIssuer& jwt_;
  KeyManager& keys_;
  const AuthSettings& settings_;
  sdk::RateLimiter start_limit_;
  sdk::RateLimiter poll_limit_;
  std::mutex waiters_mutex_;
  std::map<std::string, std::vector<Waiter>> waiters_;
  std::atomic<bool> watching_{false};
  std::mutex watch_mutex_;
  std::condition_variable watch_wake_;
  std::thread watcher_;
};

}  // namespace svc::plugins::auth
