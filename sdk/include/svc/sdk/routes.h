// Route registration.
//
// A plugin registers each route with its method, a path pattern with named parameters
// (`/api/email-messages/{id}/reply/`), the credential it needs, its body rules and a handler. The
// kernel matches paths with or without the trailing slash, answers 404/405/413/415/400 itself, and
// calls the handler only with a request that passed all of that and the authentication hook.
#pragma once

#include <svc/sdk/http.h>
#include <svc/sdk/schema.h>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace svc::sdk {

/// The credential a route needs. The kernel enforces it before the handler runs.
enum class AuthNeed {
  kNone,      ///< Public. No credential is read.
  kUser,      ///< A signed-in human (JWT access token or dashboard session).
  kAccount,   ///< The account: a user or a management key. An identity key gets 403.
  kAnyKey,    ///< Any accepted credential; an identity is resolved when one is named.
  kIdentity,  ///< An identity: an identity key, or a user/management key naming one (else 400).
  kOperator,  ///< The operator: served on the admin listener only, with the operator token.
};

/// What the kernel accepts as the request body.
enum class BodyKind {
  kJson,        ///< application/json objects (and an empty body). The default.
  kJsonOrForm,  ///< JSON, or application/x-www-form-urlencoded parsed into Request::form.
  kAny,         ///< Any content type; the raw bytes in Request::body.
};

/// A route's handler.
using Handler = std::function<Response(Request&)>;

/// @param object a plugin's core object (it outlives the routes). @param member its handler.
/// @return a Handler calling object.member(request): routes bound to the classes that serve them.
template <class T>
Handler bindHandler(T& object, Response (T::*member)(Request&)) {
  return [&object, member](Request& r) { return (object.*member)(r); };
}

/// An error a route may answer: its status, its code, and when (for the API description).
struct RouteError {
  int status = 400;
  std::string code;  ///< `conflict`, `vault_rekeying`, ...
  std::string when;  ///< `the identity has a secret with that key`
};

/// One route.
struct Route {
  std::string method;                  ///< GET, POST, PUT, PATCH or DELETE.
  std::string pattern;                 ///< `/api/things/{id}/`; `{name}` matches one segment.
  AuthNeed auth = AuthNeed::kAccount;  ///< The credential it needs.
  BodyKind body = BodyKind::kJson;     ///< What body it accepts.
  std::size_t max_body_bytes = 0;      ///< 0: server.max_body_bytes.
  std::string summary;                 ///< One line for the API reference.
  Handler handler;                     ///< Called for matching, authorized requests.
  /// The JSON body's shape. When set, the kernel checks the body against it after authentication
  /// and answers 400 naming every problem (unknown fields included) before the handler runs.
  std::optional<Schema> request{};
  /// The query parameters it takes. When set, the kernel refuses any other (400 naming it) and
  /// checks each against its schema; nullopt takes any (a route not yet declared).
  std::optional<std::vector<Param>> query{};
  /// Its answers: status → body shape (the API description; the test suites check answers).
  std::map<int, Schema> responses{};
  /// The errors it may answer besides the kernel's own (400 `invalid`, 401, 403, 404, 413, 415).
  std::vector<RouteError> errors{};
  /// false for pages a browser shows (HTML forms), which the API description leaves out.
  bool described = true;
};

/// Where a plugin registers its routes (during the register step only).
class RouteRegistry {
 public:
  virtual ~RouteRegistry();
  /// Registers a route. Registering the same method and pattern twice (by any plugin) refuses
  /// start. @param route the route.
  virtual void add(Route route) = 0;
};

/// Registers routes that take JSON, one call each: the shape most plugins' route tables have.
///   const sdk::JsonRoutes add(routes);
///   add("GET", "/api/things/", AuthNeed::kAnyKey, "Things, newest first.", list_handler,
///       std::nullopt, sdk::pageParams(), {{200, sdk::pageOf(thing, "ThingList")}});
class JsonRoutes {
 public:
  explicit JsonRoutes(RouteRegistry& registry) : registry_(registry) {}
  /// Registers one route (see Route for each part).
  void operator()(std::string method, std::string pattern, AuthNeed need, std::string summary,
                  Handler handler, std::optional<Schema> request, std::vector<Param> query,
                  std::map<int, Schema> responses, std::vector<RouteError> errors = {}) const {
    registry_.add({std::move(method), std::move(pattern), need, BodyKind::kJson, 0,
                   std::move(summary), std::move(handler), std::move(request), std::move(query),
                   std::move(responses), std::move(errors)});
  }

 private:
  RouteRegistry& registry_;
};

}  // namespace svc::sdk
