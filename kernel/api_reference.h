// The API description as a person or a language model reads it: every route with its parameters,
// body, answers, errors and an example call, then every shape and event type. Made from the
// OpenAPI document (openapi.h), so the three forms never disagree.
//
//   GET /api/schema/reference.txt   plain text an LLM reads in one go
//   GET /api/docs/                  the same as one HTML page, served from this server
#pragma once

#include <Poco/JSON/Object.h>

#include <string>

namespace svc::kernel {

/// @param openapi the OpenAPI 3.1 document. @return the plain-text reference.
std::string textReference(const Poco::JSON::Object::Ptr& openapi);

/// @param openapi the OpenAPI 3.1 document. @return the reference as a self-contained HTML page
/// (no script, no other origin).
std::string htmlReference(const Poco::JSON::Object::Ptr& openapi);

}  // namespace svc::kernel
