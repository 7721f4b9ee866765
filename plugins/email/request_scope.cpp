#include "request_scope.h"

#include <Poco/String.h>

namespace svc::plugins::email {

std::string scopeIdentity(const sdk::Request& r) {
  return r.identity ? Poco::toLower(r.identity->uuid) : std::string();
}

bool visible(const sdk::Request& r, const std::string& account, const std::string& identity) {
  if (account != r.principal.account_id) return false;
  std::string scope = scopeIdentity(r);
  return scope.empty() || scope == identity;
}

sdk::HttpError emailTaken(const std::string& address) {
  return sdk::HttpError(409, "email_taken",
                        "The address " + address + " is already taken; choose another.");
}

}  // namespace svc::plugins::email
