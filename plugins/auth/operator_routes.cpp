#include "operator_routes.h"

#include "auth_http.h"
#include "auth_shapes.h"
#include "passwords.h"
#include "user_code.h"

#include <Poco/JSON/Object.h>
#include <Poco/String.h>

namespace svc::plugins::auth {

// Left out of the API description (the admin listener's), but declared all the same: the kernel
// checks their bodies and refuses unknown fields as on every route.
void OperatorRoutes::registerRoutes(sdk::RouteRegistry& routes) {
  const std::vector<sdk::Param> none;  // takes no query parameter: the kernel refuses any
  using sdk::AuthNeed;
  using sdk::BodyKind;
  using sdk::Schema;
  const auto email = Schema::string().format("email").maxLength(254);
  const auto user_code =
      Schema::string().maxLength(32).describe("XXXX-XXXX, any case, with or without the hyphen.");
  const auto decision = Schema::object("DeviceDecision")
                            .required("user_code", Schema::string())
                            .required("status", Schema::oneOf({"approved", "denied"}))
                            .optional("account", Schema::string().format("uuid"));
  const sdk::RouteError no_code{404, "not_found", "no pending device code matches"};
  routes.add({"POST",
              "/admin/auth/users/",
              AuthNeed::kOperator,
              BodyKind::kJson,
              0,
              "Add a local user.",
              [this](sdk::Request& r) { return addUser(r); },
              Schema::object("LocalUserInput")
                  .required("email", email)
                  .required("password", Schema::string().minLength(8).maxLength(1024))
                  .optional("name", plainText(200)),
              none,
              {{201, Schema::object("LocalUser")
                         .required("id", Schema::string().format("uuid"))
                         .required("email", Schema::string())
                         .required("name", Schema::string())}},
              {{409, "conflict", "a user has this email"}}});
  routes.add({"POST",
              "/admin/auth/device/approve/",
              AuthNeed::kOperator,
              BodyKind::kJson,
              0,
              "Approve a device code for a user.",
              [this](sdk::Request& r) { return decide(r, true); },
              Schema::object("DeviceApproval")
                  .required("user_code", user_code)
                  .required("user", Schema(email).describe("The approving user's email.")),
              none,
              {{200, decision}},
              {no_code}});
  routes.add({"POST",
              "/admin/auth/device/deny/",
              AuthNeed::kOperator,
              BodyKind::kJson,
              0,
              "Deny a device code.",
              [this](sdk::Request& r) { return decide(r, false); },
              Schema::object("DeviceDenial").required("user_code", user_code),
              none,
              {{200, decision}},
              {no_code}});
  routes.add({"POST",
              "/admin/auth/accounts/{id}/plan/",
              AuthNeed::kOperator,
              BodyKind::kJson,
              0,
              "Set an account's plan.",
              [this](sdk::Request& r) { return setPlan(r); },
              Schema::object("PlanInput").required("plan", Schema::oneOf({"active", "none"})),
              none,
              {{200, Schema::object("AccountPlan")
                         .required("id", Schema::string())
                         .required("plan", Schema::oneOf({"active", "none"}))}}});
}

sdk::Response OperatorRoutes::addUser(sdk::Request& r) {
  const std::string email = Poco::toLower(r.requiredString("email"));
  const std::string password = r.requiredString("password");
  std::string name = r.stringField("name").value_or("");
  if (name.empty()) name = email.substr(0, email.find('@'));
  auto user = store_.addUser(email, name, hashPassword(password));
  if (!user) throw sdk::HttpError(409, "conflict", "A user with this email already exists.");
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", user->id);
  o->set("email", user->email);
  o->set("name", user->name);
  return sdk::Response::json(201, o);
}

sdk::Response OperatorRoutes::decide(sdk::Request& r, bool approve) {
  const std::string code = normalizeUserCode(r.requiredString("user_code"));
  if (code.empty()) throw sdk::HttpError::invalid("user_code", "must look like XXXX-XXXX");
  std::optional<User> user;
  if (approve) {
    const std::string email = Poco::toLower(r.requiredString("user"));
    user = store_.userByEmail(email);
    if (!user) {
      throw sdk::HttpError(404, "not_found",
                           "No user has this email; add one with `svcctl users add EMAIL "
                           "--password-stdin` (POST /admin/auth/users/), then approve again.");
    }
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
  const std::string plan = r.requiredString("plan");
  if (!store_.setAccountPlan(r.params.at("id"), plan)) throw sdk::HttpError::notFound("account");
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", r.params.at("id"));
  o->set("plan", plan);
  return sdk::Response::json(200, o);
}

}  // namespace svc::plugins::auth
