// Which rows a request may see, and the request readers every handler group shares.
#pragma once

#include <svc/sdk/http.h>

#include <string>
#include <vector>

namespace svc::plugins::email {

/// @return the identity a list is limited to: the request's (identity key or identity=), else
/// empty (the whole account).
std::string scopeIdentity(const sdk::Request& r);
/// @return whether a row of (account, identity) is visible to the request; else it is 404.
bool visible(const sdk::Request& r, const std::string& account, const std::string& identity);
/// @param name a member of the JSON body. @return it as a list: a string is a list of one,
/// absent or null an empty list. @throws HttpError 400 naming the field for anything else.
std::vector<std::string> listField(const sdk::Request& r, const std::string& name);
/// @param name a member of the JSON body. @return its text.
/// @throws HttpError 400 naming the field when it is absent.
std::string requiredText(const sdk::Request& r, const std::string& name);
/// @return the 409 for an inbox address someone has.
sdk::HttpError emailTaken(const std::string& address);

}  // namespace svc::plugins::email
