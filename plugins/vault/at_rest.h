// Encryption at rest: AES-256-GCM (OpenSSL) under the current master key, a fresh 96-bit nonce
// per value, and associated data naming where the value belongs, so a value copied to another
// row or field fails to decrypt instead of being served there.
#pragma once

#include "master_keys.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::vault {

/// A value as stored: the id of the key it is encrypted under, and base64(nonce, ciphertext, tag).
struct SealedAtRest {
  std::string key_id;
  std::string data;
};

/// Seals and opens values under the keys of `vault.master_key_file`. Thread-safe. Several svcd on
/// one database share the file: each notices within a second that another rotated it.
class AtRestCipher {
 public:
  /// Reads the file, making it (with one new key) when it does not exist.
  /// @param key_file the file. @throws std::runtime_error when it cannot be read or made.
  explicit AtRestCipher(std::string key_file);

  /// @return whether the constructor made the file (it did not exist).
  bool madeFile() const { return made_file_; }
  /// @return the file's path.
  const std::string& path() const { return path_; }

  /// @param aad where the value belongs. @param plaintext the value. @return it sealed under the
  /// current key.
  SealedAtRest seal(std::string_view aad, std::string_view plaintext);
  /// @param sealed a stored value. @param aad where it was found. @return the plaintext, or
  /// nullopt when it does not decrypt there (damaged, moved, or under a key the file lacks).
  std::optional<std::string> open(const SealedAtRest& sealed, std::string_view aad);

  /// @return a count that changes whenever this process's keys change (a rotation or a
  /// retirement here, or the file rewritten by another process).
  std::uint64_t generation() const { return generation_.load(); }

  /// @return the current key's id.
  std::string currentKeyId();
  /// @return the ids of every key of the file, the current one first.
  std::vector<std::string> keyIds();
  /// Makes a new current key and writes it to the file (the old ones stay, to decrypt).
  /// @return its id. @throws std::runtime_error when the file cannot be read or written.
  std::string rotate();
  /// Drops the keys named in ids from the file, unless current or in use.
  /// @param ids candidates. @param in_use the ids some value is encrypted under.
  /// @return the ids dropped.
  std::vector<std::string> retire(const std::vector<std::string>& ids,
                                  const std::vector<std::string>& in_use);

 private:
  struct Stamp {
    std::uint64_t inode = 0, size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const Stamp& o) const {
      return inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
    }
  };
  static std::optional<Stamp> stampOf(const std::string& path);
  std::shared_ptr<const MasterKeys> keys(bool force_reload);
  // Under the file lock: the file's keys now (it must exist).
  MasterKeys readLocked();
  void adopt(MasterKeys keys);

  std::string path_;
  bool made_file_ = false;
  std::mutex mutex_;
  std::shared_ptr<const MasterKeys> keys_;
  std::chrono::steady_clock::time_point checked_;
  std::optional<Stamp> stamp_;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace svc::plugins::vault
