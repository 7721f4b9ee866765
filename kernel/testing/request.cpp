// RequestBuilder, TestResponse and the principals of the test kit.
#include <svc/sdk/testing.h>

#include <Poco/JSON/Parser.h>
#include <Poco/String.h>

#include <sstream>
#include <stdexcept>

namespace svc::sdk::testing {

RequestBuilder::RequestBuilder(std::string method, std::string target)
    : method_(std::move(method)), target_(std::move(target)) {}

RequestBuilder& RequestBuilder::header(const std::string& name, std::string value) {
  headers_[Poco::toLower(name)] = std::move(value);
  return *this;
}

RequestBuilder& RequestBuilder::json(const Poco::JSON::Object::Ptr& body) {
  std::ostringstream out;
  body->stringify(out);
  return json(out.str());
}

RequestBuilder& RequestBuilder::json(std::string text) {
  return body(std::move(text), "application/json");
}

RequestBuilder& RequestBuilder::body(std::string bytes, std::string content_type) {
  body_ = std::move(bytes);
  return header("content-type", std::move(content_type));
}

RequestBuilder& RequestBuilder::as(const Principal& principal) {
  principal_ = principal;
  return *this;
}

RequestBuilder& RequestBuilder::identity(std::string uuid) {
  return header("x-svc-identity", std::move(uuid));
}

RequestBuilder& RequestBuilder::from(std::string client_address) {
  client_address_ = std::move(client_address);
  return *this;
}

RequestBuilder& RequestBuilder::waitAtMost(std::chrono::milliseconds wait) {
  wait_ = wait;
  return *this;
}

std::optional<std::string> TestResponse::header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (Poco::icompare(n, name) == 0) return v;
  }
  return std::nullopt;
}

Poco::JSON::Object::Ptr TestResponse::json() const {
  try {
    auto parsed = Poco::JSON::Parser().parse(body);
    if (auto object = parsed.extract<Poco::JSON::Object::Ptr>()) return object;
  } catch (const std::exception&) {
  }
  throw std::runtime_error("the body is not a JSON object: " + body.substr(0, 200));
}

std::string TestResponse::code() const {
  try {
    return json()->optValue<std::string>("code", "");
  } catch (const std::runtime_error&) {
    return "";
  }
}

Principal managementPrincipal(const std::string& account) {
  Principal p;
  p.kind = PrincipalKind::kManagement;
  p.account_id = account;
  p.key_id = "test-management-key";
  return p;
}

Principal identityPrincipal(const std::string& account, const std::string& identity) {
  Principal p;
  p.kind = PrincipalKind::kIdentity;
  p.account_id = account;
  p.key_id = "test-identity-key";
  p.bound_identity = identity;
  return p;
}

Principal userPrincipal(const std::string& account, const std::string& user) {
  Principal p;
  p.kind = PrincipalKind::kUser;
  p.account_id = account;
  p.user_id = user;
  return p;
}

}  // namespace svc::sdk::testing
