// Mail's text layer, shared by the parser and the header readers: charsets to UTF-8 and the
// transfer encodings (quoted-printable, base64), all lenient: mail in the wild is often broken,
// and what cannot be read is repaired or skipped, never refused.
#pragma once

#include <string>
#include <string_view>

namespace svc::plugins::email {

/// @return s in ASCII lower case.
std::string lower(std::string_view s);
/// @return s without leading and trailing white space.
std::string_view trim(std::string_view s);
/// @return s with every byte that does not start or continue a well-formed UTF-8 sequence
/// replaced by U+FFFD.
std::string repairUtf8(std::string_view s);
/// @param value a raw header value. @return it as UTF-8: kept when it is UTF-8 (RFC 6532),
/// else read as Latin-1.
std::string headerText(std::string_view value);
/// @return the value of one hex digit, or -1 when c is none.
int hexValue(char c);
/// Quoted-printable (RFC 2045 section 6.7), leniently: a stray `=` is kept as it is and a soft
/// break may be followed by spaces (Poco's QuotedPrintableDecoder refuses both).
/// @param in_header true for RFC 2047 Q words, where `_` is a space.
std::string decodeQuotedPrintable(std::string_view s, bool in_header);
/// Base64 as mail carries it: white space and padding anywhere are skipped, other characters
/// are skipped too and reported in *bad (when bad is not null); a trailing partial group keeps
/// its whole bytes. @return the bytes.
std::string decodeBase64Lenient(std::string_view s, bool* bad);

}  // namespace svc::plugins::email
