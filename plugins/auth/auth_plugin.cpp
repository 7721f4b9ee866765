// auth: accounts, users, keys and sessions. It offers the kernel's Authenticator (management and
// identity keys, JWT access tokens) and the PlanService, and runs the OAuth 2.0 device flow
// (RFC 8628) by which a human approves an agent once and the agent receives its keys.
#include "auth_service.h"
#include "auth_store.h"
#include "jwt_issuer.h"
#include "key_format.h"
#include "passwords.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/plans.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/rate_limit.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/NumberParser.h>
#include <Poco/String.h>
#include <Poco/UTF8String.h>

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

using sdk::sha256Hex;

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

class AuthPlugin;

// The AccountService: what the dashboard does for a signed-in person, on the plugin's own logic.
class Accounts : public sdk::AccountService {
 public:
  explicit Accounts(AuthPlugin& plugin) : plugin_(plugin) {}
  bool localUsersEnabled() override;
  std::optional<sdk::UserInfo> checkPassword(const std::string& email,
                                             const std::string& password) override;
  sdk::UserInfo externalUser(const std::string& issuer, const std::string& subject,
                             const std::string& email, const std::string& name,
                             bool email_verified) override;
  std::optional<sdk::UserInfo> user(const std::string& user_id) override;
  std::optional<sdk::DeviceRequest> pendingDevice(const std::string& user_code) override;
  sdk::DeviceDecision decideDevice(const std::string& user_code, const std::string& user_id,
                                   bool approve) override;
  std::string startSession(const std::string& user_id) override;
  std::optional<sdk::UserInfo> session(const std::string& token) override;
  void endSession(const std::string& token) override;
  int sessionSeconds() override;
  std::vector<sdk::KeyInfo> keys(const std::string& account_id) override;
  std::pair<sdk::KeyInfo, std::string> createKey(const sdk::UserInfo& user,
                                                 const std::string& label,
                                                 const std::string& identity) override;
  bool revokeKey(const std::string& account_id, const std::string& key_id) override;

 private:
  AuthPlugin& plugin_;
};

class AuthPlugin : public sdk::Plugin {
  friend class Accounts;

 public:
  AuthPlugin() {
    info_.name = "auth";
    info_.version = "0.1.0";
    info_.description = "Accounts, users, keys, sessions and the device login.";
    info_.events = {
        {"key.created",
         "A key was created; object: the key as GET shows it, without its secret.",
         {}},
        {"key.revoked", "A key was revoked; object: the key as GET shows it.", {}},
    };
    info_.offers_services = {sdk::kAuthenticatorService.name, sdk::kPlanService.name,
                             sdk::kAccountService.name};
    info_.uses_services = {sdk::kIdentityDirectoryService.name};
    info_.config = {
        {"auth.local_users", "true", "allow local users (svcctl users add) to sign in", false},
        {"accounts.default_plan", "active", "plan of new accounts: active or none", false},
        {"auth.device.expires_seconds", "600", "lifetime of a device code", false, true},
        {"auth.device.interval_seconds", "5", "polling interval of a device code", false},
        {"auth.rate.device_per_minute", "30", "device logins one address may start a minute",
         false},
        {"auth.rate.token_per_minute", "600", "device token polls one address may make a minute",
         false},
        {"auth.rate.failed_auth_per_minute", "30",
         "failed authentications from one address a minute before its unverified credentials get "
         "429 (keys already verified still work)",
         false},
        {"auth.rate.failed_auth_per_key_per_minute", "10",
         "failed authentications with one key prefix (or other credential) a minute, from any "
         "address, before it gets 429",
         false},
        {"auth.session.hours", "12", "how long a dashboard sign-in lasts", false},
        {"auth.keys.max_per_account", "100",
         "unrevoked keys an account may have; creating more answers 400 (device logins are not "
         "refused)",
         false},
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
    // The dashboard declares dashboard.url (shared); without the dashboard, where it would be.
    dashboard_url_ = c.getString("dashboard.url", issuer_url_ + "/dashboard");
    store_ = std::make_unique<AuthStore>(context.database());
    device_limit_ = std::make_unique<sdk::RateLimiter>(c.getInt("auth.rate.device_per_minute"));
    token_limit_ = std::make_unique<sdk::RateLimiter>(c.getInt("auth.rate.token_per_minute"));
    failed_auth_per_minute_ = c.getInt("auth.rate.failed_auth_per_minute");
    failed_auth_per_key_per_minute_ = c.getInt("auth.rate.failed_auth_per_key_per_minute");
    local_users_ = c.getBool("auth.local_users");
    session_seconds_ = c.getInt("auth.session.hours") * 3600;
    if (session_seconds_ < 3600) throw std::runtime_error("auth.session.hours must be at least 1");
    max_keys_ = c.getInt("auth.keys.max_per_account");
    if (max_keys_ < 1) throw std::runtime_error("auth.keys.max_per_account must be at least 1");
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
    service_ = std::make_shared<AuthService>(*store_, *jwt_, failed_auth_per_minute_,
                                             failed_auth_per_key_per_minute_);
    services.offer(sdk::kAuthenticatorService, service_);
    services.offer(sdk::kPlanService, service_);
    services.offer(sdk::kAccountService, std::make_shared<Accounts>(*this));
  }

  void start() override {
    service_->start();
    watching_ = true;
    watcher_ = std::thread([this] { watchWaiters(); });
  }

  void stop() override {
    if (watching_.exchange(false)) {
      watch_wake_.notify_all();
      watcher_.join();
    }
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
    std::string device_code = sdk::randomToken(32);
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
        if (auto s = weak.lock()) answerWaiter(*s, hash);
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
      if (auto s = w.stream.lock()) answerWaiter(*s, w.code_hash);
    }
  }

