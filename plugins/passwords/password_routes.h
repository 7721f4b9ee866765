// The routes of /api/passwords/: the list (newest first; `identity`, `domain` exact, `search` a
// substring of the domain: the protected fields cannot be searched), create, one entry
// (GET, PUT, PATCH, DELETE) and the generator.
#pragma once

#include "password_store.h"

#include <svc/sdk/http.h>

namespace svc::plugins::passwords {

class PasswordEntries {
 public:
  explicit PasswordEntries(PasswordStore& store) : store_(store) {}

  /// GET /api/passwords/.
  sdk::Response list(sdk::Request& r);
  /// POST /api/passwords/: 201. Without `password`, a generated one (with the generator's
  /// defaults) is stored and returned, unless the account has end-to-end encryption set up (then
  /// 400 naming `password`: the server must never know it).
  sdk::Response create(sdk::Request& r);
  /// GET, PUT (every field), PATCH (the fields given) or DELETE (204) one entry; another
  /// account's, or another identity's for an identity-scoped caller, is 404.
  sdk::Response one(sdk::Request& r);
  /// GET /api/passwords/generate-password/: `{password}`.
  sdk::Response generate(sdk::Request& r);

 private:
  PasswordStore& store_;
};

}  // namespace svc::plugins::passwords
