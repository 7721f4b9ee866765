// `/api/encryption/`: an account's end-to-end encryption metadata, and the passphrase change.
//
// The change is a lease and one atomic call. `POST /api/encryption/rekey/` holds the account's
// vault (every write to it answers 409 `vault_rekeying` until the lease ends) and lists every
// protected value; the client opens them with its old key, seals them to its new one, and sends the
// new metadata with every value and the lease's token in `PUT /api/encryption/`, which replaces
// them all in one transaction, or nothing. An interrupted change leaves the old passphrase working
// once the lease expires (or `DELETE /api/encryption/rekey/` with its token ends it). Setting up
// an account whose vault is empty needs no lease.
#pragma once

#include "vault_service.h"
#include "vault_store.h"

#include <svc/sdk/events.h>
#include <svc/sdk/http.h>

namespace svc::plugins::vault {

/// The routes' handlers.
class EncryptionRoutes {
 public:
  /// @param store the tables. @param service seals values. @param events where
  /// `encryption.updated` goes. @param lease_seconds how long a passphrase change may hold a vault.
  EncryptionRoutes(VaultStore& store, VaultService& service, sdk::EventBus& events,
                   int lease_seconds);

  /// GET /api/encryption/: the metadata, or 404 until set up.
  sdk::Response get(sdk::Request& r);
  /// PUT or PATCH /api/encryption/: sets the metadata (with every value re-sealed, under a lease).
  sdk::Response set(sdk::Request& r);
  /// POST /api/encryption/rekey/: starts a passphrase change.
  sdk::Response beginRekey(sdk::Request& r);
  /// DELETE /api/encryption/rekey/ `{rekey_token}`: ends one without changing anything (only
  /// the lease's own token does).
  sdk::Response endRekey(sdk::Request& r);

 private:
  VaultStore& store_;
  VaultService& service_;
  sdk::EventBus& events_;
  int lease_seconds_;
};

}  // namespace svc::plugins::vault
