// The operator's routes over the vault's keys, beside the rotation: what this svcd knows of them
// (`GET /admin/vault/keys/`) and the replacement of the master key that wraps the data keys
// (`POST /admin/vault/master-key/`, then `.../finish/` or `.../cancel/`).
#pragma once

#include "at_rest.h"

#include <svc/sdk/http.h>
#include <svc/sdk/schema.h>

namespace svc::plugins::vault {

/// The handlers; the work is AtRestCipher's.
class KeyRoutes {
 public:
  /// @param cipher the keys.
  explicit KeyRoutes(AtRestCipher& cipher) : cipher_(cipher) {}
  /// GET /admin/vault/keys/.
  sdk::Response status(sdk::Request& r);
  /// POST /admin/vault/master-key/: a new key file beside this one, every data key wrapped under
  /// its key too.
  sdk::Response begin(sdk::Request& r);
  /// POST /admin/vault/master-key/finish/: only the new key wraps.
  sdk::Response finish(sdk::Request& r);
  /// POST /admin/vault/master-key/cancel/: only the old key wraps.
  sdk::Response cancel(sdk::Request& r);

  /// @return what status answers.
  static sdk::Schema statusSchema();
  /// @return what begin, finish and cancel answer.
  static sdk::Schema replacementSchema();

 private:
  AtRestCipher& cipher_;
};

}  // namespace svc::plugins::vault
