// Which rows a request may see, and the errors every handler group shares.
#pragma once

#include <svc/sdk/http.h>

#include <string>

namespace svc::plugins::email {

/// @return the identity a list is limited to: the request's (identity key or identity=), else
/// empty (the whole account).
std::string scopeIdentity(const sdk::Request& r);
/// @return whether a row of (account, identity) is visible to the request; else it is 404.
bool visible(const sdk::Request& r, const std::string& account, const std::string& identity);
/// @return the 409 for an inbox address someone has.
sdk::HttpError emailTaken(const std::string& address);

}  // namespace svc::plugins::email
