// The API description: an OpenAPI 3.1 document made from the routes the enabled plugins declared
// (their bodies, query parameters, answers and errors) and the event types they publish.
#pragma once

#include "event_types.h"
#include "router.h"

#include <Poco/JSON/Object.h>

#include <string>
#include <vector>

namespace svc::kernel {

/// What the description says about the server itself.
struct ApiInfo {
  std::string version;   ///< svcd's version.
  std::string base_url;  ///< public.base_url: the one server entry.
};

/// @param router the API listener's routes (operator routes are left out: they are not the
/// public API). @param events every declared event type. @param info the server.
/// @return the OpenAPI 3.1 document.
Poco::JSON::Object::Ptr openApiDocument(const Router& router, const EventTypeRegistry& events,
                                        const ApiInfo& info);

/// @param method a route's method. @param pattern its path pattern.
/// @return the operation's id: `get_secrets_by_uuid` for GET /api/secrets/{uuid}/.
std::string operationId(const std::string& method, const std::string& pattern);

/// @param pattern a route's path pattern. @return its parameters' names in order: `uuid` for
/// /api/secrets/{uuid}/.
std::vector<std::string> pathParams(const std::string& pattern);

}  // namespace svc::kernel
