// Accounts, users, sign-in and keys, for plugins that act for a signed-in person.
//
// The auth plugin owns users, accounts, keys and device codes. The dashboard (or any plugin that
// serves pages to people) signs people in and acts for them through this service, never through
// the auth plugin's tables.
#pragma once

#include <svc/sdk/services.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace svc::sdk {

/// A person who signs in.
struct UserInfo {
  std::string id;          ///< The user's id.
  std::string account_id;  ///< Their account, or empty until their first device approval.
  std::string email;       ///< Lower-case email address.
  std::string name;        ///< Display name.
};

/// A key as lists show it: never the key itself.
struct KeyInfo {
  std::string id;                 ///< The key's id.
  std::string kind;               ///< "management" or "identity".
  std::string label;              ///< What its creator called it.
  std::string prefix;             ///< The visible start of the key.
  std::string identity;           ///< The bound identity's uuid (identity keys), else empty.
  std::int64_t created_us = 0;    ///< Creation time, microseconds since the epoch.
  std::int64_t last_used_us = 0;  ///< Last use (to within a minute), or 0.
};

/// A device login waiting for a person's decision.
struct DeviceRequest {
  std::string user_code;        ///< As shown: XXXX-XXXX.
  std::string client_id;        ///< What the agent called itself, or empty.
  std::int64_t expires_us = 0;  ///< When the code expires.
};

/// The outcome of AccountService::decideDevice.
enum class DeviceDecision {
  kDone,      ///< Approved or denied as asked.
  kNotFound,  ///< No pending code matches (malformed, unknown, expired or decided).
};

/// Offered by the auth plugin as kAccountService.
class AccountService {
 public:
  virtual ~AccountService();

  /// @return whether local users (svcctl users add) may sign in with a password.
  virtual bool localUsersEnabled() = 0;
  /// Checks a local user's password with the slow KDF.
  /// @return the user, or nullopt for an unknown email or a wrong password (indistinguishable).
  virtual std::optional<UserInfo> checkPassword(const std::string& email,
                                                const std::string& password) = 0;
  /// Finds or creates the user an OpenID Connect provider vouched for: by (issuer, subject), else
  /// by a verified email (linking it), else a new user.
  /// @throws HttpError 403 when the email belongs to another user and is not verified.
  virtual UserInfo externalUser(const std::string& issuer, const std::string& subject,
                                const std::string& email, const std::string& name,
                                bool email_verified) = 0;
  /// @return the user with this id, or nullopt.
  virtual std::optional<UserInfo> user(const std::string& user_id) = 0;

  /// @param user_code as typed: any case, with or without the hyphen.
  /// @return the pending, unexpired device login with that code, or nullopt.
  virtual std::optional<DeviceRequest> pendingDevice(const std::string& user_code) = 0;
  /// Approves (creating the person's account on its first approval) or denies a pending device
  /// login, and answers the agents waiting on it.
  virtual DeviceDecision decideDevice(const std::string& user_code, const std::string& user_id,
                                      bool approve) = 0;

  /// Starts a browser session. @return the opaque session token for the cookie.
  virtual std::string startSession(const std::string& user_id) = 0;
  /// @return the session's user, or nullopt when the token is unknown, ended or expired.
  virtual std::optional<UserInfo> session(const std::string& token) = 0;
  /// Ends a browser session.
  virtual void endSession(const std::string& token) = 0;
  /// @return how long sessions last, in seconds.
  virtual int sessionSeconds() = 0;

  /// @return the account's keys, revoked ones left out, newest first.
  virtual std::vector<KeyInfo> keys(const std::string& account_id) = 0;
  /// Creates a management key (identity empty) or an identity key for user's account.
  /// @return the record and the full key, which is never available again.
  /// @throws HttpError 404 when the identity is not the account's; 400 for a bad label.
  virtual std::pair<KeyInfo, std::string> createKey(const UserInfo& user, const std::string& label,
                                                    const std::string& identity) = 0;
  /// @return false when the key is not the account's or already revoked.
  virtual bool revokeKey(const std::string& account_id, const std::string& key_id) = 0;
};

/// The cookie that carries a browser session's token. The dashboard sets it (HttpOnly,
/// SameSite=Lax, Path=/); the Authenticator accepts it on GET and HEAD, and on other methods only
/// with kSessionCsrfHeader.
inline constexpr const char* kSessionCookie = "svc_session";

/// The header with which a dashboard page changes things through the API on its session's cookie:
/// its value must be sessionCsrf() of that session. A cookie rides along on requests other sites
/// make; this header does not (another site can neither read the page's token nor send a custom
/// header cross-origin without a CORS preflight, which svcd never grants).
inline constexpr const char* kSessionCsrfHeader = "X-Svc-Csrf";

/// @param session_token a browser session's token (the cookie's value).
/// @return the session's CSRF token: HMAC-SHA256 keyed by the session token over a fixed label, in
/// base64url. The dashboard puts it in its forms and pages; it proves a request came from one of
/// this session's pages, and a page of one session cannot be replayed into another.
std::string sessionCsrf(const std::string& session_token);

/// The key of the AccountService.
inline constexpr ServiceKey<AccountService> kAccountService{"svc.accounts.v1"};

}  // namespace svc::sdk
