// End-to-end encryption on the client's side: the contract's scheme, with libsodium.
//
// Argon2id(passphrase, salt) gives a 32-byte seed (`crypto_pwhash`, ALG_ARGON2ID13, opslimit `t`,
// memlimit `m` KiB, a 16-byte salt); the seed gives an X25519 key pair (`crypto_box_seed_keypair`);
// a value is a sealed box to the public key (`crypto_box_seal`), sent as `e2e::<base64>` (standard
// base64 with padding); the account's verifier is a sealed box of `svc-e2e-verify`. The server
// keeps the salt, the public key, the verifier and the KDF parameters (`GET /api/encryption/`) and
// never sees a passphrase, seed, secret key or opened value.
//
// Part of the static library SvcSdk::e2e (which links libsodium), not of SvcSdk::sdk: a plugin
// whose svcctl commands seal or open values links it; the others do not link libsodium at all.
// svc/sdk/e2e_cli.h adds what a command needs (the passphrase, the account's metadata, unlocking).
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace svc::sdk::e2e {

inline constexpr std::string_view kPrefix = "e2e::";  // what a sealed value starts with
inline constexpr std::string_view kVerifierText = "svc-e2e-verify";  // what the verifier seals
inline constexpr std::size_t kSaltBytes = 16;
inline constexpr std::size_t kSeedBytes = 32;
inline constexpr std::size_t kPublicKeyBytes = 32;
inline constexpr std::size_t kSealOverhead = 48;  // an ephemeral public key and a MAC

/// A failure of the scheme itself (libsodium could not start, Argon2id had no memory, a key of
/// the wrong size): not a wrong passphrase, which open() and checkVerifier() answer as such.
class E2eError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bytes that must not outlive their use: a passphrase, a seed, a secret key, an opened value.
/// Locked in memory where the OS allows it (`sodium_mlock`: kept out of swap and core dumps; a
/// low RLIMIT_MEMLOCK is no error), wiped (`sodium_memzero`) when destroyed, moved or grown.
/// Move-only: a copy would be one more place to wipe.
class SecretBytes {
 public:
  SecretBytes() = default;
  /// `size` zero bytes.
  explicit SecretBytes(std::size_t size);
  /// A copy of `bytes` (the caller wipes its own copy).
  static SecretBytes copyOf(std::string_view bytes);
  ~SecretBytes();
  SecretBytes(SecretBytes&& other) noexcept;
  SecretBytes& operator=(SecretBytes&& other) noexcept;
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;

  unsigned char* data() { return data_; }
  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  /// Appends one byte; growing copies into a new locked buffer and wipes the old one.
  void push_back(unsigned char byte);
  /// Drops the last byte (wiped).
  void pop_back();
  /// @return whether the OS locked the bytes in memory.
  bool locked() const { return locked_; }

 private:
  void release() noexcept;
  unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  bool locked_ = false;
};

/// The KDF's parameters: Argon2id13 with opslimit `t` and a memlimit of `m` KiB; `p` (lanes) is
/// always 1 in libsodium. The contract's minimum is the default.
struct Kdf {
  int t = 3;
  int m = 65536;
  int p = 1;
};

/// @return the 32-byte seed of `passphrase` and `salt` (16 raw bytes). @throws E2eError for a
/// salt of another size, parameters libsodium refuses, or too little memory for `m`.
SecretBytes deriveSeed(std::string_view passphrase, std::string_view salt, const Kdf& kdf);

/// An X25519 key pair; the secret key is SecretBytes.
class KeyPair {
 public:
  /// @param seed 32 bytes (deriveSeed). @return `crypto_box_seed_keypair(seed)`.
  static KeyPair fromSeed(const SecretBytes& seed);
  /// @return fromSeed(deriveSeed(passphrase, salt, kdf)), the seed wiped at once.
  static KeyPair derive(std::string_view passphrase, std::string_view salt, const Kdf& kdf);

  /// @return the public key, 32 raw bytes.
  const std::string& publicKey() const { return public_key_; }
  /// @return the secret key, 32 bytes.
  const SecretBytes& secretKey() const { return secret_key_; }
  /// @param box a raw sealed box. @return what it seals, or nullopt when it is not a sealed box
  /// to this key pair (another key, altered, too short).
  std::optional<SecretBytes> openBox(std::string_view box) const;
  /// @param value `e2e::<base64>`. @return what it seals, or nullopt when it is not a value
  /// sealed to this key pair (another key, not `e2e::`, not base64, altered).
  std::optional<SecretBytes> open(std::string_view value) const;

 private:
  std::string public_key_;
  SecretBytes secret_key_;
};

/// @param public_key 32 raw bytes. @return a raw sealed box of `plaintext` to it.
/// @throws E2eError for a key of another size.
std::string sealBox(std::string_view plaintext, std::string_view public_key);
/// @return `e2e::` and the standard padded base64 of sealBox(plaintext, public_key).
std::string seal(std::string_view plaintext, std::string_view public_key);
/// @return whether `value` is meant as a sealed value (starts with `e2e::`); whether it opens is
/// KeyPair::open()'s business.
bool isSealed(std::string_view value);

/// @param public_key 32 raw bytes. @return a new verifier: the standard padded base64 of a sealed
/// box of `svc-e2e-verify` (62 bytes) to it.
std::string makeVerifier(std::string_view public_key);
/// @return whether the verifier (base64) opens with `keys` to `svc-e2e-verify`: whether the
/// passphrase that made `keys` is the account's.
bool checkVerifier(std::string_view verifier, const KeyPair& keys);
/// @return 16 new random bytes (libsodium's `randombytes_buf`), for a new salt.
std::string newSalt();
/// Wipes `text` (`sodium_memzero`) and empties it: for a std::string that held an opened value
/// or a server's answer carrying plaintexts, once it is no longer needed.
void wipe(std::string& text);

}  // namespace svc::sdk::e2e
