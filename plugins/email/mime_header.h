// Reading header fields: RFC 2047 encoded words, RFC 2045/2231 parameters, address lists and
// message ids (the public ones are declared in mime.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace svc::plugins::email {

/// A header's value split into the main token and its `; name=value` parameters (RFC 2045),
/// with RFC 2231 `name*=charset''percent-encoded` and continuations `name*0*=` joined.
struct HeaderParams {
  std::string value;
  std::vector<std::pair<std::string, std::string>> params;
  std::string get(const std::string& name) const {
    for (const auto& [k, v] : params) {
      if (k == name) return v;
    }
    return {};
  }
};

/// @param raw a value such as Content-Type's. @return its token (lower case) and parameters.
HeaderParams parseParams(std::string_view raw);

}  // namespace svc::plugins::email
