// The errors every handler group shares (which rows a request may see is sdk::visibleTo).
#pragma once

#include <svc/sdk/http.h>

#include <string>

namespace svc::plugins::email {

/// @return the 409 for an inbox address someone has.
sdk::HttpError emailTaken(const std::string& address);

}  // namespace svc::plugins::email
