// The key file of the vault's encryption at rest, `vault.master_key_file`: the master key that
// wraps the data keys kept in the database (at_rest.h), the same file on every machine.
//
// The file holds one key per line, `<id> <base64 of 32 bytes>`. A new file has one; a file from
// before data keys may hold several, the first of which (or the one the database names) wraps,
// the others kept for the values sealed under them until start moves them into the database. It is
// made under an exclusive lock on `<file>.lock`, written whole, to a temporary file renamed over
// it, so a crash leaves no half of one. It must be a regular file of svcd's user, mode 0600.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::vault {

/// @param count how many. @return that many bytes from OpenSSL's CSPRNG.
std::string randomBytes(std::size_t count);

/// One AES-256 key and its id.
struct MasterKey {
  std::string id;     ///< Short, stored beside every value encrypted under it.
  std::string bytes;  ///< 32 bytes.
};

/// Holds `<file>.lock` exclusively while it lives: one read-change-write of the file at a time,
/// across processes.
class KeyFileLock {
 public:
  /// @param path the key file. @throws std::runtime_error when the lock cannot be taken.
  explicit KeyFileLock(const std::string& path);
  ~KeyFileLock();
  KeyFileLock(const KeyFileLock&) = delete;
  KeyFileLock& operator=(const KeyFileLock&) = delete;

 private:
  int fd_ = -1;
};

/// The keys of one file.
class MasterKeys {
 public:
  /// Reads the file. @param path the file. @return its keys, or nullopt when it does not exist.
  /// @throws std::runtime_error when it cannot be read or parsed, is not a regular file of this
  /// user, or other users may read it.
  static std::optional<MasterKeys> read(const std::string& path);
  /// @return keys holding one new key.
  static MasterKeys fresh();

  /// @return the file's first key (the wrapping key of a new database).
  const MasterKey& current() const { return keys_.front(); }
  /// @param id a key id. @return the key, or nullptr when the file has none by that id.
  const MasterKey* find(const std::string& id) const;
  /// @return every key, in the file's order.
  const std::vector<MasterKey>& all() const { return keys_; }

  /// Writes the keys to path (0600, atomically). @throws std::runtime_error on failure.
  void save(const std::string& path) const;

 private:
  std::vector<MasterKey> keys_;
};

}  // namespace svc::plugins::vault
