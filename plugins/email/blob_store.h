// Attachment bytes, stored content-addressed under the data directory: the file's name is the
// SHA-256 of its bytes, so the same file attached a thousand times is stored once, and a file is
// written (and fsynced) before the database row that names it commits.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace svc::plugins::email {

class BlobStore {
 public:
  /// @param root the directory (created when missing).
  explicit BlobStore(std::string root);
  /// Stores bytes durably. @param data the bytes. @return their SHA-256 in hex (the key).
  std::string put(std::string_view data);
  /// @param sha256 a key put() returned. @return the bytes, or nullopt when missing.
  std::optional<std::string> get(const std::string& sha256) const;

 private:
  std::string pathFor(const std::string& sha256) const;
  std::string root_;
};

}  // namespace svc::plugins::email
