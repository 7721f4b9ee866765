// The identity extension registry (sdk/identity_extensions.h): what other plugins add to an
// identity, and the identity's JSON composed from it.
#pragma once

#include "identity_shapes.h"
#include "identity_store.h"

#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/schema.h>

#include <Poco/JSON/Object.h>

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

namespace svc::plugins::identities {

class Extensions : public sdk::IdentityExtensions {
 public:
  void add(std::shared_ptr<sdk::IdentityExtension> extension) override;

  /// @return the extensions, in the order of their capabilities' names.
  std::vector<std::shared_ptr<sdk::IdentityExtension>> all() const;
  /// @return the extension providing action, or nullptr.
  std::shared_ptr<sdk::IdentityExtension> forAction(const std::string& action) const;
  /// Refuses a create body that asks for a contract capability no extension provides: 422
  /// `feature_not_enabled` naming it. Then lets every extension check its fields.
  void validateCreate(const sdk::Request& request) const;
  /// @return the identity's shapes with every extension added so far.
  IdentityShapes shapes() const;
  /// @param pick one of the shapes. @return a schema that is always that shape as it is now (for
  /// declarations made before the extensions are added: Schema::late).
  sdk::Schema late(sdk::Schema IdentityShapes::*pick) const;
  /// @return the extensions owning an updatable field that a PUT/PATCH body carries (even as
  /// null): those whose update() the identity's update transaction calls.
  std::vector<std::shared_ptr<sdk::IdentityExtension>> updating(const sdk::Request& request) const;
  /// @throws HttpError 404 `feature_not_enabled` naming the capability when action belongs to a
  /// contract capability that no plugin provides; 404 `not_found` when no capability has it.
  [[noreturn]] void refuseAction(const std::string& action) const;

  /// @return the identities' JSON, each with every capability's member (null when it has none).
  std::vector<Poco::JSON::Object::Ptr> json(const std::vector<Identity>& identities) const;
  /// @return one identity's JSON with the members given (a new identity, before its commit).
  Poco::JSON::Object::Ptr json(const Identity& identity,
                               const std::map<std::string, Poco::Dynamic::Var>& members) const;

 private:
  /// @return every member name an identity shows: the contract's and the extensions'.
  std::vector<std::string> memberNames() const;

  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<sdk::IdentityExtension>> by_name_;
  IdentityShapes shapes_ = composeShapes({});
};

/// @return `feature_not_enabled` with status (422 for a field asked for, 404 for an action) saying
/// capability is not enabled on this server.
sdk::HttpError capabilityMissing(const std::string& capability, int status);

}  // namespace svc::plugins::identities
