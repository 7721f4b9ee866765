// What the identity routes take and answer, as JSON Schema (svc/sdk/schema.h).
//
// An identity's parts come from other plugins (sdk/identity_extensions.h), which add theirs after
// these routes are registered: the declarations hold what the contract fixes (`name`, and the
// `email` and `phone` parts with their create fields) and let other members through
// (`additionalProperties`); Extensions::refuseUnknownFields() then refuses, in the handler, a
// field no enabled plugin takes. The rules of those parts' fields (an email identifier's
// characters, a country code) are their plugins', which answer 503 naming the part when it is not
// enabled: the declarations give those fields' types only.
#pragma once

#include <svc/sdk/schema.h>

namespace svc::plugins::identities {

/// @return an identity as the API answers it, and the identity.* events carry it.
sdk::Schema identitySchema();
/// @return the body of POST /api/identities/.
sdk::Schema identityCreateSchema();
/// @return the body of PUT /api/identities/{uuid}/ (PATCH takes it partial()).
sdk::Schema identityUpdateSchema();
/// @return the body of PUT /api/identities/{uuid}/voice-agent/ (PATCH takes it partial()).
sdk::Schema voiceAgentInputSchema();
/// @return an identity's voice-agent settings.
sdk::Schema voiceAgentSchema();
/// @return the body of POST /api/identities/{uuid}/{action}/: the contract's actions' fields.
sdk::Schema identityActionSchema();

}  // namespace svc::plugins::identities
