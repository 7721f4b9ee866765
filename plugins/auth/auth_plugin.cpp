// auth: accounts, users, keys and sessions. It offers the kernel's Authenticator (management and
// identity keys, JWT access tokens) and the PlanService, and runs the OAuth 2.0 device flow
// (RFC 8628) by which a human approves an agent once and the agent receives its keys.
#include "auth_store.h"
#include "jwt_issuer.h"
#include "key_format.h"
#include "passwords.h"

#include <svc/sdk/plans.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/rate_limit.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/NumberParser.h>
#include <Poco/String.h>

#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace svc::plugins::auth {

namespace {

constexpr const char* kUserCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ";
constexpr const char* kDeviceGrant = "urn:ietf:params:oauth:grant-type:device_code";
constexpr int kAccessLifetime = 3600;
constexpr std::int64_t kRefreshLifetimeUs = 90LL * 24 * 3600 * 1000000;

std::string newUserCode() {
  std::string code;
  while (code.size() < 8) {
    unsigned char b;
    RAND_bytes(&b, 1);
    if (b >= 240) continue;  // 240 = 12 * 20: no modulo bias
    code.push_back(kUserCodeAlphabet[b % 20]);
  }
  return code;
}

// Accepts XXXX-XXXX in any case, with or without the hyphen. @return the 8 letters, or "".
std::string normalizeUserCode(const std::string& input) {
  std::string code;
  for (char c : input) {
    if (c == '-' || c == ' ') continue;
    code.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  if (code.size() != 8) return "";
  for (char c : code) {
    if (!std::strchr(kUserCodeAlphabet, c)) return "";
  }
  return code;
}

std::string displayUserCode(const std::string& code) {
  return code.substr(0, 4) + "-" + code.substr(4);
}

// A string field of a JSON or form body; nullopt when absent; 400 when not a string.
std::optional<std::string> field(const sdk::Request& r, const std::string& name) {
  auto f = r.form.find(name);
  if (f != r.form.end()) return f->second;
  if (!r.json || !r.json->has(name) || r.json->isNull(name)) return std::nullopt;
  Poco::Dynamic::Var v = r.json->get(name);
  if (!v.isString()) throw sdk::HttpError::invalid(name, "must be a string");
  return v.convert<std::string>();
}

std::string boundedField(const sdk::Request& r, const std::string& name, std::size_t max,
                         bool required) {
  auto v = field(r, name);
  if (!v) {
    if (required) throw sdk::HttpError::invalid(name, "this field is required");
    return "";
  }
  if (v->size() > max) {
    throw sdk::HttpError::invalid(name, "at most " + std::to_string(max) + " characters");
  }
  for (unsigned char c : *v) {
    if (c < 0x20) throw sdk::HttpError::invalid(name, "must not contain control characters");
  }
  return *v;
}

// Answers that carry credentials (or could) must never be cached.
sdk::Response noStore(int status, const Poco::JSON::Object::Ptr& body) {
  sdk::Response r = sdk::Response::json(status, body);
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("Pragma", "no-cache");
  return r;
}

sdk::Response oauthError(int status, const std::string& error, const std::string& description) {
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("error", error);
  body->set("error_description", description);
  return noStore(status, body);
}

Poco::JSON::Object::Ptr keyJson(const KeyRecord& k) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", k.id);
  o->set("kind", k.kind);
  o->set("label", k.label);
  o->set("prefix", k.prefix);
  o->set("identity",
         k.identity_id.empty() ? Poco::Dynamic::Var() : Poco::Dynamic::Var(k.identity_id));
  o->set("created_dt", sdk::isoTimestamp(k.created_us));
  o->set("last_used_dt", k.last_used_us ? Poco::Dynamic::Var(sdk::isoTimestamp(k.last_used_us))
                                        : Poco::Dynamic::Var());
  return o;
}

}  // namespace

