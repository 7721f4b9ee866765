// Device login user codes (RFC 8628 section 6.1): eight letters from an alphabet without vowels
// or look-alikes, shown as XXXX-XXXX.
#pragma once

#include <string>

namespace svc::plugins::auth {

/// The letters of a user code: consonants only, so no code spells a word.
inline constexpr const char* kUserCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ";

/// @return a new random code of eight letters from kUserCodeAlphabet, without modulo bias.
std::string newUserCode();
/// Accepts XXXX-XXXX in any case, with or without the hyphen (spaces ignored).
/// @return the 8 letters, or "" when input is not a code.
std::string normalizeUserCode(const std::string& input);
/// @param code 8 letters. @return them as XXXX-XXXX.
std::string displayUserCode(const std::string& code);

}  // namespace svc::plugins::auth
