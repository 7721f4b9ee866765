// Attachment bytes, content-addressed: a blob's key is the SHA-256 of its bytes, so the same file
// attached a thousand times is stored once, and storing it again is harmless. A blob is stored
// whole (put() returns once it is durable) before the database row that names it commits.
//
// Two stores: files under the data directory (FileBlobStore, on SQLite, where one svcd owns the
// database and its directory), and rows of the database (DbBlobStore, on MySQL/MariaDB, where
// several svcd with directories of their own share the database and every one reads every blob).
// email_plugin.cpp picks one by the database's dialect.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace svc::plugins::email {

/// A stored blob, read in pieces (a download streams them; none holds the whole blob).
class BlobReader {
 public:
  virtual ~BlobReader();
  /// @return the blob's size in bytes.
  virtual std::uint64_t size() const = 0;
  /// @return the next piece (at most kBlobPieceBytes), or an empty string after the last.
  /// @throws std::runtime_error when the store cannot give the rest of the blob.
  virtual std::string next() = 0;
};

/// The largest piece a BlobReader gives, and the chunk DbBlobStore keeps in one row.
constexpr std::size_t kBlobPieceBytes = 256 * 1024;

class BlobStore {
 public:
  virtual ~BlobStore();
  /// Stores bytes durably. @param data the bytes. @return their SHA-256 in hex (the key).
  virtual std::string put(std::string_view data) = 0;
  /// @param sha256 a key put() returned. @return a reader of its bytes, or nullptr when missing.
  virtual std::unique_ptr<BlobReader> open(const std::string& sha256) = 0;
  /// The whole blob in memory, for those that need it whole (a message being assembled).
  /// @param sha256 a key. @return the bytes, or nullopt when missing.
  std::optional<std::string> get(const std::string& sha256);
};

/// @return whether `key` is a key put() can have returned (64 lower-case hex digits).
bool isBlobKey(const std::string& key);

}  // namespace svc::plugins::email
