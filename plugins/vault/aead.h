// The vault's two primitives, OpenSSL's: AES-256-GCM with a fresh 96-bit nonce per message (values
// under data keys, data keys under the wrapping key), and the derivation of the wrapping key from
// the key file's bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace svc::plugins::vault {

/// @throws std::runtime_error when OpenSSL's providers offer no AES-256-GCM.
void requireAesGcm();
/// @param key 32 bytes. @param aad bound to the message. @param plaintext the message.
/// @return nonce, ciphertext and tag. @throws std::runtime_error when OpenSSL fails.
std::string gcmSeal(std::string_view key, std::string_view aad, std::string_view plaintext);
/// @param key 32 bytes. @param aad what it was sealed with. @param raw what gcmSeal gave.
/// @return the plaintext, or nullopt when it does not open (damaged, other key, other aad).
std::optional<std::string> gcmOpen(std::string_view key, std::string_view aad,
                                   std::string_view raw);
/// @param file_key a line of `vault.master_key_file` (32 bytes). @return the key that wraps data
/// keys: HMAC-SHA256 of a fixed label, so the file's bytes never serve two purposes (an upgraded
/// install keeps its old file key as a data key).
std::string wrappingKeyOf(std::string_view file_key);

}  // namespace svc::plugins::vault
