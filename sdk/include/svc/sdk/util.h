// Small helpers every plugin needs in the same shape: ids, timestamps, UTF-8 checks, quoting,
// base64 and hex, and whether a file of secrets is private.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace svc::sdk {

/// @return a new random (version 4) UUID, lower-case and hyphenated.
std::string newUuid();
/// @param text a candidate. @return true for a lower- or upper-case hyphenated UUID.
bool isUuid(std::string_view text);
/// @return the current time in microseconds since the Unix epoch (plus the test clock's offset).
std::int64_t nowMicros();
/// Moves nowMicros() forward by micros, for tests of expiry (svcd exposes it on the operator
/// listener only when `testing.clock` is true). Timers of held responses are not affected.
void advanceClockForTesting(std::int64_t micros);
/// @param micros microseconds since the epoch.
/// @return ISO 8601 UTC with microseconds: `2026-11-22T10:40:38.123456Z`.
std::string isoTimestamp(std::int64_t micros);
/// @param text an ISO 8601 time with a zone or `Z` (fractions allowed); no zone is UTC.
/// @return microseconds since the epoch, or nullopt when text is no such time.
std::optional<std::int64_t> parseIsoMicros(const std::string& text);
/// @param text bytes. @return true when they are well-formed UTF-8 (no overlongs, no surrogates).
bool isValidUtf8(std::string_view text);
/// @param text bytes. @param allow_tab whether a horizontal tab is allowed (HTTP field values).
/// @return true when one is an ASCII control character (below 0x20, or DEL): what a name, a
/// label, a path segment or a header value must not carry.
bool hasControlCharacter(std::string_view text, bool allow_tab = false);
/// Makes client input safe to echo in an error's `detail` (or any message a person reads): bytes
/// that are not well-formed UTF-8, control characters and bidirectional overrides each become
/// U+FFFD, and input longer than `max` characters is cut there and ends with "…". No quotation
/// marks are added. @param input any bytes. @param max how many characters to keep.
/// @return valid UTF-8 of at most `max` characters plus the ellipsis.
std::string quoteForDetail(std::string_view input, std::size_t max = 80);
/// Makes text someone else wrote safe to print to a terminal whole (a message's body): as
/// quoteForDetail, but of any length and keeping line breaks and tabs. Escape sequences cannot
/// retitle the window, clear the screen or hide a link. @param input any bytes.
std::string safeForTerminal(std::string_view input);
/// @param text UTF-8. @param max_bytes the most bytes to keep. @return its longest prefix of at
/// most max_bytes that ends between two characters (never inside one).
std::string truncateUtf8(std::string_view text, std::size_t max_bytes);
/// @param bytes any bytes. @return them in unpadded base64url (RFC 4648 section 5).
std::string base64url(std::string_view bytes);
/// @param text base64url, padded or not. @return the bytes, or nullopt when text is not base64url.
std::optional<std::string> base64urlDecode(std::string_view text);
/// @param bytes any bytes. @return them in padded base64 (RFC 4648 section 4) on one line.
std::string base64(std::string_view bytes);
/// @param text padded base64; spaces, tabs and line breaks in it are skipped.
/// @return the bytes, or nullopt when text is not base64.
std::optional<std::string> base64Decode(std::string_view text);
/// @param bytes any bytes. @return them in lower-case hex, two digits a byte.
std::string hexEncode(std::string_view bytes);
/// @param text any bytes. @return their SHA-256 in lower-case hex (what is stored of a secret).
std::string sha256Hex(std::string_view text);
/// @return whether a and b are equal, in time that depends only on their length.
bool constantTimeEquals(std::string_view a, std::string_view b);
/// @param bytes how many random bytes (from OpenSSL's DRBG). @return them in unpadded base64url.
std::string randomToken(std::size_t bytes);

/// Whether a file that holds secrets (a key file, a database) is svcd's alone: a regular file of
/// this process's user that no other user may read or write. Ask about the descriptor opened to
/// read it, so that what is checked is what is read.
/// @param fd an open descriptor of the file.
/// @return "" when it is private, else why not, to follow the file's name in a message
/// ("other users may read it; make it mode 0600 (chmod 600)").
std::string privateFileProblem(int fd);

}  // namespace svc::sdk
