// /api/secrets/ and the same resource under /api/vault/: list (`identity`, `key`), create, and
// one secret read, replaced, patched or deleted. The secret's own columns are the store's; its
// value and notes go to the vault in the same transaction and come back from it (decrypted at
// rest; end-to-end sealed values as the client sealed them).
#pragma once

#include "secret_cache.h"
#include "secret_input.h"
#include "secret_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/routes.h>
#include <svc/sdk/storage.h>
#include <svc/sdk/vault.h>

namespace svc::plugins::secrets {

class SecretRoutes {
 public:
  SecretRoutes(sdk::Database& database, SecretStore& store, sdk::Vault& vault, SecretCache& cache)
      : db_(database), store_(store), vault_(vault), cache_(cache) {}

  /// Registers every route under both prefixes.
  void registerIn(sdk::RouteRegistry& routes);

  /// GET: newest first; `identity` narrows (an identity key sees its own), `key` is exact (an
  /// identity's secret by key is served from the cache when it can be).
  sdk::Response list(sdk::Request& r);
  /// POST: 201 with the secret; 409 `conflict` for a key the identity has.
  sdk::Response create(sdk::Request& r);
  /// GET, PUT (replaces), PATCH (what is given) or DELETE (204) one secret.
  sdk::Response one(sdk::Request& r);

 private:
  /// @return the path's secret when the request may see it. @throws HttpError 404.
  SecretRow visible(Poco::Data::Session& s, const sdk::Request& r);
  /// PUT or PATCH of what `in` gives (not empty).
  sdk::Response write(sdk::Request& r, const SecretInput& in);
  sdk::Response remove(sdk::Request& r);
  sdk::ProtectedFields fieldsOf(Poco::Data::Session& s, const SecretRow& row);
  /// @return the filter's (identity and key) secret, kept or read and kept, or nullptr.
  std::shared_ptr<const CachedSecret> cachedByKey(const SecretFilter& filter);

  sdk::Database& db_;
  SecretStore& store_;
  sdk::Vault& vault_;
  SecretCache& cache_;
};

}  // namespace svc::plugins::secrets
