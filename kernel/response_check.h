// Answers checked against their routes' declarations (server.check_responses, for test suites).
//
// A route declares what each status answers (Route::responses); the API description publishes it
// and agents build on it. With the check on, svcd parses every JSON answer and compares it: an
// undeclared success status or a body that does not fit becomes a 500 `response_mismatch` naming
// every problem, and is logged, so a test that meets it fails instead of publishing a lie.
#pragma once

#include <svc/sdk/http.h>
#include <svc/sdk/routes.h>
#include <svc/sdk/schema.h>

#include <optional>

namespace svc::kernel {

/// @return the contract's error shape, which every error of every route answers.
sdk::Schema errorSchema();

/// @param route the route that answered. @param answer its answer.
/// @return the problems, as a 500 `response_mismatch` error, or nullopt when it fits (or says
/// nothing checkable: a held answer, a route that declares no answers, a body declared any).
std::optional<sdk::HttpError> responseMismatch(const sdk::Route& route,
                                               const sdk::Response& answer);

}  // namespace svc::kernel
