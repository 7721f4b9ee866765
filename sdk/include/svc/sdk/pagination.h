// Lists in the contract's shape: `{count, next, previous, results}` with `limit` (default 50,
// at most 200, larger values clamped) and `offset`; next/previous are absolute URLs or null.
#pragma once

#include <svc/sdk/http.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>

namespace svc::sdk {

/// The page a request asks for.
struct PageRequest {
  int limit = 50;  ///< 1..200.
  int offset = 0;  ///< 0 or more.
};

/// @return the request's `limit` and `offset`. @throws HttpError 400 naming a malformed one.
PageRequest pageRequest(const Request& request);

/// @param request the request (its path and other query parameters make next/previous).
/// @param page what pageRequest() answered. @param count how many items there are in all.
/// @param results this page's items. @return the list body.
Poco::JSON::Object::Ptr pageBody(const Request& request, const PageRequest& page, long count,
                                 const Poco::JSON::Array::Ptr& results);

}  // namespace svc::sdk
