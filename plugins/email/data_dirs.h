// The email plugin keeps its files in its data directory (`data.dir/email/`). Older svcd kept
// them one level deeper, in `data.dir/email/email/` (the plugin added its own name to a
// directory that already carried it); this moves them where plugins/email/README.md says they are.
#pragma once

#include <string>

namespace svc::plugins::email {

/// Moves a directory an older svcd kept at `legacy` to `current`, so what it holds (acknowledged
/// mail not yet filed, attachment bytes) is not left behind by an upgrade. A rename on the same
/// file system: the directory is at one path or the other, never half-moved.
/// @param lock_name a file in `legacy` a running svcd holds an flock on (the spool's `lock`), or
/// empty. @return true when it moved one; false when there is nothing at `legacy` (or another
/// process moved it first). @throws std::runtime_error when both paths exist (svcd must not
/// pick one and leave the other's data unread), the lock is held, or the rename fails.
bool adoptLegacyDirectory(const std::string& legacy, const std::string& current,
                          const std::string& lock_name = "");

}  // namespace svc::plugins::email
