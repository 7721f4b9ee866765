// svcctl's side of a passphrase change (and of setting up an account that already has values):
// every protected value of the account re-sealed to new keys under the vault's rekey lease.
#pragma once

#include <svc/sdk/cli.h>
#include <svc/sdk/e2e_cli.h>

#include <functional>

namespace svc::plugins::vault {

/// Takes the lease (`POST /api/encryption/rekey/`), calls `make_new` for the new keys (derive
/// them before: the lease holds every write of the account while this runs), opens
/// each listed value with `old` (a plaintext value, stored before end-to-end encryption, is taken
/// as it is), seals it to the new public key and sends the new metadata, the lease's token and
/// every value in one `PUT /api/encryption/`: all are replaced, or none. On any failure the lease
/// is ended (`DELETE /api/encryption/rekey/` with its token) so that writes go on under the old
/// passphrase; a
/// process killed meanwhile leaves the lease to lapse, and the next change takes it over.
/// @param old the current key pair; null when the account has no end-to-end encryption yet.
/// @param drop_undecryptable whether values the server cannot decrypt at rest (listed as null)
/// may be dropped by the change; when not, their presence refuses it (a svcd with the wrong
/// master key file must not delete what others can read).
/// @return how many values were sealed to the new key. @throws CliError naming a value that does
/// not open with `old`, or counting the undecryptable ones (then nothing is changed); or saying
/// that the change may have been applied when its answer was lost.
std::size_t resealUnderLease(sdk::CliContext& cli, const sdk::e2e::KeyPair* old,
                             const std::function<sdk::e2e::NewKeys()>& make_new,
                             bool drop_undecryptable);

}  // namespace svc::plugins::vault
