#include "accounts.h"

#include "auth_http.h"
#include "passwords.h"
#include "user_code.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/String.h>

namespace svc::plugins::auth {

using sdk::sha256Hex;

namespace {
sdk::UserInfo userInfo(const User& u) {
  return {u.id, u.account_id, u.email, u.name};
}
sdk::KeyInfo keyInfo(const KeyRecord& k) {
  return {k.id, k.kind, k.label, k.prefix, k.identity_id, k.created_us, k.last_used_us};
}
}  // namespace

bool Accounts::localUsersEnabled() {
  return settings_.local_users;
}

std::optional<sdk::UserInfo> Accounts::checkPassword(const std::string& email,
                                                     const std::string& password) {
  if (!settings_.local_users || email.size() > 254 || password.size() > 1024) return std::nullopt;
  auto user = store_.userByEmail(Poco::toLower(Poco::trim(email)));
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
  db_.transaction([&](Poco::Data::Session& s) {
    if (auto linked = store_.linkedUser(s, issuer, subject)) {
      found = store_.userById(s, *linked);
      if (found) return;
    }
    if (email.empty() || email.size() > 254 || email.find('@') == std::string::npos) {
      refused = sdk::HttpError(400, "invalid", "The provider did not tell us your email address.");
      return;
    }
    found = store_.userByEmail(s, email);
    if (found && !email_verified) {
      refused = sdk::HttpError(403, "permission_denied",
                               "This email belongs to an existing user and the provider has not "
                               "verified it; sign in the way you did before.");
      return;
    }
    if (!found) {
      std::string name = raw_name.empty() ? email.substr(0, email.find('@')) : raw_name;
      if (name.size() > 200) name.resize(200);
      found = store_.addUser(s, email, name, "");
    }
    store_.link(s, issuer, subject, found->id);
  });
  if (refused) throw *refused;
  return userInfo(*found);
}

std::optional<sdk::UserInfo> Accounts::user(const std::string& user_id) {
  auto u = store_.userById(user_id);
  if (!u) return std::nullopt;
  return userInfo(*u);
}

std::optional<sdk::DeviceRequest> Accounts::pendingDevice(const std::string& user_code) {
  std::string code = normalizeUserCode(user_code);
  if (code.empty()) return std::nullopt;
  auto d = store_.pendingByUserCode(code);
  if (!d) return std::nullopt;
  return sdk::DeviceRequest{displayUserCode(d->user_code), d->client_id, d->expires_us};
}

sdk::DeviceDecision Accounts::decideDevice(const std::string& user_code, const std::string& user_id,
                                           bool approve) {
  std::string code = normalizeUserCode(user_code);
  if (code.empty()) return sdk::DeviceDecision::kNotFound;
  auto user = store_.userById(user_id);
  if (!user) return sdk::DeviceDecision::kNotFound;
  return device_.decide(code, user, approve) ? sdk::DeviceDecision::kDone
                                             : sdk::DeviceDecision::kNotFound;
}

std::string Accounts::startSession(const std::string& user_id) {
  std::string token = "svc_ws_" + sdk::randomToken(32);
  store_.addSession(sha256Hex(token), user_id,
                    sdk::nowMicros() + std::int64_t(settings_.session_seconds) * 1000000);
  return token;
}

std::optional<sdk::UserInfo> Accounts::session(const std::string& token) {
  if (token.empty() || token.size() > 200) return std::nullopt;
  auto user_id = store_.sessionUser(sha256Hex(token));
  if (!user_id) return std::nullopt;
  return user(*user_id);
}

void Accounts::endSession(const std::string& token) {
  if (token.empty() || token.size() > 200) return;
  const std::string hash = sha256Hex(token);
  // The account, for ending what the session holds open (an event stream in the browser).
  std::string account_id;
  if (auto user_id = store_.sessionUser(hash)) {
    if (auto user = store_.userById(*user_id)) account_id = user->account_id;
  }
  store_.endSession(hash, [&](Poco::Data::Session& s) {
    revoker_.revoke(s, account_id, sessionCredential(hash), "The browser session was ended.");
  });
}

int Accounts::sessionSeconds() {
  return settings_.session_seconds;
}

std::vector<sdk::KeyInfo> Accounts::keys(const std::string& account_id) {
  std::vector<sdk::KeyInfo> out;
  if (account_id.empty()) return out;
  auto records = store_.keysOf(account_id);
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
  bounded("label", label, 200);
  auto [record, key] = keys_.mint(user.account_id, user.id, label, identity);
  return {keyInfo(record), key};
}

bool Accounts::revokeKey(const std::string& account_id, const std::string& key_id) {
  if (account_id.empty() || !sdk::isUuid(key_id)) return false;
  return keys_.revoke(account_id, key_id);
}

}  // namespace svc::plugins::auth
