// Lists in the contract's shape: `{count, next, previous, results}` with `limit` (default 50,
// at most 200, larger values clamped) and `offset`; next/previous are absolute URLs or null.
#pragma once

#include <svc/sdk/http.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>

#include <cstdint>
#include <functional>

namespace svc::sdk {

/// The page a request asks for.
struct PageRequest {
  int limit = 50;  ///< 1..200.
  int offset = 0;  ///< 0 or more.
};

/// @return the request's `limit` and `offset`. @throws HttpError 400 naming a malformed one.
PageRequest pageRequest(const Request& request);

/// A list's count, capped.
struct CappedCount {
  long count = 0;     ///< What the list says: the exact count, or the cap.
  bool exact = true;  ///< false: there are at least `count` (the list says count_is_exact).
};
/// Counts a list's matches up to a cap: an exact count of a million rows on every poll is a scan
/// of them all. The cap is exact_limit, or more when the page itself reaches further (so `next`
/// stays right). @param count_up_to the plugin's COUNT over at most `probe` matching rows
/// (`SELECT COUNT(*) FROM (SELECT 1 ... LIMIT probe)`).
CappedCount cappedCount(long exact_limit, const PageRequest& page,
                        const std::function<long(std::int64_t probe)>& count_up_to);

/// @param request the request (its path and other query parameters make next/previous).
/// @param page what pageRequest() answered. @param count how many items there are in all.
/// @param results this page's items. @return the list body.
Poco::JSON::Object::Ptr pageBody(const Request& request, const PageRequest& page, long count,
                                 const Poco::JSON::Array::Ptr& results);

}  // namespace svc::sdk
