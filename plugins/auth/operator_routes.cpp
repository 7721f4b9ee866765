#include "operator_routes.h"

#include "auth_http.h"
#include "passwords.h"
#include "user_code.h"

#include <Poco/JSON/Object.h>
#include <Poco/String.h>

namespace svc::plugins::auth {

void OperatorRoutes::registerRoutes(sdk::RouteRegistry& routes) {
  using sdk::AuthNeed;
  using sdk::BodyKind;
  routes.add({"POST", "/admin/auth/users/", AuthNeed::kOperator, BodyKind::kJson, 0,
              "Add a local user.", [this](sdk::Request& r) { return addUser(r); }});
  routes.add({"POST", "/admin/auth/device/approve/", AuthNeed::kOperator, BodyKind::kJson, 0,
              "Approve a device code for a user.",
              [this](sdk::Request& r) { return decide(r, true); }});
  routes.add({"POST", "/admin/auth/device/deny/", AuthNeed::kOperator, BodyKind::kJson, 0,
              "Deny a device code.", [this](sdk::Request& r) { return decide(r, false); }});
  routes.add({"POST", "/admin/auth/accounts/{id}/plan/", AuthNeed::kOperator, BodyKind::kJson, 0,
              "Set an account's plan.", [this](sdk::Request& r) { return setPlan(r); }});
}

sdk::Response OperatorRoutes::addUser(sdk::Request& r) {
  std::string email = Poco::toLower(Poco::trim(boundedField(r, "email", 254, true)));
  auto at = email.find('@');
  if (at == std::string::npos || at == 0 || at + 1 >= email.size() ||
      email.find(' ') != std::string::npos) {
    throw sdk::HttpError::invalid("email", "must be an email address");
  }
  std::string password = boundedField(r, "password", 1024, true);
  if (password.size() < 8) throw sdk::HttpError::invalid("password", "at least 8 characters");
  std::string name = boundedField(r, "name", 200, false);
  if (name.empty()) name = email.substr(0, at);
  auto user = store_.addUser(email, name, hashPassword(password));
  if (!user) throw sdk::HttpError(409, "conflict", "A user with this email already exists.");
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", user->id);
  o->set("email", user->email);
  o->set("name", user->name);
  return sdk::Response::json(201, o);
}

sdk::Response OperatorRoutes::decide(sdk::Request& r, bool approve) {
  std::string code = normalizeUserCode(boundedField(r, "user_code", 32, true));
  if (code.empty()) throw sdk::HttpError::invalid("user_code", "must look like XXXX-XXXX");
  std::optional<User> user;
  if (approve) {
    std::string email = Poco::toLower(Poco::trim(boundedField(r, "user", 254, true)));
    user = store_.userByEmail(email);
    if (!user) throw sdk::HttpError(404, "not_found", "No user has this email.");
  }
  auto account_id = device_.decide(code, user, approve);
  if (!account_id) throw sdk::HttpError(404, "not_found", "No pending device code matches.");
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("user_code", displayUserCode(code));
  o->set("status", approve ? "approved" : "denied");
  if (approve) o->set("account", *account_id);
  return sdk::Response::json(200, o);
}

sdk::Response OperatorRoutes::setPlan(sdk::Request& r) {
  std::string plan = boundedField(r, "plan", 16, true);
  if (plan != "active" && plan != "none") {
    throw sdk::HttpError::invalid("plan", "must be active or none");
  }
  if (!store_.setAccountPlan(r.params.at("id"), plan)) throw sdk::HttpError::notFound("account");
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", r.params.at("id"));
  o->set("plan", plan);
  return sdk::Response::json(200, o);
}

}  // namespace svc::plugins::auth
