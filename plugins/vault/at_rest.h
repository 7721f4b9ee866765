// Encryption at rest: every value is sealed (AES-256-GCM, a fresh nonce, associated data naming
// where it belongs) under a data key; data keys live in the database (key_store.h), each wrapped
// by the wrapping key of `vault.master_key_file`, the one file every svcd sharing the database
// holds a copy of. The current data key is the database's: a write reads it in its own
// transaction, so a rotation on any svcd is used by every svcd at once. Data keys are cached once
// unwrapped; one this process has not seen is loaded from the database when a value names it.
#pragma once

#include "key_store.h"
#include "master_keys.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::vault {

/// A value as stored: the id of the data key it is sealed under, and base64(nonce, ciphertext,
/// tag).
struct SealedAtRest {
  std::string key_id;
  std::string data;
};

/// What this svcd knows of the keys (GET /admin/vault/keys/).
struct KeyStatus {
  KeyState state;
  std::vector<std::string> data_keys;  ///< In the database.
  std::vector<std::string> file_keys;  ///< The ids of the key file's lines, as read now.
};

/// Where a replacement of the wrapping key stands.
struct Replacement {
  std::string wrap_id;  ///< The new wrapping key (or the one in use, once finished).
  std::string file;     ///< Where the new key file was written (begin only).
  long data_keys = 0;   ///< How many data keys it wraps.
};

/// Seals and opens values, and keeps the data keys. Thread-safe.
class AtRestCipher {
 public:
  /// Reads the key file, making it (one new key) when it does not exist.
  /// @param key_file the file. @param database where the data keys are.
  /// @throws std::runtime_error when it cannot be read or made.
  AtRestCipher(std::string key_file, sdk::Database& database);

  /// @return whether the constructor made the file.
  bool madeFile() const { return made_file_; }
  /// @return the file's path.
  const std::string& path() const { return path_; }

  /// At svcd's start (the tables exist): claims the database for this file's key when no svcd
  /// did, moves the keys of an older install's file (that values use) into the database, makes a
  /// current data key when there is none, and opens every data key. Idempotent: several svcd may
  /// run it at once. @throws std::runtime_error naming the file when it does not open them.
  void start();

  /// @param s the write's session (its transaction). @param aad where the value belongs.
  /// @param plaintext the value. @return it sealed under the database's current data key.
  SealedAtRest seal(Poco::Data::Session& s, std::string_view aad, std::string_view plaintext);
  /// @param sealed a stored value. @param aad where it was found. @return the plaintext, or
  /// nullopt when it does not open there (damaged, moved, or its key is not to be had).
  std::optional<std::string> open(const SealedAtRest& sealed, std::string_view aad);

  /// @return a count that changes whenever the data keys this process uses change.
  std::uint64_t generation() const { return generation_.load(); }
  /// @return the database's current data key.
  std::string currentKeyId();

  /// Makes a new data key, wrapped under every wrapping key in use, and makes it current.
  /// @return its id. @throws sdk::HttpError 409 while a replacement runs whose new file this
  /// svcd does not hold.
  std::string rotate();
  /// Drops the data keys no value uses, except the current one and the one before it.
  /// @return their ids.
  std::vector<std::string> retire();

  /// Writes a new key file beside this one (`<file>.new`) and wraps every data key under its key
  /// too, in one transaction. @throws sdk::HttpError 409 when another replacement runs.
  Replacement beginReplacement();
  /// Drops the old wrapping: the new file must be in place (this svcd's, read now).
  /// @throws sdk::HttpError 409 when none runs or the file is not the new one yet.
  Replacement finishReplacement();
  /// Drops the new wrapping of a replacement. @return the replacement's key id ("" for none).
  std::string cancelReplacement();
  /// @return the state, the data keys and the file's keys.
  KeyStatus status();

 private:
  struct Stamp {
    std::uint64_t inode = 0, size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const Stamp& o) const {
      return inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
    }
  };
  // Reads the file again when it changed; its keys are added to those held (never dropped: a
  // file replaced while serving keeps the old key usable until svcd restarts).
  void refreshFile();
  void hold(const MasterKeys& keys);
  bool holds(const std::string& wrap_id);
  std::string wrapWith(const std::string& wrap_id, const std::string& key_id,
                       const std::string& key);
  // Wraps every data key of the database under wrap_id too (in tx). @return how many.
  long wrapEveryDataKey(Poco::Data::Session& tx, const std::string& wrap_id);
  // The data key: cached, else loaded (through s, or a session of its own) and unwrapped.
  std::optional<std::string> dataKey(const std::string& id, Poco::Data::Session* s);
  void noteCurrent(const std::string& id);
  void bootstrap();
  std::runtime_error fileProblem(const std::string& what) const;

  std::string path_;
  bool made_file_ = false;
  KeyStore store_;
  std::mutex mutex_;
  std::map<std::string, std::string> file_keys_;  ///< file key id → its bytes
  std::map<std::string, std::string> wraps_;      ///< file key id → the wrapping key it gives
  std::string first_file_key_;                    ///< the file's first line's id
  std::optional<Stamp> stamp_;
  std::map<std::string, std::string> data_keys_;  ///< data key id → bytes
  std::string seen_current_;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace svc::plugins::vault
