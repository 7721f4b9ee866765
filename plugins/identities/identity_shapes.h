// What the identity routes take and answer, as JSON Schema (svc/sdk/schema.h).
//
// An identity's parts come from other plugins (sdk/identity_extensions.h), which add theirs after
// these routes are registered: the contract's part (`name`, and the `email` and `phone` parts with
// their create fields) is fixed here, and composeShapes() adds each extension's declared member
// and fields; the routes declare the composition late (Schema::late), so the kernel refuses a
// field no enabled plugin takes and checks the others' types. The rules of the contract parts'
// fields (an email identifier's characters, a country code) are their plugins', which answer
// `feature_not_enabled` naming the part when it is not enabled: the declarations give those
// fields' types only.
#pragma once

#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/routes.h>
#include <svc/sdk/schema.h>

#include <string>
#include <vector>

namespace svc::plugins::identities {

/// The identity's shapes with every enabled plugin's part.
struct IdentityShapes {
  sdk::Schema identity;  ///< An identity as the API answers it, and the identity.* events carry it.
  sdk::Schema create;    ///< The body of POST /api/identities/.
  sdk::Schema update;    ///< The body of PUT /api/identities/{uuid}/.
  sdk::Schema patch;     ///< The body of PATCH /api/identities/{uuid}/.
  /// The body of POST /api/identities/{uuid}/{action}/ (an action another plugin declares): no
  /// fields, and it says which actions this server's plugins declare.
  sdk::Schema other_action;
};
/// @param capabilities the extensions' (the contract's own, `email` and `phone`, are already in
/// the shapes). @return the shapes with each capability's member and create fields (its
/// updatable ones in PUT and PATCH).
IdentityShapes composeShapes(const std::vector<sdk::IdentityCapability>& capabilities);
/// @return the body of PUT /api/identities/{uuid}/voice-agent/ (PATCH takes it partial()).
sdk::Schema voiceAgentInputSchema();
/// @return an identity's voice-agent settings.
sdk::Schema voiceAgentSchema();

/// A contract action's own route, POST /api/identities/{uuid}/<action>/: what the description
/// shows an agent. It answers the identity.
struct ContractAction {
  std::string summary;
  sdk::Schema body;
  int status = 200;                     ///< Its success status.
  std::vector<sdk::RouteError> errors;  ///< Besides the kernel's and `feature_not_enabled`.
};
/// @param action one of contractIdentityCapabilities()' actions. @return its route's shape.
/// @throws std::logic_error for one this plugin has no shape for (an SDK that added a contract
/// action): svcd refuses to start rather than serve a contract route undescribed.
ContractAction contractAction(const std::string& action);

}  // namespace svc::plugins::identities
