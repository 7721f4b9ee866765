#include "auth_http.h"

namespace svc::plugins::auth {

std::optional<std::string> field(const sdk::Request& r, const std::string& name) {
  auto f = r.form.find(name);
  if (f != r.form.end()) return f->second;
  return r.stringField(name);
}

std::string bounded(const std::string& name, std::string value, std::size_t max) {
  if (value.size() > max) {
    throw sdk::HttpError::invalid(name, "at most " + std::to_string(max) + " characters");
  }
  for (unsigned char c : value) {
    if (c < 0x20) throw sdk::HttpError::invalid(name, "must not contain control characters");
  }
  return value;
}

std::string boundedField(const sdk::Request& r, const std::string& name, std::size_t max,
                         bool required) {
  auto v = field(r, name);
  if (!v) {
    if (required) throw sdk::HttpError::invalid(name, "this field is required");
    return "";
  }
  return bounded(name, std::move(*v), max);
}

sdk::Response noStore(int status, const Poco::JSON::Object::Ptr& body) {
  sdk::Response r = sdk::Response::json(status, body);
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("Pragma", "no-cache");
  return r;
}

sdk::Response oauthError(int status, const std::string& error, const std::string& description) {
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("error", error);
  body->set("error_description", description);
  return noStore(status, body);
}

}  // namespace svc::plugins::auth