// Checks credentials. Keys are looked up once and then served from memory; a revocation clears
// the entry here at once and, through the poller, in every other svcd process within a second.
class AuthService : public sdk::Authenticator, public sdk::PlanService {
 public:
  AuthService(AuthStore& store, JwtIssuer& jwt, int failures_per_minute)
      : store_(store), jwt_(jwt), failures_(failures_per_minute) {}
  ~AuthService() override { stop(); }

  std::optional<sdk::Principal> authenticate(const sdk::Credentials& c) override {
    if (c.authorization.empty()) return std::nullopt;
    // An address that keeps presenting bad credentials is slowed down, good ones included.
    if (int wait = failures_.peek(c.client_address)) {
      throw sdk::RateLimiter::throttled(wait, "failed authentications from this address");
    }
    try {
      return check(c);
    } catch (const sdk::HttpError& e) {
      if (e.status() == 401) failures_.take(c.client_address);
      throw;
    }
  }

  std::optional<sdk::Principal> check(const sdk::Credentials& c) {
    const std::string prefix = "Bearer ";
    if (c.authorization.size() > 4096 || c.authorization.compare(0, prefix.size(), prefix) != 0) {
      throw failed("Send Authorization: Bearer <key or token>.");
    }
    const std::string credential = Poco::trim(c.authorization.substr(prefix.size()));
    if (credential.rfind("svc_", 0) == 0) return keyPrincipal(credential);
    bool expired = false;
    auto claims = jwt_.verify(credential, expired);
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

  bool isActive(const std::string& account_id) override {
    auto plan = store_.accountPlan(account_id);
    return plan && *plan == "active";
  }

  void forget(const std::string& key_hash) {
    std::lock_guard lock(mutex_);
    cache_.erase(key_hash);
  }

  void start() {
    running_ = true;
    poller_ = std::thread([this] { poll(); });
  }

  void stop() {
    if (!running_.exchange(false)) return;
    wake_.notify_all();
    poller_.join();
    flushLastUsed();
  }

 private:
  static sdk::HttpError failed(const std::string& why) {
    return sdk::HttpError(401, "authentication_failed", why);
  }

  sdk::Principal keyPrincipal(const std::string& key) {
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
    p.kind = record->kind == "identity" ? sdk::PrincipalKind::kIdentity
                                        : sdk::PrincipalKind::kManagement;
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

  void poll() {
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

  void flushLastUsed() {
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

class AuthPlugin : public sdk::Plugin {
 public:
  AuthPlugin() {
    info_.name = "auth";
    info_.version = "0.1.0";
    info_.description = "Accounts, users, keys, sessions and the device login.";
    info_.config = {
        {"auth.local_users", "true", "allow local users (svcctl users add) to sign in", false},
        {"auth.oidc.issuer", "", "OpenID Connect provider for human sign-in", false},
        {"auth.oidc.client_id", "", "OpenID Connect client id", false},
        {"auth.oidc.client_secret", "", "OpenID Connect client secret", true},
        {"accounts.default_plan", "active", "plan of new accounts: active or none", false},
        {"auth.device.expires_seconds", "600", "lifetime of a device code", false},
        {"auth.device.interval_seconds", "5", "polling interval of a device code", false},
        {"auth.rate.device_per_minute", "30", "device logins one address may start a minute",
         false},
        {"auth.rate.token_per_minute", "600", "device token polls one address may make a minute",
         false},
        {"auth.rate.failed_auth_per_minute", "30",
         "failed authentications from one address a minute before it gets 429", false},
    };
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    const auto& c = context.config();
    default_plan_ = c.getString("accounts.default_plan");
    if (default_plan_ != "active" && default_plan_ != "none") {
      throw std::runtime_error("accounts.default_plan must be active or none");
    }
    expires_seconds_ = c.getInt("auth.device.expires_seconds");
    interval_seconds_ = c.getInt("auth.device.interval_seconds");
    if (expires_seconds_ < 1 || interval_seconds_ < 0) {
      throw std::runtime_error("auth.device.expires_seconds and interval_seconds must be positive");
    }
    issuer_url_ = c.getString("public.base_url");
    dashboard_url_ = c.getString("dashboard.url");
    store_ = std::make_unique<AuthStore>(context.database());
    device_limit_ = std::make_unique<sdk::RateLimiter>(c.getInt("auth.rate.device_per_minute"));
    token_limit_ = std::make_unique<sdk::RateLimiter>(c.getInt("auth.rate.token_per_minute"));
    failed_auth_per_minute_ = c.getInt("auth.rate.failed_auth_per_minute");
  }

  std::vector<sdk::Migration> migrations() const override { return authMigrations(); }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    using sdk::AuthNeed;
    using sdk::BodyKind;
    auto add = [&](const char* method, const char* pattern, AuthNeed need, BodyKind body,
                   const char* summary, sdk::Handler h) {
      routes.add({method, pattern, need, body, 0, summary, std::move(h)});
    };
    add("POST", "/api/auth/device/", AuthNeed::kNone, BodyKind::kJsonOrForm,
        "Start a device login (RFC 8628).", [this](sdk::Request& r) { return startDevice(r); });
    add("POST", "/api/auth/device/token/", AuthNeed::kNone, BodyKind::kJsonOrForm,
        "Poll a device login for its tokens.", [this](sdk::Request& r) { return deviceToken(r); });
    add("POST", "/api/auth/token/refresh/", AuthNeed::kNone, BodyKind::kJson,
        "Exchange a refresh token for new tokens.", [this](sdk::Request& r) { return refresh(r); });
    add("POST", "/api/auth/logout/", AuthNeed::kNone, BodyKind::kJson,
        "Revoke a refresh token's family.", [this](sdk::Request& r) { return logout(r); });
    add("GET", "/api/auth/jwks/", AuthNeed::kNone, BodyKind::kJson, "Public keys of access tokens.",
        [this](sdk::Request&) { return sdk::Response::json(200, jwt_->jwks()); });
    add("POST", "/api/auth/keys/", AuthNeed::kAccount, BodyKind::kJson, "Create a management key.",
        [this](sdk::Request& r) { return createKey(r, false); });
    add("POST", "/api/auth/keys/identity/", AuthNeed::kAccount, BodyKind::kJson,
        "Create an identity key.", [this](sdk::Request& r) { return createKey(r, true); });
    add("GET", "/api/auth/keys/", AuthNeed::kAccount, BodyKind::kJson, "List keys.",
        [this](sdk::Request& r) { return listKeys(r); });
    add("DELETE", "/api/auth/keys/{id}/", AuthNeed::kAccount, BodyKind::kJson, "Revoke a key.",
        [this](sdk::Request& r) { return revokeKey(r); });
    add("GET", "/api/health/whoami/", AuthNeed::kAnyKey, BodyKind::kJson,
        "Who the presented credential is.", [this](sdk::Request& r) { return whoami(r); });

    add("POST", "/admin/auth/users/", AuthNeed::kOperator, BodyKind::kJson, "Add a local user.",
        [this](sdk::Request& r) { return addUser(r); });
    add("POST", "/admin/auth/device/approve/", AuthNeed::kOperator, BodyKind::kJson,
        "Approve a device code for a user.", [this](sdk::Request& r) { return decide(r, true); });
    add("POST", "/admin/auth/device/deny/", AuthNeed::kOperator, BodyKind::kJson,
        "Deny a device code.", [this](sdk::Request& r) { return decide(r, false); });
    add("POST", "/admin/auth/accounts/{id}/plan/", AuthNeed::kOperator, BodyKind::kJson,
        "Set an account's plan.", [this](sdk::Request& r) { return setPlan(r); });
  }

  void registerServices(sdk::ServiceRegistry& services) override {
    jwt_ = std::make_unique<JwtIssuer>(context_->database(), issuer_url_);
    service_ = std::make_shared<AuthService>(*store_, *jwt_, failed_auth_per_minute_);
    services.offer<sdk::Authenticator>(sdk::kAuthenticatorService, service_);
    services.offer<sdk::PlanService>(sdk::kPlanService, service_);
  }

  void start() override { service_->start(); }

  void stop() override {
    service_->stop();
    std::map<std::string, std::vector<Waiter>> waiters;
    {
      std::lock_guard lock(waiters_mutex_);
      waiters.swap(waiters_);
    }
    for (auto& [id, list] : waiters) {
      for (auto& w : list) {
        if (auto s = w.stream.lock()) s->finish();
      }
    }
  }

 private:
  struct Waiter {
    std::string code_hash;
    std::weak_ptr<sdk::Stream> stream;
  };

  sdk::Response startDevice(sdk::Request& r) {
    device_limit_->takeOrThrow(r.client_address, "device logins started from this address");
    std::string client_id = boundedField(r, "client_id", 200, false);
    DeviceCode d;
    d.id = sdk::newUuid();
    d.client_id = client_id;
    d.status = "pending";
    d.interval_s = interval_seconds_;
    d.expires_us = sdk::nowMicros() + static_cast<std::int64_t>(expires_seconds_) * 1000000;
    do {
      d.user_code = newUserCode();
    } while (store_->userCodeInUse(d.user_code));
    std::string device_code = randomToken(32);
    store_->addDeviceCode(sha256Hex(device_code), d);
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("device_code", device_code);
    o->set("user_code", displayUserCode(d.user_code));
    o->set("verification_uri", dashboard_url_ + "/device");
    o->set("verification_uri_complete",
           dashboard_url_ + "/device?user_code=" + displayUserCode(d.user_code));
    o->set("expires_in", expires_seconds_);
    o->set("interval", interval_seconds_);
    return noStore(200, o);
  }

  sdk::Response deviceToken(sdk::Request& r) {
    token_limit_->takeOrThrow(r.client_address, "token polls from this address");
    const bool form = !r.form.empty() || r.content_type == "application/x-www-form-urlencoded";
    std::optional<std::string> grant, code;
    bool wait = false;
    try {
      grant = field(r, "grant_type");
      code = field(r, "device_code");
      if (!form && r.json && r.json->has("wait") && !r.json->isNull("wait")) {
        Poco::Dynamic::Var w = r.json->get("wait");
        if (!w.isBoolean()) return oauthError(400, "invalid_request", "wait must be a boolean.");
        wait = w.convert<bool>();
      }
    } catch (const sdk::HttpError& e) {
      return oauthError(400, "invalid_request", e.detail());
    }
    if ((form || grant) && grant.value_or("") != kDeviceGrant) {
      return oauthError(400, "unsupported_grant_type",
                        std::string("grant_type must be ") + kDeviceGrant + ".");
    }
    if (!code || code->empty() || code->size() > 200) {
      return oauthError(400, "invalid_request", "device_code is required.");
    }
    const std::string hash = sha256Hex(*code);
    if (!wait) return evaluate(hash, false).response;
    Evaluation first = evaluate(hash, true);
    if (!first.pending) return first.response;
    // Hold the request until the code is decided or expires, at most 120 s.
    // Rounded up, plus a millisecond: waking a hair before the expiry would answer "pending".
    std::int64_t remaining_ms = (first.expires_us - sdk::nowMicros() + 999) / 1000 + 1;
    auto delay = std::chrono::milliseconds(
        std::max<std::int64_t>(0, std::min<std::int64_t>(120000, remaining_ms)));
    std::string device_id = first.device_id;
    return sdk::Response::hold([this, hash, device_id, delay](std::shared_ptr<sdk::Stream> stream) {
      {
        std::lock_guard lock(waiters_mutex_);
        waiters_[device_id].push_back({hash, stream});
      }
      std::weak_ptr<sdk::Stream> weak = stream;
      stream->onClose([this, device_id, weak] { dropWaiter(device_id, weak); });
      stream->expireAfter(delay, [this, hash, weak] {
        if (auto s = weak.lock()) s->respond(evaluate(hash, true).response);
      });
    });
  }

  void dropWaiter(const std::string& device_id, const std::weak_ptr<sdk::Stream>& gone) {
    std::lock_guard lock(waiters_mutex_);
    auto it = waiters_.find(device_id);
    if (it == waiters_.end()) return;
    auto& list = it->second;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const Waiter& w) {
                                return !w.stream.owner_before(gone) && !gone.owner_before(w.stream);
                              }),
               list.end());
    if (list.empty()) waiters_.erase(it);
  }

  // Answers every request waiting on a code that was just decided.
  void wakeWaiters(const std::string& device_id) {
    std::vector<Waiter> list;
    {
      std::lock_guard lock(waiters_mutex_);
      auto it = waiters_.find(device_id);
      if (it == waiters_.end()) return;
      list.swap(it->second);
      waiters_.erase(it);
    }
    for (auto& w : list) {
      if (auto s = w.stream.lock()) s->respond(evaluate(w.code_hash, true).response);
    }
  }

  struct Evaluation {
    sdk::Response response;
    bool pending = false;
    std::string device_id;
    std::int64_t expires_us = 0;
  };

  // One poll of a device code, RFC 8628 section 3.5. Issuing tokens consumes the code in the same
  // transaction, so they are issued exactly once however many polls race.
  Evaluation evaluate(const std::string& code_hash, bool waiting) {
    Evaluation e;
    std::optional<std::string> failure;
    std::string user_id, account_id;
    KeyRecord key_record;
    User issued_to;
    std::string key, refresh_token;
    context_->database().transaction([&](Poco::Data::Session& s) {
      auto d = store_->deviceByHash(s, code_hash);
      if (!d || d->status == "consumed") {
        e.response =
            oauthError(400, "invalid_grant", "The device code is unknown or was already used.");
        return;
      }
      e.device_id = d->id;
      e.expires_us = d->expires_us;
      const std::int64_t now = sdk::nowMicros();
      if (now >= d->expires_us) {
        e.response = oauthError(400, "expired_token", "The device code has expired; start again.");
        return;
      }
      if (!waiting) {
        if (d->last_poll_us &&
            now - d->last_poll_us < static_cast<std::int64_t>(d->interval_s) * 1000000) {
          int interval = d->interval_s + 5;
          store_->notePoll(s, d->id, now, interval);
          Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
          body->set("error", "slow_down");
          body->set("error_description",
                    "Polling too fast; wait " + std::to_string(interval) + " s.");
          body->set("interval", interval);
          e.response = noStore(400, body);
          return;
        }
        store_->notePoll(s, d->id, now, d->interval_s);
      }
      if (d->status == "pending") {
        e.pending = true;
        e.response = oauthError(400, "authorization_pending",
                                "The user has not approved this code yet; poll again.");
        return;
      }
      if (d->status == "denied") {
        e.response = oauthError(400, "access_denied", "The user denied this code.");
        return;
      }
      if (!store_->consume(s, d->id)) {
        e.response = oauthError(400, "invalid_grant", "The device code was already used.");
        return;
      }
      auto user = store_->userById(d->user_id);
      if (!user || user->account_id.empty()) {
        failure = "approved by a user without an account";
        return;
      }
      user_id = user->id;
      account_id = user->account_id;
      key = newKey(KeyKind::kManagement);
      std::string label = d->client_id.empty() ? "device login" : "device login: " + d->client_id;
      key_record = store_->addKey(s, account_id, "management", "", label, visiblePrefix(key),
                                  sha256Hex(key), user_id);
      refresh_token = "svc_rt_" + randomToken(32);
      store_->addRefresh(s, sdk::newUuid(), user_id, account_id, sha256Hex(refresh_token),
                         now + kRefreshLifetimeUs);
      issued_to = *user;
    });
    if (failure) throw std::runtime_error(*failure);
    if (key.empty()) return e;
    // Signed after the commit: the signing key may need creating, which takes its own transaction.
    std::string access = jwt_->issue(user_id, account_id, kAccessLifetime);
    Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
    body->set("access", access);
    body->set("refresh", refresh_token);
    body->set("management_key", key);
    Poco::JSON::Object::Ptr uo = new Poco::JSON::Object;
    uo->set("id", issued_to.id);
    uo->set("email", issued_to.email);
    uo->set("name", issued_to.name);
    body->set("user", uo);
    body->set("access_token", access);
    body->set("refresh_token", refresh_token);
    body->set("token_type", "Bearer");
    body->set("expires_in", kAccessLifetime);
    e.response = noStore(200, body);
    publishKey("key.created", key_record);
    return e;
  }

  sdk::Response tokens(const std::string& user_id, const std::string& account_id,
                       const std::string& refresh_token) {
    std::string access = jwt_->issue(user_id, account_id, kAccessLifetime);
    Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
    body->set("access", access);
    body->set("refresh", refresh_token);
    return noStore(200, body);
  }

  // Rotation: each refresh token works once; presenting a retired one revokes its whole family.
  sdk::Response refresh(sdk::Request& r) {
    std::string presented = boundedField(r, "refresh", 200, true);
    std::optional<sdk::HttpError> error;
    std::string user_id, account_id, next;
    context_->database().transaction([&](Poco::Data::Session& s) {
      auto t = store_->refreshByHash(s, sha256Hex(presented));
      const std::int64_t now = sdk::nowMicros();
      if (!t || t->revoked_us || t->expires_us <= now) {
        error = sdk::HttpError(401, "authentication_failed", "The refresh token is not valid.");
        return;
      }
      if (t->retired_us || !store_->retire(s, t->id)) {
        store_->revokeFamily(s, t->family_id);
        error = sdk::HttpError(401, "authentication_failed",
                               "The refresh token was already used; its session is revoked.");
        return;
      }
      user_id = t->user_id;
      account_id = t->account_id;
      next = "svc_rt_" + randomToken(32);
      store_->addRefresh(s, t->family_id, user_id, account_id, sha256Hex(next),
                         now + kRefreshLifetimeUs);
    });
    if (error) throw *error;
    return tokens(user_id, account_id, next);
  }

  sdk::Response logout(sdk::Request& r) {
    std::string presented = boundedField(r, "refresh", 200, true);
    bool found = false;
    context_->database().transaction([&](Poco::Data::Session& s) {
      auto t = store_->refreshByHash(s, sha256Hex(presented));
      if (!t) return;
      found = true;
      store_->revokeFamily(s, t->family_id);
    });
    if (!found)
      throw sdk::HttpError(401, "authentication_failed", "The refresh token is not valid.");
    return sdk::Response::noContent();
  }

  sdk::Response createKey(sdk::Request& r, bool identity_key) {
    std::string label = boundedField(r, "label", 200, false);
    std::string identity;
    if (identity_key) {
      identity = boundedField(r, "identity", 64, false);
      if (identity.empty()) identity = boundedField(r, "identity_uuid", 64, false);
      if (identity.empty()) throw sdk::HttpError::invalid("identity", "this field is required");
      identity = Poco::toLower(identity);
      auto directory =
          context_->services().find<sdk::IdentityDirectory>(sdk::kIdentityDirectoryService);
      if (!sdk::isUuid(identity) || !directory ||
          !directory->find(r.principal.account_id, identity)) {
        throw sdk::HttpError::notFound("identity");
      }
    }
    KeyKind kind = identity_key ? KeyKind::kIdentity : KeyKind::kManagement;
    std::string key = newKey(kind);
    KeyRecord record;
    std::string creator = r.principal.user_id;
    context_->database().transaction([&](Poco::Data::Session& s) {
      record = store_->addKey(s, r.principal.account_id, identity_key ? "identity" : "management",
                              identity, label, visiblePrefix(key), sha256Hex(key), creator);
    });
    publishKey("key.created", record);
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("id", record.id);
    o->set("key", key);
    o->set("kind", record.kind);
    if (identity_key) o->set("identity", identity);
    o->set("label", record.label);
    o->set("prefix", record.prefix);
    o->set("created_dt", sdk::isoTimestamp(record.created_us));
    return noStore(201, o);
  }

  sdk::Response listKeys(sdk::Request& r) {
    auto keys = store_->keysOf(r.principal.account_id);
    int limit = 50, offset = 0;
    if (auto l = r.queryParam("limit")) {
      if (!Poco::NumberParser::tryParse(*l, limit) || limit < 1) {
        throw sdk::HttpError::invalid("limit", "must be a positive integer");
      }
      limit = std::min(limit, 200);
    }
    if (auto o = r.queryParam("offset")) {
      if (!Poco::NumberParser::tryParse(*o, offset) || offset < 0) {
        throw sdk::HttpError::invalid("offset", "must be a non-negative integer");
      }
    }
    Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
    for (std::size_t i = static_cast<std::size_t>(offset);
         i < keys.size() && results->size() < static_cast<std::size_t>(limit); ++i) {
      results->add(keyJson(keys[i]));
    }
    auto page = [&](int at) {
      return r.base_url + "/api/auth/keys/?limit=" + std::to_string(limit) +
             "&offset=" + std::to_string(at);
    };
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("count", static_cast<int>(keys.size()));
    o->set("next", offset + limit < static_cast<int>(keys.size())
                       ? Poco::Dynamic::Var(page(offset + limit))
                       : Poco::Dynamic::Var());
    o->set("previous", offset > 0 ? Poco::Dynamic::Var(page(std::max(0, offset - limit)))
                                  : Poco::Dynamic::Var());
    o->set("results", results);
    return sdk::Response::json(200, o);
  }

  sdk::Response revokeKey(sdk::Request& r) {
    auto revoked = store_->revokeKey(r.principal.account_id, r.params.at("id"));
    if (!revoked) throw sdk::HttpError::notFound("key");
    // The hash is not kept in the record; clear this process's cache by re-reading revocations.
    for (const auto& hash : store_->revokedSince(revoked->revoked_us)) service_->forget(hash);
    publishKey("key.revoked", *revoked);
    return sdk::Response::noContent();
  }

  sdk::Response whoami(sdk::Request& r) {
    static const char* kinds[] = {"none", "user", "management", "identity"};
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("kind", kinds[static_cast<int>(r.principal.kind)]);
    Poco::JSON::Object::Ptr account = new Poco::JSON::Object;
    account->set("id", r.principal.account_id);
    o->set("account", account);
    Poco::Dynamic::Var user;
    if (!r.principal.user_id.empty()) {
      if (auto u = cachedUser(r.principal.user_id)) {
        Poco::JSON::Object::Ptr uo = new Poco::JSON::Object;
        uo->set("id", u->id);
        uo->set("email", u->email);
        uo->set("name", u->name);
        user = uo;
      }
    }
    o->set("user", user);
    if (r.identity) {
      Poco::JSON::Object::Ptr io = new Poco::JSON::Object;
      io->set("uuid", r.identity->uuid);
      io->set("name", r.identity->name);
      o->set("identity", io);
    } else {
      o->set("identity", Poco::Dynamic::Var());
    }
    if (!r.principal.key_id.empty()) {
      Poco::JSON::Object::Ptr ko = new Poco::JSON::Object;
      ko->set("id", r.principal.key_id);
      ko->set("label", r.principal.key_label);
      ko->set("prefix", r.principal.key_prefix);
      o->set("key", ko);
    } else {
      o->set("key", Poco::Dynamic::Var());
    }
    return sdk::Response::json(200, o);
  }

  // whoami names the user on every call; users change rarely, so a minute-old copy is fine and
  // keeps the database off the hot path.
  std::optional<User> cachedUser(const std::string& id) {
    const std::int64_t now = sdk::nowMicros();
    {
      std::lock_guard lock(users_mutex_);
      auto it = users_.find(id);
      if (it != users_.end() && now - it->second.first < 60000000) return it->second.second;
    }
    auto user = store_->userById(id);
    if (!user) return std::nullopt;
    std::lock_guard lock(users_mutex_);
    if (users_.size() > 100000) users_.clear();
    users_[id] = {now, *user};
    return user;
  }

  sdk::Response addUser(sdk::Request& r) {
    std::string email = Poco::toLower(Poco::trim(boundedField(r, "email", 254, true)));
    auto at = email.find('@');
    if (at == std::string::npos || at == 0 || at + 1 >= email.size() ||
        email.find(' ') != std::string::npos) {
      throw sdk::HttpError::invalid("email", "must be an email address");
    }
    std::string password = boundedField(r, "password", 1024, true);
    if (password.size() < 8) throw sdk::HttpError::invalid("password", "at least 8 characters");
    std::string name = boundedField(r, "name", 200, false);
    if (name.empty()) name = email.substr(0, at);
    auto user = store_->addUser(email, name, hashPassword(password));
    if (!user) throw sdk::HttpError(409, "conflict", "A user with this email already exists.");
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("id", user->id);
    o->set("email", user->email);
    o->set("name", user->name);
    return sdk::Response::json(201, o);
  }

  sdk::Response decide(sdk::Request& r, bool approve) {
    std::string code = normalizeUserCode(boundedField(r, "user_code", 32, true));
    if (code.empty()) throw sdk::HttpError::invalid("user_code", "must look like XXXX-XXXX");
    auto device = store_->pendingByUserCode(code);
    if (!device) throw sdk::HttpError(404, "not_found", "No pending device code matches.");
    std::string user_id, account_id;
    if (approve) {
      std::string email = Poco::toLower(Poco::trim(boundedField(r, "user", 254, true)));
      auto user = store_->userByEmail(email);
      if (!user) throw sdk::HttpError(404, "not_found", "No user has this email.");
      context_->database().transaction([&](Poco::Data::Session& s) {
        account_id = store_->ensureAccount(s, *user, default_plan_);
      });
      user_id = user->id;
    }
    if (!store_->decide(device->id, approve ? "approved" : "denied", user_id)) {
      throw sdk::HttpError(409, "conflict", "The code was decided already.");
    }
    wakeWaiters(device->id);
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("user_code", displayUserCode(code));
    o->set("status", approve ? "approved" : "denied");
    if (approve) o->set("account", account_id);
    return sdk::Response::json(200, o);
  }

  sdk::Response setPlan(sdk::Request& r) {
    std::string plan = boundedField(r, "plan", 16, true);
    if (plan != "active" && plan != "none")
      throw sdk::HttpError::invalid("plan", "must be active or none");
    if (!store_->setAccountPlan(r.params.at("id"), plan)) throw sdk::HttpError::notFound("account");
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("id", r.params.at("id"));
    o->set("plan", plan);
    return sdk::Response::json(200, o);
  }

  void publishKey(const std::string& type, const KeyRecord& k) {
    try {
      context_->events().publish(type, k.account_id, k.identity_id, keyJson(k), nullptr);
    } catch (const std::exception& e) {
      context_->logger().warning(std::string("could not publish ") + type + ": " + e.what());
    }
  }

  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  std::string default_plan_;
  int expires_seconds_ = 600;
  int interval_seconds_ = 5;
  std::string issuer_url_;
  std::string dashboard_url_;
  std::unique_ptr<AuthStore> store_;
  std::unique_ptr<JwtIssuer> jwt_;
  std::unique_ptr<sdk::RateLimiter> device_limit_;
  std::unique_ptr<sdk::RateLimiter> token_limit_;
  int failed_auth_per_minute_ = 30;
  std::shared_ptr<AuthService> service_;
  std::mutex waiters_mutex_;
  std::map<std::string, std::vector<Waiter>> waiters_;
  std::mutex users_mutex_;
  std::unordered_map<std::string, std::pair<std::int64_t, User>> users_;
};

}  // namespace svc::plugins::auth

SVC_PLUGIN(svc::plugins::auth::AuthPlugin)
