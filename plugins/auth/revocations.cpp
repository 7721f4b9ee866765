#include "revocations.h"

#include <svc/sdk/util.h>

#include <iterator>

namespace svc::plugins::auth {

std::string keyCredential(const std::string& key_id) {
  return "key:" + key_id;
}

std::string sessionCredential(const std::string& token_hash) {
  return "session:" + token_hash;
}

std::string familyCredential(const std::string& family_id) {
  return "family:" + family_id;
}

void Revoker::revoke(Poco::Data::Session& s, const std::string& account_id,
                     const std::string& credential, const std::string& detail) {
  if (!kernel_ || account_id.empty()) return;
  sdk::Revocation r;
  r.account_id = account_id;
  r.credential = credential;
  r.detail = detail;
  kernel_->revoke(s, r);
}

void RevokedFamilies::add(const std::string& family_id, std::int64_t revoked_us) {
  std::lock_guard lock(mutex_);
  revoked_[family_id] = revoked_us;
  // Bounded by the revocations of one token lifetime: older ones name only expired tokens.
  const std::int64_t horizon = sdk::nowMicros() - keep_micros_;
  for (auto it = revoked_.begin(); it != revoked_.end();) {
    it = it->second < horizon ? revoked_.erase(it) : std::next(it);
  }
}

void RevokedFamilies::load(AuthStore& store, std::int64_t since_us) {
  for (const auto& [family, at] : store.familiesRevokedSince(since_us)) add(family, at);
}

bool RevokedFamilies::contains(const std::string& family_id) const {
  std::lock_guard lock(mutex_);
  return revoked_.count(family_id) > 0;
}

}  // namespace svc::plugins::auth
