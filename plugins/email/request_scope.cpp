#include "request_scope.h"

#include <Poco/JSON/Array.h>
#include <Poco/String.h>

namespace svc::plugins::email {

std::string scopeIdentity(const sdk::Request& r) {
  return r.identity ? Poco::toLower(r.identity->uuid) : std::string();
}

bool visible(const sdk::Request& r, const std::string& account, const std::string& identity) {
  if (account != r.principal.account_id) return false;
  std::string scope = scopeIdentity(r);
  return scope.empty() || scope == identity;
}

std::vector<std::string> listField(const sdk::Request& r, const std::string& name) {
  std::vector<std::string> out;
  if (!r.json || !r.json->has(name) || r.json->isNull(name)) return out;
  auto v = r.json->get(name);
  if (v.isString()) {
    out.push_back(v.convert<std::string>());
    return out;
  }
  Poco::JSON::Array::Ptr a;
  try {
    a = v.extract<Poco::JSON::Array::Ptr>();
  } catch (const Poco::Exception&) {
    throw sdk::HttpError::invalid(name, "must be a string or a list of strings");
  }
  for (std::size_t i = 0; i < a->size(); ++i) {
    auto e = a->get(static_cast<unsigned>(i));
    if (!e.isString()) throw sdk::HttpError::invalid(name, "must be a string or a list of strings");
    out.push_back(e.convert<std::string>());
  }
  return out;
}

std::string requiredText(const sdk::Request& r, const std::string& name) {
  auto v = r.stringField(name);
  if (!v) throw sdk::HttpError::invalid(name, "this field is required");
  return *v;
}

sdk::HttpError emailTaken(const std::string& address) {
  return sdk::HttpError(409, "email_taken",
                        "The address " + address + " is already taken; choose another.");
}

}  // namespace svc::plugins::email
