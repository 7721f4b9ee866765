// Blobs as files under the data directory, `<root>/<first two hex digits>/<sha256>`: the store of
// an svcd on SQLite, which owns its database and its directory alike.
#pragma once

#include "blob_store.h"

#include <string>

namespace svc::plugins::email {

class FileBlobStore : public BlobStore {
 public:
  /// @param root the directory (created when missing).
  explicit FileBlobStore(std::string root);
  /// Writes beside, fsyncs, renames: a crash leaves no torn file under a key's name.
  std::string put(std::string_view data) override;
  std::unique_ptr<BlobReader> open(const std::string& sha256) override;

 private:
  std::string pathFor(const std::string& sha256) const;
  std::string root_;
};

}  // namespace svc::plugins::email
