// The authentication hook's service interfaces.
//
// The kernel knows no product rules about keys: it hands the request's credentials to whatever
// plugin offers an Authenticator, and asks the IdentityDirectory whether a named identity belongs
// to the caller's account. The auth plugin provides the real ones.
#pragma once

#include <svc/sdk/http.h>
#include <svc/sdk/services.h>

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

/// The key of the Authenticator service.
inline constexpr ServiceKey<Authenticator> kAuthenticatorService{"svc.authenticator.v1"};
/// The key of the IdentityDirectory service.
inline constexpr ServiceKey<IdentityDirectory> kIdentityDirectoryService{
    "svc.identity-directory.v1"};

}  // namespace svc::sdk
