// The upgrade of an svcd on MySQL/MariaDB that kept attachment bytes as files (data.dir/email/
// blobs/, as every svcd did before blobs moved into the database there): each file is copied into
// the database, then removed. Idempotent: a crash midway leaves files already copied, which the
// next start copies again (the same rows); several svcd may import at once, each its own files.
#pragma once

#include "blob_store.h"

#include <Poco/Logger.h>

#include <cstddef>
#include <string>

namespace svc::plugins::email {

struct BlobImport {
  std::size_t imported = 0;  ///< files copied into the store and removed
  std::size_t kept = 0;      ///< files whose bytes do not match their name, left where they are
};

/// @param dir the directory FileBlobStore kept (`<dir>/<xx>/<sha256>`); nothing when missing.
/// @param into the store to copy into. @param log where what was done (and kept) is said.
/// @return what was done. The directory is removed once it is empty.
/// @throws what the store throws (the database away): the files stay for the next start.
BlobImport importBlobFiles(const std::string& dir, BlobStore& into, Poco::Logger& log);

}  // namespace svc::plugins::email
