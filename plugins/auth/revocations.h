// What a revocation ends besides new requests: the held requests a credential opened (the
// kernel's AccessRevocations, on every svcd), and the access tokens of an ended sign-in.
//
// Credentials are named for Principal::credential: `key:ID`, `session:HASH` (the browser
// session's stored hash) and `family:ID` (the refresh-token family an access token's `sid` names).
#pragma once

#include "auth_store.h"

#include <svc/sdk/auth.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace svc::plugins::auth {

std::string keyCredential(const std::string& key_id);
std::string sessionCredential(const std::string& token_hash);
std::string familyCredential(const std::string& family_id);

/// Ends the held requests of a revoked credential, in the revoking transaction.
class Revoker {
 public:
  /// @param kernel the kernel's service; null (a unit test's context) ends nothing held.
  explicit Revoker(std::shared_ptr<sdk::AccessRevocations> kernel) : kernel_(std::move(kernel)) {}
  /// @param credential as keyCredential() etc. name it. @param detail what a held wait is told.
  void revoke(Poco::Data::Session& s, const std::string& account_id, const std::string& credential,
              const std::string& detail);

 private:
  std::shared_ptr<sdk::AccessRevocations> kernel_;
};

/// The refresh-token families revoked while their access tokens may still be unexpired: an
/// access token of one is refused. Filled by this process's revocations at once and by the
/// store's (every svcd's) through AuthService's poller. Thread-safe.
class RevokedFamilies {
 public:
  /// @param keep_micros how long an entry matters: the access tokens' lifetime.
  explicit RevokedFamilies(std::int64_t keep_micros) : keep_micros_(keep_micros) {}
  void add(const std::string& family_id, std::int64_t revoked_us);
  /// Adds what the store says was revoked since since_us.
  void load(AuthStore& store, std::int64_t since_us);
  bool contains(const std::string& family_id) const;

 private:
  const std::int64_t keep_micros_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::int64_t> revoked_;  // family -> when
};

}  // namespace svc::plugins::auth
