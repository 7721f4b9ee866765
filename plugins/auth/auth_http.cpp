#include "auth_http.h"

#include <svc/sdk/util.h>

namespace svc::plugins::auth {

std::string bounded(const std::string& name, std::string value, std::size_t max) {
  if (value.size() > max) {
    throw sdk::HttpError::invalid(name, "at most " + std::to_string(max) + " characters");
  }
  if (sdk::hasControlCharacter(value)) {
    throw sdk::HttpError::invalid(name, "must not contain control characters");
  }
  return value;
}

std::string boundedField(const sdk::Request& r, const std::string& name, std::size_t max,
                         bool required) {
  auto v = r.stringField(name);
  if (!v) {
    if (required) throw sdk::HttpError::invalid(name, "this field is required");
    return "";
  }
  return bounded(name, std::move(*v), max);
}

sdk::Response noStore(int status, const Poco::JSON::Object::Ptr& body) {
  return sdk::Response::noStore(sdk::Response::json(status, body));
}

Poco::JSON::Object::Ptr oauthErrorBody(const std::string& error, const std::string& description) {
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("error", error);
  body->set("error_description", description);
  // The contract's members too, so one client reads every error of this API alike.
  body->set("code", error);
  body->set("detail", description);
  return body;
}

sdk::Response oauthError(int status, const std::string& error, const std::string& description) {
  return noStore(status, oauthErrorBody(error, description));
}

}  // namespace svc::plugins::auth
