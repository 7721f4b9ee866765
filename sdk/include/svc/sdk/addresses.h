// Addresses people and agents give: email addresses (the RFC 5321 dot-atom subset this server
// accepts) and phone numbers (E.164). Plugins that store or send to addresses check them the same
// way.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace svc::sdk {

/// @param local a candidate local part of someone else's address (a recipient, an SMTP path).
/// @return true for an RFC 5321 dot-atom of at most 64 characters: atext, no leading, trailing
/// or consecutive dots.
bool isDotAtomLocalPart(std::string_view local);
/// @param domain a candidate. @return true for a host name of two or more labels (letters,
/// digits and inner hyphens, at most 63 each; the last not all digits).
bool isValidDomain(std::string_view domain);
/// @param address a candidate `local@domain`. @return true when it is one this server accepts:
/// at most 254 characters, an isDotAtomLocalPart local part and an isValidDomain host.
bool isValidEmailAddress(std::string_view address);
/// @param text a candidate number. @return it in E.164 (`+` and 8-15 digits, the first not 0)
/// with spaces, hyphens, dots and parentheses removed, or nullopt when it is not one.
std::optional<std::string> normalizeE164(const std::string& text);

}  // namespace svc::sdk
