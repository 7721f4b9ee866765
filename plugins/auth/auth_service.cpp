#include "auth_service.h"

#include "key_format.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

namespace svc::plugins::auth {

using sdk::sha256Hex;

namespace {

constexpr std::int64_t kRevocationOverlapUs = 30'000'000;

sdk::HttpError failed(const std::string& why) {
  return sdk::HttpError(401, "authentication_failed", why);
}

}  // namespace

std::string failureKey(std::string_view credential) {
  for (KeyKind kind : {KeyKind::kManagement, KeyKind::kIdentity}) {
    std::string_view prefix = keyPrefix(kind);
    if (credential.substr(0, prefix.size()) == prefix && credential.size() >= prefix.size() + 4) {
      return std::string(credential.substr(0, prefix.size() + 4));
    }
  }
  return "sha256:" + sha256Hex(credential);
}

std::optional<sdk::Principal> AuthService::authenticate(const sdk::Credentials& c) {
  const std::string& address = c.client_address;
  if (c.authorization.empty()) {
    auto session = sdk::cookieValue(c.cookie, sdk::kSessionCookie);
    if (!session || session->empty()) return std::nullopt;
    return guarded(address, failureKey(*session), true, [&] { return checkSession(*session, c); });
  }
  auto credential =
      c.authorization.size() <= 4096 ? sdk::bearerCredential(c.authorization) : std::nullopt;
  if (!credential) {
    return guarded(address, failureKey(c.authorization), false, []() -> sdk::Principal {
      throw failed("Send Authorization: Bearer <key or token>.");
    });
  }
  const std::string limit_key = failureKey(*credential);
  if (credential->rfind("svc_", 0) != 0) {
    return guarded(address, limit_key, false, [&] { return checkToken(*credential); });
  }
  if (!checkKey(*credential)) {
    return guarded(address, limit_key, false, []() -> sdk::Principal {
      throw failed("The key is malformed or its checksum is wrong.");
    });
  }
  const std::string hash = sha256Hex(*credential);
  // A key this process has already found valid needs no lookup, so it is served whatever the
  // limits say: a neighbour's bad keys do not lock a working agent out.
  if (auto known = cachedKey(hash)) return known;
  return guarded(address, limit_key, true, [&] { return lookUpKey(hash); });
}

sdk::Principal AuthService::guarded(const std::string& address, const std::string& limit_key,
                                    bool lookup, const std::function<sdk::Principal()>& check) {
  // A check that needs the database waits for the limits: a throttled client then costs no
  // lookup and learns nothing, so guessing stays limited. One that needs none (a checksum, a
  // signature) runs first, and a good credential passes whatever the limits say.
  if (lookup) admit(address, limit_key);
  try {
    return check();
  } catch (const sdk::HttpError& e) {
    // Only rejected credentials count; a 403 is a good credential asking for too much.
    if (e.status() != 401) throw;
    if (!lookup) admit(address, limit_key);
    by_key_.take(limit_key);
    by_address_.take(address);
    throw;
  }
}

void AuthService::admit(const std::string& address, const std::string& limit_key) {
  if (int wait = by_key_.peek(limit_key)) {
    const bool key = limit_key.rfind("svc_", 0) == 0;
    throw sdk::RateLimiter::throttled(
        wait, "failed authentications with " +
                  (key ? "key " + sdk::quoteForDetail(limit_key) + "\xE2\x80\xA6"
                       : std::string("this credential")));
  }
  if (int wait = by_address_.peek(address)) {
    throw sdk::RateLimiter::throttled(wait, "failed authentications from this address");
  }
}

// A browser session (the dashboard's cookie) may read through the API, for the browser's
// EventSource, which cannot send headers. A change needs a key or token, or the session's CSRF
// token in its header (a dashboard page's own request): a cookie rides along on requests other
// sites make, a header does not.
sdk::Principal AuthService::checkSession(const std::string& token, const sdk::Credentials& c) {
  if (c.method != "GET" && c.method != "HEAD" &&
      !(token.size() <= 200 && sdk::constantTimeEquals(c.csrf, sdk::sessionCsrf(token)))) {
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
  p.credential = sessionCredential(sha256Hex(token));
  return p;
}

sdk::Principal AuthService::checkToken(const std::string& jwt) {
  bool expired = false;
  auto claims = jwt_.verify(jwt, expired);
  if (expired) {
    throw sdk::HttpError(401, "token_expired",
                         "The access token has expired; refresh it and retry once.");
  }
  if (!claims) throw failed("The credential is not a valid key or access token.");
  if (!claims->family.empty() && families_.contains(claims->family)) {
    throw failed("The sign-in this access token belongs to has ended; sign in again.");
  }
  sdk::Principal p;
  p.kind = sdk::PrincipalKind::kUser;
  p.account_id = claims->account_id;
  p.user_id = claims->user_id;
  if (!claims->family.empty()) p.credential = familyCredential(claims->family);
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
  // Access tokens live an hour: the sign-ins ended within it are refused from the first request.
  families_.load(store_, sdk::nowMicros() - (kAccessLifetimeSeconds + 300) * std::int64_t{1000000});
  running_ = true;
  poller_ = std::thread([this] { poll(); });
}

void AuthService::stop() {
  if (!running_.exchange(false)) return;
  wake_.notify_all();
  poller_.join();
  flushLastUsed();
}

std::optional<sdk::Principal> AuthService::cachedKey(const std::string& hash) {
  std::lock_guard lock(mutex_);
  auto it = cache_.find(hash);
  if (it == cache_.end()) return std::nullopt;
  last_used_[it->second.key_id] = sdk::nowMicros();
  return it->second;
}

sdk::Principal AuthService::lookUpKey(const std::string& hash) {
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
  p.credential = keyCredential(record->id);
  std::lock_guard lock(mutex_);
  // Bounded: past kMaxCachedKeys distinct keys the cache starts over, each key then costs one
  // lookup again, so no number of accounts and keys grows this process without limit.
  if (cache_.size() >= kMaxCachedKeys) cache_.clear();
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
      // Overlap the windows so a revocation committed while we looked is not missed, nor one
      // whose transaction took long to commit after it stamped its time.
      for (const auto& hash : store_.revokedSince(since - kRevocationOverlapUs)) forget(hash);
      families_.load(store_, since - kRevocationOverlapUs);
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
