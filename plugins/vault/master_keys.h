// The server's master keys for the vault's encryption at rest, in `vault.master_key_file`.
//
// The file holds one key per line, `<id> <base64 of 32 bytes>`, the current key first; the others
// only decrypt what was written under them until a rotation has re-encrypted it. Every change is a
// read-change-write under an exclusive lock on `<file>.lock` (several svcd may share the file), and
// the file is always written whole, to a temporary file renamed over it, so a crash leaves the old
// file or the new one, never half of one. It must be a regular file of svcd's user, mode 0600.
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

  /// @return the key new values are encrypted under.
  const MasterKey& current() const { return keys_.front(); }
  /// @param id a key id. @return the key, or nullptr when the file has none by that id.
  const MasterKey* find(const std::string& id) const;
  /// @return every key, the current one first.
  const std::vector<MasterKey>& all() const { return keys_; }

  /// @return these keys with a new current key first (its id unlike any other).
  MasterKeys withNewCurrent() const;
  /// @param ids the ids to keep (the current key is always kept). @return the kept keys.
  MasterKeys keeping(const std::vector<std::string>& ids) const;
  /// Writes the keys to path (0600, atomically). @throws std::runtime_error on failure.
  void save(const std::string& path) const;

 private:
  std::vector<MasterKey> keys_;
};

}  // namespace svc::plugins::vault
