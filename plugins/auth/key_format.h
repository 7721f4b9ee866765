// The format of keys, device codes and refresh tokens, and how they are hashed for storage.
//
// A key is `svc_mgmt_` or `svc_id_`, then 32 random bytes in base62 (43 characters), then a
// 6-character base62 CRC32 of everything before it, so secret scanners and the server can reject
// a mistyped key without a lookup. Only SHA-256 of a key is ever stored.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::auth {

enum class KeyKind { kManagement, kIdentity };

/// @param text a key without its last six characters. @return the six base62 characters of the
/// CRC32 of `text` that end the key.
std::string keyChecksum(std::string_view text);
/// @return the key's prefix (`svc_mgmt_` / `svc_id_`).
std::string_view keyPrefix(KeyKind kind);
/// @return a new key of that kind.
std::string newKey(KeyKind kind);
/// @param key a candidate. @return its kind when its shape and checksum are right.
std::optional<KeyKind> checkKey(std::string_view key);
/// @return the part of a key shown in lists (prefix and 4 characters).
std::string visiblePrefix(std::string_view key);
/// @return base62 of value, left-padded with '0' to width.
std::string base62(const unsigned char* bytes, std::size_t size, std::size_t width);

}  // namespace svc::plugins::auth
