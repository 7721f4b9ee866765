#include "auth_service.h"

#include "key_format.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

namespace svc::plugins::auth {

using sdk::sha256Hex;

namespace {
sdk::HttpError failed(const std::string& why) {
  return sdk::HttpError(401, "authentication_failed", why);
}
}  // namespace

std::optional<sdk::Principal> AuthService::authenticate(const sdk::Credentials& c) {
  std::optional<std::string> session;
  if (c.authorization.empty()) {
    session = sdk::cookieValue(c.cookie, sdk::kSessionCookie);
    if (!session || session->empty()) return std::nullopt;
  }
  // An address that keeps presenting bad credentials is slowed down, good ones included.
  if (int wait = failures_.peek(c.client_address)) {
    throw sdk::RateLimiter::throttled(wait, "failed authentications from this address");
  }
  try {
    return session ? checkSession(*session, c.method) : check(c);
  } catch (const sdk::HttpError& e) {
    if (e.status() == 401) failures_.take(c.client_address);
    throw;
  }
}

// A browser session (the dashboard's cookie) may read through the API, for the browser's
// EventSource, which cannot send headers. Changes need a key or token: a cookie rides along on
// requests other sites make, a header does not.
sdk::Principal AuthService::checkSession(const std::string& token, const std::string& method) {
  if (method != "GET" && method != "HEAD") {
    throw sdk::HttpError(403, "permission_denied",
                         "A browser session can only read through the API; send "
                         "Authorization: Bearer <key or token> to change things.");
  }
  auto user_id = token.size() <= 200 ? store_.sessionUser(sha256Hex(token)) : std::nullopt;
  if (!user_id) throw failed("The browser session has ended; sign in again.");
  auto user = store_.userById(*user_id);
  if (!user) throw failed("The browser session has ended; sign in again.");
  if (user->account_id.empty()) {
    throw sdk::HttpError(403, "permission_denied",
                         "This person has no account yet; approve a device login first.");
  }
  sdk::Principal p;
  p.kind = sdk::PrincipalKind::kUser;
  p.account_id = user->account_id;
  p.user_id = user->id;
  return p;
}

std::optional<sdk::Principal> AuthService::check(const sdk::Credentials& c) {
  auto credential =
      c.authorization.size() <= 4096 ? sdk::bearerCredential(c.authorization) : std::nullopt;
  if (!credential) throw failed("Send Authorization: Bearer <key or token>.");
  if (credential->rfind("svc_", 0) == 0) return keyPrincipal(*credential);
  bool expired = false;
  auto claims = jwt_.verify(*credential, expired);
  if (expired) {
    throw sdk::HttpError(401, "token_expired",
                         "The access token has expired; refresh it and retry once.");
  }
  if (!claims) throw failed("The credential is not a valid key or access token.");
  sdk::Principal p;
  p.kind = sdk::PrincipalKind::kUser;
  p.account_id = claims->account_id;
  p.user_id = claims->user_id;
  return p;
}

bool AuthService::isActive(const std::string& account_id) {
  auto plan = store_.accountPlan(account_id);
  return plan && *plan == "active";
}

void AuthService::forget(const std::string& key_hash) {
  std::lock_guard lock(mutex_);
  cache_.erase(key_hash);
}

void AuthService::start() {
  running_ = true;
  poller_ = std::thread([this] { poll(); });
}

void AuthService::stop() {
  if (!running_.exchange(false)) return;
  wake_.notify_all();
  poller_.join();
  flushLastUsed();
}

sdk::Principal AuthService::keyPrincipal(const std::string& key) {
  if (!checkKey(key)) throw failed("The key is malformed or its checksum is wrong.");
  const std::string hash = sha256Hex(key);
  {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(hash);
    if (it != cache_.end()) {
      last_used_[it->second.key_id] = sdk::nowMicros();
      return it->second;
    }
  }
  auto record = store_.keyByHash(hash);
  if (!record || record->revoked_us != 0) throw failed("The key is unknown or revoked.");
  sdk::Principal p;
  p.kind =
      record->kind == "identity" ? sdk::PrincipalKind::kIdentity : sdk::PrincipalKind::kManagement;
  p.account_id = record->account_id;
  p.user_id = record->created_by;
  p.key_id = record->id;
  p.key_label = record->label;
  p.key_prefix = record->prefix;
  p.bound_identity = record->identity_id;
  std::lock_guard lock(mutex_);
  cache_[hash] = p;
  last_used_[p.key_id] = sdk::nowMicros();
  return p;
}

void AuthService::poll() {
  std::int64_t since = sdk::nowMicros();
  int ticks = 0;
  std::unique_lock lock(wake_mutex_);
  while (running_) {
    wake_.wait_for(lock, std::chrono::milliseconds(500));
    if (!running_) break;
    lock.unlock();
    try {
      std::int64_t now = sdk::nowMicros();
      // Overlap the windows so a revocation committed while we looked is not missed.
      for (const auto& hash : store_.revokedSince(since - 2000000)) forget(hash);
      since = now;
      if (++ticks % 20 == 0) flushLastUsed();
    } catch (...) {
      // The database may be briefly unreachable; try again next tick.
    }
    lock.lock();
  }
}

void AuthService::flushLastUsed() {
  std::vector<std::pair<std::string, std::int64_t>> batch;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, at] : last_used_) batch.emplace_back(id, at);
    last_used_.clear();
  }
  try {
    store_.touchKeys(batch);
  } catch (...) {
  }
}

}  // namespace svc::plugins::auth
