// What the auth plugin's routes take and answer, as JSON Schema (svc/sdk/schema.h): the kernel
// checks requests against them before a handler runs, the API description publishes them, and the
// test suites check answers against them.
#pragma once

#include <svc/sdk/schema.h>

#include <cstddef>

namespace svc::plugins::auth {

/// @param max the most characters. @return text a person types (a label, a name): no control
/// characters.
sdk::Schema plainText(std::size_t max);
/// @return a key as GET /api/auth/keys/ lists it and the key.* events carry it (never its secret).
sdk::Schema keySchema();
/// @return a key just created: the list's members and, this once, the key itself.
sdk::Schema newKeySchema();
/// @return the answer of POST /api/auth/device/.
sdk::Schema deviceLoginSchema();
/// @return the tokens a device login gives once approved.
sdk::Schema deviceTokensSchema();
/// @return `{refresh}`: what refresh and logout take.
sdk::Schema refreshInputSchema();
/// @return `{access, refresh}`: what a refresh answers.
sdk::Schema tokenPairSchema();
/// @return the answer of GET /api/auth/jwks/.
sdk::Schema jwksSchema();
/// @return the answer of GET /api/health/whoami/.
sdk::Schema whoamiSchema();

}  // namespace svc::plugins::auth