  // Codes can be decided where this process does not see it: by another svcd process on the same
  // database, or here in the instant between a poll's first look and its registration as a
  // waiter. Twice a second, the codes that have waiters are looked up and the decided ones woken.
  void watchWaiters() {
    std::unique_lock lock(watch_mutex_);
    while (watching_) {
      watch_wake_.wait_for(lock, std::chrono::milliseconds(500));
      if (!watching_) break;
      std::vector<std::string> ids;
      {
        std::lock_guard waiters_lock(waiters_mutex_);
        for (auto& [id, list] : waiters_) ids.push_back(id);
      }
      if (ids.empty()) continue;
      try {
        for (const auto& id : store_->decidedAmong(ids)) wakeWaiters(id);
      } catch (const std::exception& e) {
        context_->logger().warning(std::string("checking waiting device codes: ") + e.what());
      }
    }
  }

  // Answers a held poll; a failure answers 500 rather than leaving the agent without an answer.
  void answerWaiter(sdk::Stream& stream, const std::string& code_hash) {
    try {
      stream.respond(evaluate(code_hash, true).response);
    } catch (const std::exception& e) {
      context_->logger().error(std::string("device token poll failed: ") + e.what());
      Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
      body->set("detail", "The server failed to answer this request; poll again.");
      body->set("code", "server_error");
      body->set("request_id", stream.requestId());
      stream.respond(sdk::Response::json(500, body));
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
      publishKey("key.created", key_record, s);
      refresh_token = "svc_rt_" + sdk::randomToken(32);
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
      next = "svc_rt_" + sdk::randomToken(32);
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
    }
    auto [record, key] = mintKey(r.principal.account_id, r.principal.user_id, label, identity);
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("id", record.id);
    o->set("key", key);
    o->set("kind", record.kind);
    if (identity_key) o->set("identity", record.identity_id);
    o->set("label", record.label);
    o->set("prefix", record.prefix);
    o->set("created_dt", sdk::isoTimestamp(record.created_us));
    return noStore(201, o);
  }

