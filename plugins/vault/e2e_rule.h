// The end-to-end rule and the shape of the encryption metadata, written once for every plugin that
// keeps protected values (the contract's "Passwords, secrets, encryption").
//
// Scheme (the client's business; the server only checks shapes): Argon2id(passphrase, salt) gives a
// 32-byte seed, the seed an X25519 key pair, values are libsodium sealed boxes to the public key
// sent as `e2e::<standard base64>`, and the verifier is a sealed box of `svc-e2e-verify`.
#pragma once

#include <svc/sdk/http.h>

#include <optional>
#include <string>
#include <string_view>

namespace svc::plugins::vault {

/// libsodium's crypto_box_SEALBYTES: an ephemeral public key and a MAC.
inline constexpr std::size_t kSealOverhead = 32 + 16;
/// The verifier's plaintext.
inline constexpr std::string_view kVerifierText = "svc-e2e-verify";

/// @param value a value as a client sent it. @return whether it is `e2e::` followed by canonical,
/// padded standard base64 of at least a sealed box's overhead.
bool isSealedValue(std::string_view value);

/// @param value a protected field's value. @param end_to_end whether the account has encryption
/// set up. @return why the value is refused, or nullopt when it is accepted ("" always is).
std::optional<std::string> protectedValueError(std::string_view value, bool end_to_end);

/// The account's encryption metadata.
struct EncryptionSetup {
  std::string salt;        ///< base64 of 16 bytes.
  std::string public_key;  ///< base64 of 32 bytes.
  std::string verifier;    ///< base64 of a sealed box of kVerifierText.
  int t = 3;               ///< Argon2id opslimit.
  int m = 65536;           ///< Argon2id memlimit in KiB.
  int p = 1;               ///< Argon2id parallelism.
};

/// Reads `{salt, public_key, verifier, kdf?}` from a request body that passed the route's
/// declaration (encryption_shapes.h, which checks their shapes).
/// @param request the PUT/PATCH. @return the metadata.
EncryptionSetup parseEncryptionSetup(const sdk::Request& request);

}  // namespace svc::plugins::vault
