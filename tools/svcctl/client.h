// svcctl's HTTP client: one request to the API or the operator listener, JSON in and out.
#pragma once

#include <string>

namespace svcctl {

struct Reply {
  int status = 0;
  std::string body;
  std::string content_type;
};

/// @param base `http(s)://host:port`. @param method GET, POST... @param path `/api/...`.
/// @param token sent as `Authorization: Bearer`, when not empty. @param body JSON, or empty.
/// @param content_type the body's media type.
/// @throws std::runtime_error when the server cannot be reached.
Reply call(const std::string& base, const std::string& method, const std::string& path,
           const std::string& token, const std::string& body = "",
           const std::string& content_type = "application/json");

}  // namespace svcctl
