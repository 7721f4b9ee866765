// Data key rotation (`svcctl vault rotate-key`, `POST /admin/vault/rotate-key/`): a new current
// data key in the database, which every svcd seals under from its next write, then every value
// re-encrypted under it in small transactions while svcd serves. The data key current until then
// stays one more rotation (a write that sealed under it may commit a moment later); older ones go
// once no value uses them.
#pragma once

#include "at_rest.h"
#include "vault_service.h"
#include "vault_store.h"

#include <svc/sdk/http.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace svc::plugins::vault {

/// What a rotation did.
struct RotationResult {
  std::string key_id;                ///< The new current data key.
  long reencrypted = 0;              ///< Values moved to it.
  long failed = 0;                   ///< Values that did not decrypt (left as they were, logged).
  std::vector<std::string> retired;  ///< Data keys dropped from the database.
};

/// Another rotation made a newer key while this one ran.
class RotationSuperseded : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Rotates; one rotation at a time in this process.
class Rotation {
 public:
  /// @param store the tables. @param service opens and seals. @param cipher the keys.
  /// @param settle_ms how long other svcd get to notice the new key before the last pass.
  Rotation(VaultStore& store, VaultService& service, AtRestCipher& cipher, int settle_ms = 1500);
  /// @return what was done. @throws sdk::HttpError 409 while a master key replacement runs whose
  /// new file this svcd lacks.
  RotationResult run();
  /// POST /admin/vault/rotate-key/.
  sdk::Response handle(sdk::Request& r);

 private:
  using Place = std::tuple<std::string, std::string, std::string>;  // holder, record, field
  long pass(const std::string& key_id, std::set<Place>& failed);

  VaultStore& store_;
  VaultService& service_;
  AtRestCipher& cipher_;
  int settle_ms_;
  std::mutex running_;
};

}  // namespace svc::plugins::vault
