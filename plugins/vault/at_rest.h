// Encryption at rest: AES-256-GCM (OpenSSL) under the current master key, a fresh 96-bit nonce
// per value, and associated data naming where the value belongs, so a value copied to another
// row or field fails to decrypt instead of being served there.
#pragma once

#include "master_keys.h"

#include <chrono>
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
  /// @param key_file the file (made with a new key when absent). @throws std::runtime_error.
  explicit AtRestCipher(std::string key_file);

  /// @param aad where the value belongs. @param plaintext the value. @return it sealed.
  SealedAtRest seal(std::string_view aad, std::string_view plaintext);
  /// @param sealed a stored value. @param aad where it was found. @return the plaintext, or
  /// nullopt when it does not decrypt there (damaged, moved, or under a key the file lacks).
  std::optional<std::string> open(const SealedAtRest& sealed, std::string_view aad);

  /// @return the current key's id.
  std::string currentKeyId();
  /// Makes a new current key and writes it to the file (the old ones stay, to decrypt).
  /// @return its id. @throws std::runtime_error when the file cannot be written.
  std::string rotate();
  /// Drops from the file every key but the current one and those in ids.
  /// @param ids the key ids still in use. @return the ids dropped.
  std::vector<std::string> retireAllBut(const std::vector<std::string>& ids);

 private:
  std::shared_ptr<const MasterKeys> keys(bool force_reload);

  std::string path_;
  std::mutex mutex_;
  std::shared_ptr<const MasterKeys> keys_;
  std::chrono::steady_clock::time_point checked_;
  std::int64_t file_mtime_ns_ = 0;
};

}  // namespace svc::plugins::vault
