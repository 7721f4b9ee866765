// Tag=value lists (RFC 6376 section 3.2): the value of a DKIM-Signature field and a DKIM key
// record. Both verifiers we compare against (libopendkim, dkimpy) drop all whitespace from names
// and values; so does this one, so `h=From : To` and a b= folded over lines read the same.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace svc::plugins::email {

class DkimTags {
 public:
  /// @param text the list, folding included. @return its tags, or nullopt when it is not a tag
  /// list: a tag without `=`, a name not ALPHA *(ALPHA / DIGIT / "_"), a control or 8-bit
  /// character, or a name given twice (RFC 6376 3.2: "MUST be interpreted as a verifier error").
  static std::optional<DkimTags> parse(std::string_view text);
  /// @return the value of tag name (lower-case as written: names are case-sensitive), or
  /// nullptr when absent.
  const std::string* find(std::string_view name) const;
  /// @return the value of tag name in text (FWS taken out), or nullopt when absent, without
  /// reading the rest: a list parse() refuses may still give one (a cheap first look, as for
  /// the key a signature names; parse() before trusting it).
  static std::optional<std::string> peek(std::string_view text, std::string_view name);

 private:
  // Sorted by name once parsed: a long list stays cheap (n log n), and most names and values
  // are short enough to need no allocation of their own.
  std::vector<std::pair<std::string, std::string>> tags_;
};

/// RFC 6376's base64string (b=, bh=, p=): the base64 alphabet, FWS anywhere, padding optional.
/// @return the bytes, or nullopt for any other character or a length no base64 has.
std::optional<std::string> decodeDkimBase64(std::string_view text);

/// @param list a colon-separated list (h=, a key's h= and s=). @return its items, lower-cased.
std::vector<std::string> splitDkimList(const std::string& list);

}  // namespace svc::plugins::email
