// The password generator behind `GET /api/passwords/generate-password/` and a POST without
// `password`. Classes: digits `0-9`, lower-case `a-z`, upper-case `A-Z` and special, the 32 ASCII
// punctuation characters (kSpecialCharacters); exclude_chars removes characters from every class.
//
// A password holds at least one character of every enabled class, and is otherwise as random as
// that allows: one character drawn from each class, the rest from all enabled classes together,
// then a Fisher-Yates shuffle, so the required characters stand anywhere. Every draw is an
// unbiased index into its set from OpenSSL's CSPRNG (randomBelow: rejection sampling, never a
// modulo of a range the set's size does not divide).
#pragma once

#include <svc/sdk/http.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::passwords {

/// The special class: the 32 printable ASCII characters that are neither letters, digits nor space.
inline constexpr std::string_view kSpecialCharacters = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// What a password must be made of (the contract's parameters and defaults).
struct GeneratorOptions {
  int length = 16;  ///< 4-128.
  bool digits = true;
  bool lowercase = true;
  bool uppercase = true;
  bool special = true;
  std::string exclude_chars;  ///< Characters no class may use.
};

/// @param request a request whose query holds the generator's parameters (all optional), each
/// of the form its declaration says (entry_shapes.h generatorParams(): length 4-128, booleans).
/// @return the options. @throws HttpError 400 `invalid` naming every impossible parameter: no
/// class enabled (each class parameter is named), a class exclude_chars empties (exclude_chars
/// is named), a length shorter than the classes enabled.
GeneratorOptions generatorOptions(const sdk::Request& request);

/// @param options the constraints. @return the character set of each enabled class, with the
/// excluded characters taken out (a class may come out empty).
std::vector<std::string> characterClasses(const GeneratorOptions& options);

/// @param options constraints generatorOptions() accepted (or the defaults).
/// @return a new password. @throws std::invalid_argument for impossible constraints,
/// std::runtime_error when the CSPRNG fails.
std::string generatePassword(const GeneratorOptions& options);

/// @param n the size of a set, at least 1. @return a uniformly random index below n from
/// OpenSSL's CSPRNG. @throws std::runtime_error when it fails.
std::uint32_t randomBelow(std::uint32_t n);

}  // namespace svc::plugins::passwords
