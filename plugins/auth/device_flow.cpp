#include "device_flow.h"

#include "auth_http.h"
#include "auth_shapes.h"
#include "key_format.h"
#include "token_routes.h"
#include "user_code.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Object.h>

#include <algorithm>
#include <chrono>

namespace svc::plugins::auth {

using sdk::sha256Hex;

namespace {
constexpr const char* kDeviceGrant = "urn:ietf:params:oauth:grant-type:device_code";
}  // namespace

DeviceFlow::DeviceFlow(sdk::PluginContext& context, AuthStore& store, JwtIssuer& jwt,
                       KeyManager& keys, const AuthSettings& settings)
    : context_(context),
      store_(store),
      jwt_(jwt),
      keys_(keys),
      settings_(settings),
      start_limit_(settings.device_per_minute),
      poll_limit_(settings.token_per_minute) {}

void DeviceFlow::registerRoutes(sdk::RouteRegistry& routes) {
  const std::vector<sdk::Param> none;  // takes no query parameter: the kernel refuses any
  using sdk::AuthNeed;
  using sdk::BodyKind;
  using sdk::Schema;
  const sdk::RouteError throttled{429, "throttled", "too many from this address a minute"};
  // Both take RFC 8628's form too; the kernel checks JSON bodies only, the handler forms.
  routes.add({"POST",
              "/api/auth/device/",
              AuthNeed::kNone,
              BodyKind::kJsonOrForm,
              0,
              "Start a device login (RFC 8628).",
              [this](sdk::Request& r) { return startLogin(r); },
              Schema::object("DeviceLoginInput")
                  .optional("client_id",
                            plainText(200).describe("The agent's name, shown in the key's label.")),
              none,
              {{200, deviceLoginSchema()}},
              {throttled}});
  routes.add({"POST",
              "/api/auth/device/token/",
              AuthNeed::kNone,
              BodyKind::kJsonOrForm,
              0,
              "Poll a device login for its tokens (wait: true holds until it is decided).",
              [this](sdk::Request& r) { return token(r); },
              Schema::object("DeviceTokenInput")
                  .required("device_code", Schema::string().minLength(1).maxLength(200).describe(
                                               "The device_code of POST /api/auth/device/."))
                  .optional("wait", Schema::boolean().nullable().describe(
                                        "true: answer when the login is decided or expires, "
                                        "at most 120 s, instead of at once."))
                  .optional("grant_type",
                            Schema::string().describe("OAuth's `urn:ietf:params:oauth:grant-type:"
                                                      "device_code` (may be left out).")),
              none,
              {{200, deviceTokensSchema()}},
              // OAuth's answers (RFC 8628 section 3.5): `error` and `error_description`, with
              // the same as `code` and `detail`.
              {{400, "authorization_pending", "the person has not decided yet: poll again"},
               {400, "slow_down", "polled sooner than interval: wait `interval` seconds"},
               {400, "access_denied", "the person denied the login"},
               {400, "expired_token", "the device code expired: start again"},
               {400, "invalid_grant", "the device code is unknown or was used"},
               {400, "unsupported_grant_type", "a form's grant_type is not the device code's"},
               {400, "invalid_request", "a form without device_code"},
               throttled}});
}

void DeviceFlow::start() {
  watching_ = true;
  watcher_ = std::thread([this] { watchWaiters(); });
}

void DeviceFlow::stop() {
  if (watching_.exchange(false)) {
    watch_wake_.notify_all();
    watcher_.join();
  }
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

sdk::Response DeviceFlow::startLogin(sdk::Request& r) {
  start_limit_.takeOrThrow(r.client_address, "device logins started from this address");
  // A form's client_id is checked here; a JSON one has passed the declaration already.
  std::string client_id = boundedField(r, "client_id", 200, false);
  DeviceCode d;
  d.id = sdk::newUuid();
  d.client_id = client_id;
  d.status = "pending";
  d.interval_s = settings_.device_interval_s;
  d.expires_us = sdk::nowMicros() + static_cast<std::int64_t>(settings_.device_expires_s) * 1000000;
  do {
    d.user_code = newUserCode();
  } while (store_.userCodeInUse(d.user_code));
  std::string device_code = sdk::randomToken(32);
  store_.addDeviceCode(sha256Hex(device_code), d);
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("device_code", device_code);
  o->set("user_code", displayUserCode(d.user_code));
  o->set("verification_uri", settings_.dashboard_url + "/device");
  o->set("verification_uri_complete",
         settings_.dashboard_url + "/device?user_code=" + displayUserCode(d.user_code));
  o->set("expires_in", settings_.device_expires_s);
  o->set("interval", settings_.device_interval_s);
  return noStore(200, o);
}

sdk::Response DeviceFlow::token(sdk::Request& r) {
  poll_limit_.takeOrThrow(r.client_address, "token polls from this address");
  const bool form = !r.form.empty() || r.content_type == "application/x-www-form-urlencoded";
  // A JSON body has passed the route's declaration; a form is read here, as OAuth says.
  const std::optional<std::string> grant = r.stringField("grant_type");
  const std::optional<std::string> code = r.stringField("device_code");
  const bool wait = !form && r.boolField("wait").value_or(false);
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

void DeviceFlow::dropWaiter(const std::string& device_id, const std::weak_ptr<sdk::Stream>& gone) {
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
void DeviceFlow::wakeWaiters(const std::string& device_id) {
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
void DeviceFlow::watchWaiters() {
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
      for (const auto& id : store_.decidedAmong(ids)) wakeWaiters(id);
    } catch (const std::exception& e) {
      context_.logger().warning(std::string("checking waiting device codes: ") + e.what());
    }
  }
}

// Answers a held poll; a failure answers 500 rather than leaving the agent without an answer.
void DeviceFlow::answerWaiter(sdk::Stream& stream, const std::string& code_hash) {
  try {
    stream.respond(evaluate(code_hash, true).response);
  } catch (const std::exception& e) {
    context_.logger().error(std::string("device token poll failed: ") + e.what());
    Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
    body->set("detail", "The server failed to answer this request; poll again.");
    body->set("code", "server_error");
    body->set("request_id", stream.requestId());
    stream.respond(sdk::Response::json(500, body));
  }
}

// One poll of a device code, RFC 8628 section 3.5. Issuing tokens consumes the code in the same
// transaction, so they are issued exactly once however many polls race.
DeviceFlow::Evaluation DeviceFlow::evaluate(const std::string& code_hash, bool waiting) {
  Evaluation e;
  std::optional<std::string> failure;
  std::string user_id, account_id;
  KeyRecord key_record;
  User issued_to;
  std::string key, refresh_token, family;
  context_.database().transaction([&](Poco::Data::Session& s) {
    auto d = store_.deviceByHash(s, code_hash);
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
        store_.notePoll(s, d->id, now, interval);
        auto body = oauthErrorBody("slow_down",
                                   "Polling too fast; wait " + std::to_string(interval) + " s.");
        body->set("interval", interval);
        e.response = noStore(400, body);
        return;
      }
      store_.notePoll(s, d->id, now, d->interval_s);
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
    if (!store_.consume(s, d->id)) {
      e.response = oauthError(400, "invalid_grant", "The device code was already used.");
      return;
    }
    auto user = store_.userById(d->user_id);
    if (!user || user->account_id.empty()) {
      failure = "approved by a user without an account";
      return;
    }
    user_id = user->id;
    account_id = user->account_id;
    key = newKey(KeyKind::kManagement);
    std::string label = d->client_id.empty() ? "device login" : "device login: " + d->client_id;
    key_record = store_.addKey(s, account_id, "management", "", label, visiblePrefix(key),
                               sha256Hex(key), user_id);
    keys_.publish("key.created", key_record, s);
    refresh_token = newRefreshToken();
    family = sdk::newUuid();
    store_.addRefresh(s, family, user_id, account_id, sha256Hex(refresh_token),
                      now + kRefreshLifetimeUs);
    issued_to = *user;
  });
  if (failure) throw std::runtime_error(*failure);
  if (key.empty()) return e;
  // Signed after the commit: the signing key may need creating, which takes its own transaction.
  std::string access = jwt_.issue(user_id, account_id, family, kAccessLifetimeSeconds);
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
  body->set("expires_in", kAccessLifetimeSeconds);
  e.response = noStore(200, body);
  return e;
}

std::optional<std::string> DeviceFlow::decide(const std::string& code, std::optional<User> user,
                                              bool approve) {
  auto device = store_.pendingByUserCode(code);
  if (!device) return std::nullopt;
  std::string account_id;
  if (approve) {
    context_.database().transaction([&](Poco::Data::Session& s) {
      account_id = store_.ensureAccount(s, *user, settings_.default_plan);
    });
  }
  if (!store_.decide(device->id, approve ? "approved" : "denied", approve ? user->id : "")) {
    return std::nullopt;
  }
  wakeWaiters(device->id);
  return account_id;
}

}  // namespace svc::plugins::auth
