// The server's master keys for the vault's encryption at rest, in `vault.master_key_file`.
//
// The file holds one key per line, `<id> <base64 of 32 bytes>`, the current key first; the others
// only decrypt what was written under them until a rotation has re-encrypted it. It is made with
// one fresh key (mode 0600) when absent, and always rewritten whole through a temporary file and
// a rename, so a crash leaves the old file or the new one, never half of one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace svc::plugins::vault {

/// One AES-256 key and its id.
struct MasterKey {
  std::string id;     ///< Short, stored beside every value encrypted under it.
  std::string bytes;  ///< 32 bytes.
};

/// @param count how many. @return that many bytes from OpenSSL's CSPRNG.
std::string randomBytes(std::size_t count);

/// The keys of one file.
class MasterKeys {
 public:
  /// Reads the file, making it with one new key first when it does not exist.
  /// @param path the file. @throws std::runtime_error when it cannot be read, made or parsed, or
  /// other users may read it.
  static MasterKeys load(const std::string& path);
  /// @return a new key with a fresh id.
  static MasterKey generate();

  /// @return the key new values are encrypted under.
  const MasterKey& current() const { return keys_.front(); }
  /// @param id a key id. @return the key, or nullptr when the file has none by that id.
  const MasterKey* find(const std::string& id) const;
  /// @return every key, the current one first.
  const std::vector<MasterKey>& all() const { return keys_; }

  /// @param key the new current key. @return these keys with key first.
  MasterKeys withCurrent(MasterKey key) const;
  /// @param ids the ids to keep (the current key is always kept). @return the kept keys.
  MasterKeys keeping(const std::vector<std::string>& ids) const;
  /// Writes the keys to path (0600, atomically). @throws std::runtime_error on failure.
  void save(const std::string& path) const;

 private:
  std::vector<MasterKey> keys_;
};

}  // namespace svc::plugins::vault
