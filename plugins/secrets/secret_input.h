// What a client may write into a secret, checked whole before anything is stored: one 400 names
// every bad field.
//   key    1-128 characters of A-Z a-z 0-9 _ . : / - (case-sensitive): an environment variable's
//          name, an API key's label or a path such as `stripe/live:api-key` fits.
//   value  a string of 1 to 65,536 bytes; sealed (`e2e::<base64>`), as long as sealing 65,536
//          bytes makes it.
//   notes  optional; up to 16,384 bytes, sealed likewise; null or "" is none.
#pragma once

#include <svc/sdk/http.h>
#include <svc/sdk/schema.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace svc::plugins::secrets {

inline constexpr std::size_t kMaxKeyLength = 128;
inline constexpr std::size_t kMaxValueBytes = 64 * 1024;
inline constexpr std::size_t kMaxNotesBytes = 16 * 1024;

/// @param plain_bytes a plaintext's length. @return the length of its `e2e::` form: a sealed box
/// (48 bytes more) in padded base64 after the prefix.
constexpr std::size_t sealedLength(std::size_t plain_bytes) {
  return 5 + (plain_bytes + 48 + 2) / 3 * 4;
}

/// @param key a candidate key. @return whether it follows the key rule above.
bool isValidSecretKey(std::string_view key);
/// The key rule, as a 400 says it, and as a JSON Schema pattern.
extern const char* const kKeyRule;
inline constexpr const char* kKeyPattern = "^[A-Za-z0-9_.:/-]{1,128}$";

/// How a request writes a secret: create and PUT need key and value, PATCH needs nothing.
enum class WriteMode { kCreate, kReplace, kPatch };

/// The fields a request writes (absent: unchanged; PUT's absent notes: "").
struct SecretInput {
  std::optional<std::string> key, value, notes;
  bool empty() const { return !key && !value && !notes; }
};

/// @return what create and PUT take (PATCH takes it partial()): the kernel checks bodies
/// against it before the handler runs.
sdk::Schema secretInputSchema();
/// @return a secret as the API answers it (a names-only list leaves out value and notes).
sdk::Schema secretSchema();

/// @return a secret without value and notes, as the secret.* events carry it.
sdk::Schema secretNamesSchema();

/// @param request a request whose JSON body passed the route's declaration (secretInputSchema(),
/// partial for PATCH). @param mode what it does. @return its fields.
/// @throws HttpError 400 `invalid` naming each value longer than its bound in bytes.
SecretInput readSecretInput(const sdk::Request& request, WriteMode mode);

}  // namespace svc::plugins::secrets