  // Creates a management key (identity empty) or an identity key. @return the record and the key.
  std::pair<KeyRecord, std::string> mintKey(const std::string& account_id,
                                            const std::string& creator, const std::string& label,
                                            std::string identity) {
    if (!identity.empty()) {
      identity = Poco::toLower(identity);
      auto directory = context_->services().find(sdk::kIdentityDirectoryService);
      if (!sdk::isUuid(identity) || !directory || !directory->find(account_id, identity)) {
        throw sdk::HttpError::notFound("identity");
      }
    }
    std::string key = newKey(identity.empty() ? KeyKind::kManagement : KeyKind::kIdentity);
    KeyRecord record;
    context_->database().transaction([&](Poco::Data::Session& s) {
      if (store_->lockAndCountKeys(s, account_id) >= max_keys_) throw tooManyKeys();
      record = store_->addKey(s, account_id, identity.empty() ? "management" : "identity", identity,
                              label, visiblePrefix(key), sha256Hex(key), creator);
      publishKey("key.created", record, s);
    });
    return {record, key};
  }

  // A runaway script minting keys in a loop stops here, not at the database's limits.
  sdk::HttpError tooManyKeys() const {
    const std::string most = std::to_string(max_keys_);
    sdk::HttpError e(400, "invalid",
                     "This account already has " + most +
                         " keys, the most it may have; revoke keys it no longer uses "
                         "(DELETE /api/auth/keys/{id}/) and create this one again.");
    e.field("keys", "at most " + most + " unrevoked keys per account; revoke unused keys");
    return e;
  }

  sdk::Response listKeys(sdk::Request& r) {
    const sdk::PageRequest page = sdk::pageRequest(r);
    auto keys = store_->keysOf(r.principal.account_id);
    Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
    for (std::size_t i = static_cast<std::size_t>(page.offset);
         i < keys.size() && results->size() < static_cast<std::size_t>(page.limit); ++i) {
      results->add(keyJson(keys[i]));
    }
    return sdk::Response::json(200,
                               sdk::pageBody(r, page, static_cast<long>(keys.size()), results));
  }

  sdk::Response revokeKey(sdk::Request& r) {
    if (!revoke(r.principal.account_id, r.params.at("id"))) throw sdk::HttpError::notFound("key");
    return sdk::Response::noContent();
  }

  bool revoke(const std::string& account_id, const std::string& key_id) {
    auto revoked = store_->revokeKey(
        account_id, key_id,
        [this](Poco::Data::Session& s, const KeyRecord& k) { publishKey("key.revoked", k, s); });
    if (!revoked) return false;
    // The hash is not kept in the record; clear this process's cache by re-reading revocations.
    for (const auto& hash : store_->revokedSince(revoked->revoked_us)) service_->forget(hash);
    return true;
  }

  // The hottest authenticated route: written straight to a string, no JSON object tree.
  sdk::Response whoami(sdk::Request& r) {
    static const char* kinds[] = {"none", "user", "management", "identity"};
    auto q = [](const std::string& v) { return "\"" + Poco::UTF8::escape(v, true) + "\""; };
    std::string body;
    body.reserve(512);
    body += "{\"kind\":\"";
    body += kinds[static_cast<int>(r.principal.kind)];
    body += "\",\"account\":{\"id\":" + q(r.principal.account_id) + "},\"user\":";
    std::optional<User> user;
    if (!r.principal.user_id.empty()) user = cachedUser(r.principal.user_id);
    body += user ? "{\"id\":" + q(user->id) + ",\"email\":" + q(user->email) +
                       ",\"name\":" + q(user->name) + "}"
                 : std::string("null");
    body += ",\"identity\":";
    body += r.identity
                ? "{\"uuid\":" + q(r.identity->uuid) + ",\"name\":" + q(r.identity->name) + "}"
                : std::string("null");
    body += ",\"key\":";
    body += r.principal.key_id.empty()
                ? std::string("null")
                : "{\"id\":" + q(r.principal.key_id) + ",\"label\":" + q(r.principal.key_label) +
                      ",\"prefix\":" + q(r.principal.key_prefix) + "}";
    body += "}";
    return sdk::Response::text(200, std::move(body), "application/json");
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
    std::optional<User> user;
    if (approve) {
      std::string email = Poco::toLower(Poco::trim(boundedField(r, "user", 254, true)));
      user = store_->userByEmail(email);
      if (!user) throw sdk::HttpError(404, "not_found", "No user has this email.");
    }
    auto account_id = decideCode(code, user, approve);
    if (!account_id) throw sdk::HttpError(404, "not_found", "No pending device code matches.");
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("user_code", displayUserCode(code));
    o->set("status", approve ? "approved" : "denied");
    if (approve) o->set("account", *account_id);
    return sdk::Response::json(200, o);
  }

