#include <svc/sdk/http.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Stringifier.h>
#include <Poco/String.h>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace svc::sdk {

std::optional<std::string> Request::queryParam(const std::string& name) const {
  auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

std::optional<bool> Request::boolQuery(const std::string& name) const {
  auto v = queryParam(name);
  if (!v) return std::nullopt;
  const std::string l = Poco::toLower(*v);
  if (l == "true" || l == "1") return true;
  if (l == "false" || l == "0") return false;
  throw HttpError::invalid(name, "must be true or false");
}

std::string scopeIdentity(const Request& r) {
  return r.identity ? Poco::toLower(r.identity->uuid) : std::string();
}

bool visibleTo(const Request& r, const std::string& account, const std::string& identity) {
  if (account != r.principal.account_id) return false;
  const std::string scope = scopeIdentity(r);
  return scope.empty() || scope == identity;
}

std::optional<std::string> Request::header(const std::string& name) const {
  auto it = headers.find(Poco::toLower(name));
  if (it == headers.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Request::stringField(const std::string& name) const {
  if (auto f = form.find(name); f != form.end()) return f->second;
  if (!json || !json->has(name) || json->isNull(name)) return std::nullopt;
  auto v = json->get(name);
  if (!v.isString()) throw HttpError::invalid(name, "must be a string");
  return v.convert<std::string>();
}

std::string Request::requiredString(const std::string& name) const {
  auto v = stringField(name);
  if (!v) throw HttpError::invalid(name, "this field is required");
  return *v;
}

std::vector<std::string> Request::stringListField(const std::string& name) const {
  std::vector<std::string> out;
  if (!json || !json->has(name) || json->isNull(name)) return out;
  auto v = json->get(name);
  if (v.isString()) {
    out.push_back(v.convert<std::string>());
    return out;
  }
  Poco::JSON::Array::Ptr list;
  try {
    list = v.extract<Poco::JSON::Array::Ptr>();
  } catch (const Poco::Exception&) {
  }
  const char* problem = "must be a string or a list of strings";
  if (!list) throw HttpError::invalid(name, problem);
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto e = list->get(static_cast<unsigned>(i));
    if (!e.isString()) throw HttpError::invalid(name, problem);
    out.push_back(e.convert<std::string>());
  }
  return out;
}

std::optional<bool> Request::boolField(const std::string& name) const {
  if (!json || !json->has(name) || json->isNull(name)) return std::nullopt;
  auto v = json->get(name);
  if (!v.isBoolean()) throw HttpError::invalid(name, "must be true or false");
  return v.convert<bool>();
}

std::optional<std::string> Request::cookie(const std::string& name) const {
  auto h = header("cookie");
  if (!h) return std::nullopt;
  return cookieValue(*h, name);
}

std::optional<std::string> bearerCredential(std::string_view authorization) {
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  auto skipBlanks = [&](std::size_t at) {
    while (at < authorization.size() && blank(authorization[at])) ++at;
    return at;
  };
  constexpr std::string_view kScheme = "bearer";
  const std::size_t start = skipBlanks(0);
  if (authorization.size() < start + kScheme.size() + 1) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = authorization[start + i];
    if (static_cast<char>(std::tolower(static_cast<unsigned char>(c))) != kScheme[i]) {
      return std::nullopt;
    }
  }
  // At least one blank ends the scheme: "Bearerxyz" is another scheme, not a credential.
  if (!blank(authorization[start + kScheme.size()])) return std::nullopt;
  const std::size_t from = skipBlanks(start + kScheme.size());
  std::size_t to = authorization.size();
  while (to > from && blank(authorization[to - 1])) --to;
  if (to == from) return std::nullopt;
  return std::string(authorization.substr(from, to - from));
}

std::optional<std::string> cookieValue(const std::string& cookie_header, const std::string& name) {
  std::size_t at = 0;
  while (at < cookie_header.size()) {
    std::size_t end = cookie_header.find(';', at);
    if (end == std::string::npos) end = cookie_header.size();
    std::string pair = Poco::trim(cookie_header.substr(at, end - at));
    std::size_t eq = pair.find('=');
    if (eq != std::string::npos && pair.compare(0, eq, name) == 0 && eq == name.size()) {
      std::string value = pair.substr(eq + 1);
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        value = value.substr(1, value.size() - 2);
      }
      return value;
    }
    at = end + 1;
  }
  return std::nullopt;
}

HttpError::HttpError(int status, std::string code, std::string detail)
    : std::runtime_error(detail),
      status_(status),
      code_(std::move(code)),
      detail_(std::move(detail)) {}

HttpError::~HttpError() = default;

HttpError& HttpError::field(const std::string& field, const std::string& message) {
  errors_[field].push_back(message);
  return *this;
}

HttpError& HttpError::extra(const std::string& name, const Poco::Dynamic::Var& value) {
  extras_.emplace_back(name, value);
  return *this;
}

HttpError& HttpError::header(const std::string& name, const std::string& value) {
  headers_.emplace_back(name, value);
  return *this;
}

void FieldErrors::add(const std::string& field, const std::string& message) {
  errors_.emplace_back(field, message);
}

void FieldErrors::throwIfAny() const {
  if (errors_.empty()) return;
  // One problem of several fields (none of the flags is true) is said once, naming them all:
  // `errors` still lists it under each field.
  std::vector<std::pair<std::string, std::string>> problems;  // fields, message
  for (const auto& error : errors_) {  // not a structured binding: C++17 lambdas cannot take one
    auto same = std::find_if(problems.begin(), problems.end(),
                             [&](const auto& p) { return p.second == error.second; });
    if (same == problems.end()) {
      problems.emplace_back(error);
    } else {
      same->first += ", " + error.first;
    }
  }
  std::string detail = "The request is invalid:";
  for (std::size_t i = 0; i < problems.size(); ++i) {
    detail += (i ? "; " : " ") + problems[i].first + ": " + problems[i].second;
  }
  HttpError e(400, "invalid", detail + ".");
  for (const auto& [field, message] : errors_) e.field(field, message);
  throw e;
}

HttpError HttpError::invalid(const std::string& field, const std::string& message) {
  HttpError e(400, "invalid", "The request is invalid: " + field + ": " + message);
  e.field(field, message);
  return e;
}

HttpError HttpError::notFound(const std::string& what) {
  return HttpError(404, "not_found", "The " + what + " was not found.");
}

HttpError HttpError::otherIdentity() {
  return HttpError(403, "permission_denied", "This identity key is bound to another identity.");
}

Response Response::json(int status, const Poco::Dynamic::Var& body) {
  Response r;
  r.status = status;
  std::ostringstream out;
  Poco::JSON::Stringifier::stringify(body, out);
  r.body = out.str();
  return r;
}

Response Response::json(int status, const Poco::JSON::Object::Ptr& body) {
  Response r;
  r.status = status;
  std::ostringstream out;
  body->stringify(out);
  r.body = out.str();
  return r;
}

Response Response::text(int status, std::string body, std::string type) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  r.content_type = std::move(type);
  return r;
}

Response Response::noStore(Response response) {
  response.headers.emplace_back("Cache-Control", "no-store");
  response.headers.emplace_back("Pragma", "no-cache");  // HTTP/1.0 caches (RFC 6749 5.1)
  return response;
}

Response Response::noContent() {
  Response r;
  r.status = 204;
  r.content_type.clear();
  return r;
}

Response Response::hold(std::function<void(std::shared_ptr<Stream>)> on_hold) {
  Response r;
  r.on_hold = std::move(on_hold);
  return r;
}

Stream::~Stream() = default;

}  // namespace svc::sdk
