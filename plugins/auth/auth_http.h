// Small HTTP helpers of the auth routes: reading bounded body fields, and answers that carry
// credentials (never cached) or OAuth errors (RFC 6749 section 5.2).
#pragma once

#include <svc/sdk/http.h>

#include <Poco/JSON/Object.h>

#include <cstddef>
#include <optional>
#include <string>

namespace svc::plugins::auth {

/// @return value, when it has at most max bytes and no control characters.
/// @throws sdk::HttpError 400 naming the field otherwise.
std::string bounded(const std::string& name, std::string value, std::size_t max);
/// A string field checked by bounded(). @return "" when absent and not required.
/// @throws sdk::HttpError 400 when required and absent, not a string or out of bounds.
std::string boundedField(const sdk::Request& r, const std::string& name, std::size_t max,
                         bool required);
/// @return a JSON answer with Cache-Control: no-store (answers that carry credentials, or could).
sdk::Response noStore(int status, const Poco::JSON::Object::Ptr& body);
/// @return an OAuth error's body (RFC 6749 section 5.2): `error` and `error_description`, and
/// the same as the contract's `code` and `detail`, so it fits the API's error shape too.
Poco::JSON::Object::Ptr oauthErrorBody(const std::string& error, const std::string& description);
/// @return an OAuth error answer (oauthErrorBody()), not cached.
sdk::Response oauthError(int status, const std::string& error, const std::string& description);

}  // namespace svc::plugins::auth