  // Approves (for user, whose account is created on its first approval) or denies a pending code
  // and answers the agents waiting on it. @return the account id ("" on deny), or nullopt when no
  // pending code matches (unknown, expired, or decided a moment ago).
  std::optional<std::string> decideCode(const std::string& code, std::optional<User> user,
                                        bool approve) {
    auto device = store_->pendingByUserCode(code);
    if (!device) return std::nullopt;
    std::string account_id;
    if (approve) {
      context_->database().transaction([&](Poco::Data::Session& s) {
        account_id = store_->ensureAccount(s, *user, default_plan_);
      });
    }
    if (!store_->decide(device->id, approve ? "approved" : "denied", approve ? user->id : "")) {
      return std::nullopt;
    }
    wakeWaiters(device->id);
    return account_id;
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

  // In the transaction that made the change: the event is stored with it or not at all.
  void publishKey(const std::string& type, const KeyRecord& k, Poco::Data::Session& s) {
    context_->events().publish(type, k.account_id, k.identity_id, keyJson(k), &s);
  }

  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  std::string default_plan_;
  int expires_seconds_ = 600;
  int interval_seconds_ = 5;
  std::string issuer_url_;
  std::string dashboard_url_;
  bool local_users_ = true;
  int session_seconds_ = 12 * 3600;
  int max_keys_ = 100;
  std::unique_ptr<AuthStore> store_;
  std::unique_ptr<JwtIssuer> jwt_;
  std::unique_ptr<sdk::RateLimiter> device_limit_;
  std::unique_ptr<sdk::RateLimiter> token_limit_;
  int failed_auth_per_minute_ = 30;
  int failed_auth_per_key_per_minute_ = 10;
  std::shared_ptr<AuthService> service_;
  std::mutex waiters_mutex_;
  std::map<std::string, std::vector<Waiter>> waiters_;
  std::atomic<bool> watching_{false};
  std::mutex watch_mutex_;
  std::condition_variable watch_wake_;
  std::thread watcher_;
  std::mutex users_mutex_;
  std::unordered_map<std::string, std::pair<std::int64_t, User>> users_;
};

namespace {
sdk::UserInfo userInfo(const User& u) {
  return {u.id, u.account_id, u.email, u.name};
}
sdk::KeyInfo keyInfo(const KeyRecord& k) {
  return {k.id, k.kind, k.label, k.prefix, k.identity_id, k.created_us, k.last_used_us};
}
}  // namespace

bool Accounts::localUsersEnabled() {
  return plugin_.local_users_;
}

std::optional<sdk::UserInfo> Accounts::checkPassword(const std::string& email,
                                                     const std::string& password) {
  if (!plugin_.local_users_ || email.size() > 254 || password.size() > 1024) return std::nullopt;
  auto user = plugin_.store_->userByEmail(Poco::toLower(Poco::trim(email)));
  // Unknown emails and provider-only users cost the same KDF run, so timing tells nothing.
  static const std::string decoy = hashPassword(sdk::randomToken(16));
  const bool has_password = user && !user->password_hash.empty();
  const bool ok = verifyPassword(password, has_password ? user->password_hash : decoy);
  if (!ok || !has_password) return std::nullopt;
  return userInfo(*user);
}

sdk::UserInfo Accounts::externalUser(const std::string& issuer, const std::string& subject,
                                     const std::string& raw_email, const std::string& raw_name,
                                     bool email_verified) {
  const std::string email = Poco::toLower(Poco::trim(raw_email));
  if (subject.empty() || subject.size() > 255 || issuer.size() > 255) {
    throw sdk::HttpError(400, "invalid", "The provider's answer names no usable subject.");
  }
  std::optional<User> found;
  std::optional<sdk::HttpError> refused;
  plugin_.context_->database().transaction([&](Poco::Data::Session& s) {
    if (auto linked = plugin_.store_->linkedUser(s, issuer, subject)) {
      found = plugin_.store_->userById(s, *linked);
      if (found) return;
    }
    if (email.empty() || email.size() > 254 || email.find('@') == std::string::npos) {
      refused = sdk::HttpError(400, "invalid", "The provider did not tell us your email address.");
      return;
    }
    found = plugin_.store_->userByEmail(s, email);
    if (found && !email_verified) {
      refused = sdk::HttpError(403, "permission_denied",
                               "This email belongs to an existing user and the provider has not "
                               "verified it; sign in the way you did before.");
      return;
    }
    if (!found) {
      std::string name = raw_name.empty() ? email.substr(0, email.find('@')) : raw_name;
      if (name.size() > 200) name.resize(200);
      found = plugin_.store_->addUser(s, email, name, "");
    }
    plugin_.store_->link(s, issuer, subject, found->id);
  });
  if (refused) throw *refused;
  return userInfo(*found);
}

std::optional<sdk::UserInfo> Accounts::user(const std::string& user_id) {
  auto u = plugin_.store_->userById(user_id);
  if (!u) return std::nullopt;
  return userInfo(*u);
}

std::optional<sdk::DeviceRequest> Accounts::pendingDevice(const std::string& user_code) {
  std::string code = normalizeUserCode(user_code);
  if (code.empty()) return std::nullopt;
  auto d = plugin_.store_->pendingByUserCode(code);
  if (!d) return std::nullopt;
  return sdk::DeviceRequest{displayUserCode(d->user_code), d->client_id, d->expires_us};
}

sdk::DeviceDecision Accounts::decideDevice(const std::string& user_code, const std::string& user_id,
                                           bool approve) {
  std::string code = normalizeUserCode(user_code);
  if (code.empty()) return sdk::DeviceDecision::kNotFound;
  auto user = plugin_.store_->userById(user_id);
  if (!user) return sdk::DeviceDecision::kNotFound;
  return plugin_.decideCode(code, user, approve) ? sdk::DeviceDecision::kDone
                                                 : sdk::DeviceDecision::kNotFound;
}

std::string Accounts::startSession(const std::string& user_id) {
  std::string token = "svc_ws_" + sdk::randomToken(32);
  plugin_.store_->addSession(sha256Hex(token), user_id,
                             sdk::nowMicros() + std::int64_t(plugin_.session_seconds_) * 1000000);
  return token;
}

std::optional<sdk::UserInfo> Accounts::session(const std::string& token) {
  if (token.empty() || token.size() > 200) return std::nullopt;
  auto user_id = plugin_.store_->sessionUser(sha256Hex(token));
  if (!user_id) return std::nullopt;
  return user(*user_id);
}

void Accounts::endSession(const std::string& token) {
  if (!token.empty() && token.size() <= 200) plugin_.store_->endSession(sha256Hex(token));
}

int Accounts::sessionSeconds() {
  return plugin_.session_seconds_;
}

std::vector<sdk::KeyInfo> Accounts::keys(const std::string& account_id) {
  std::vector<sdk::KeyInfo> out;
  if (account_id.empty()) return out;
  auto records = plugin_.store_->keysOf(account_id);
  for (auto it = records.rbegin(); it != records.rend(); ++it) out.push_back(keyInfo(*it));
  return out;
}

std::pair<sdk::KeyInfo, std::string> Accounts::createKey(const sdk::UserInfo& user,
                                                         const std::string& label,
                                                         const std::string& identity) {
  if (user.account_id.empty()) {
    throw sdk::HttpError(403, "permission_denied",
                         "This person has no account yet; approve a device login first.");
  }
  if (label.size() > 200) throw sdk::HttpError::invalid("label", "at most 200 characters");
  for (unsigned char c : label) {
    if (c < 0x20) throw sdk::HttpError::invalid("label", "must not contain control characters");
  }
  auto [record, key] = plugin_.mintKey(user.account_id, user.id, label, identity);
  return {keyInfo(record), key};
}

bool Accounts::revokeKey(const std::string& account_id, const std::string& key_id) {
  if (account_id.empty() || !sdk::isUuid(key_id)) return false;
  return plugin_.revoke(account_id, key_id);
}

}  // namespace svc::plugins::auth

SVC_PLUGIN(svc::plugins::auth::AuthPlugin)
