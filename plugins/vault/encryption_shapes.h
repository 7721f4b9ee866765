// What `/api/encryption/` takes and answers, as JSON Schema (svc/sdk/schema.h): the kernel checks
// bodies against them before the handlers run, and the API description publishes them.
#pragma once

#include <svc/sdk/schema.h>

namespace svc::plugins::vault {

/// @return the body of PUT and PATCH /api/encryption/: the metadata, and under a rekey lease its
/// token and every value sealed to the new key.
sdk::Schema encryptionInputSchema();
/// @return the account's metadata as GET answers it and `encryption.updated` carries it.
sdk::Schema encryptionSchema();
/// @return the answer of POST /api/encryption/rekey/: the lease and every protected value.
sdk::Schema rekeySchema();
/// @return the body of DELETE /api/encryption/rekey/.
sdk::Schema rekeyEndSchema();
/// @return the answer of the operator's POST /admin/vault/rotate-key/.
sdk::Schema rotationSchema();

}  // namespace svc::plugins::vault
