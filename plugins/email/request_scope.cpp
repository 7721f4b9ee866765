#include "request_scope.h"

#include <Poco/String.h>

namespace svc::plugins::email {

sdk::HttpError emailTaken(const std::string& address) {
  return sdk::HttpError(409, "email_taken",
                        "The address " + address + " is already taken; choose another.");
}

}  // namespace svc::plugins::email
