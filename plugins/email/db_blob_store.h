// Blobs as rows of the database, for svcd on MySQL/MariaDB (a Galera cluster among them): every
// svcd sharing the database reads every blob, whatever machine stored it, with no shared
// directory. A blob is its chunks (email_blob_chunks, kBlobPieceBytes each, one row per chunk)
// and then its manifest (email_blobs: size and chunk count), written last: a blob is there once
// its manifest is, and a reader never sees one half written.
//
// Each chunk is its own short transaction (a Galera write set stays small, and a retried one
// writes the same row again); a reader takes one chunk per query, each on a session it gives back,
// so a slow download holds neither a connection nor more than a chunk in memory. Poco's MySQL
// connector gives each result column a buffer of the column's declared size (MEDIUMBLOB: 16 MiB,
// and LONGBLOB crashes it), so a chunk is read as SUBSTRING(bytes, 1, kBlobPieceBytes), whose
// declared size is the chunk's.
#pragma once

#include "blob_store.h"

#include <svc/sdk/storage.h>

namespace svc::plugins::email {

class DbBlobStore : public BlobStore {
 public:
  /// @param db the database (its tables come from MailStore::migrations()).
  explicit DbBlobStore(sdk::Database& db);
  /// Chunks first, each in a transaction of its own, then the manifest. Safe to run at once in
  /// several svcd for the same bytes: each writes the same rows.
  std::string put(std::string_view data) override;
  std::unique_ptr<BlobReader> open(const std::string& sha256) override;
  /// @param sha256 a key. @return whether the blob is stored whole.
  bool has(const std::string& sha256);

 private:
  sdk::Database& db_;
};

}  // namespace svc::plugins::email
