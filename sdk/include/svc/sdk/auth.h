// The authentication hook's service interfaces.
//
// The kernel knows no product rules about keys: it hands the request's credentials to whatever
// plugin offers an Authenticator, and asks the IdentityDirectory whether a named identity belongs
// to the caller's account. The auth plugin provides the real ones.
#pragma once

#include <svc/sdk/http.h>
#include <svc/sdk/services.h>

#include <Poco/Data/Session.h>

#include <optional>
#include <string>

namespace svc::sdk {

/// The credentials a request carries.
struct Credentials {
  std::string authorization;   ///< The Authorization header's value, or empty.
  std::string cookie;          ///< The Cookie header's value, or empty.
  std::string client_address;  ///< The peer's address, for rate limiting failures.
  std::string method;          ///< The request's method: a cookie alone authenticates GET/HEAD.
  std::string csrf;            ///< The kSessionCsrfHeader's value, or empty (accounts.h).
};

/// Turns credentials into a principal. Offered as service kAuthenticatorService.
class Authenticator {
 public:
  virtual ~Authenticator();
  /// @param credentials what the request carries.
  /// @return the principal, or nullopt when the request carries no credential this authenticator
  /// understands at all (the kernel then answers 401 `not_authenticated`).
  /// @throws HttpError 401 `authentication_failed` / `token_expired` for a rejected credential.
  virtual std::optional<Principal> authenticate(const Credentials& credentials) = 0;
};

/// Answers whether an identity exists within an account. Offered as kIdentityDirectoryService.
class IdentityDirectory {
 public:
  virtual ~IdentityDirectory();
  /// @param account_id the caller's account. @param identity_uuid the named identity.
  /// @return the identity when it exists in that account, else nullopt.
  virtual std::optional<IdentityRef> find(const std::string& account_id,
                                          const std::string& identity_uuid) = 0;
};

/// Access taken away: a credential revoked, a session or token family ended, an account suspended,
/// an identity deleted. New requests are refused by the Authenticator; a Revocation ends what is
/// already open: every held request (an event stream, a wait, an MCP tool call) it covers, on
/// every svcd sharing the database, within a second of the commit.
struct Revocation {
  std::string account_id;  ///< Required: the account whose access is taken.
  std::string credential;  ///< When set, only what this credential (Principal::credential) opened.
  std::string identity;    ///< When set, only what targets this identity or is bound to it.
  int status = 401;        ///< The status a held request is answered with.
  std::string code = "authentication_failed";          ///< Its error code.
  std::string detail = "The credential was revoked.";  ///< Its detail.
};

/// Ends held requests whose access was taken away. Offered by the kernel as
/// kAccessRevocationsService (from configure() on).
class AccessRevocations {
 public:
  virtual ~AccessRevocations();
  /// Records the revocation in the caller's transaction: once it commits, every svcd sharing the
  /// database answers the held requests it covers (a stream already under way just closes).
  /// Nothing happens when the transaction rolls back. @param s the transaction's session.
  /// @param revocation what is taken away. @throws std::invalid_argument without an account.
  virtual void revoke(Poco::Data::Session& s, const Revocation& revocation) = 0;
};

/// The key of the Authenticator service.
inline constexpr ServiceKey<Authenticator> kAuthenticatorService{"svc.authenticator.v1"};
/// The key of the IdentityDirectory service.
inline constexpr ServiceKey<IdentityDirectory> kIdentityDirectoryService{
    "svc.identity-directory.v1"};
/// The key of the AccessRevocations service (the kernel's).
inline constexpr ServiceKey<AccessRevocations> kAccessRevocationsService{
    "svc.access-revocations.v1"};

}  // namespace svc::sdk
