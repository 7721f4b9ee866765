// A message as a DKIM verifier reads it (RFC 6376 sections 3.4 and 5.4): its header fields in
// order, folding kept, and its body in either canonical form, each worked out once however many
// signatures ask for it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::email {

class DkimMessage {
 public:
  struct Field {
    std::string_view text;   ///< The whole field, name to the end of its value, no final CRLF.
    std::string_view name;   ///< As written, before the colon.
    std::string_view value;  ///< After the colon, folding included.
    std::string key;         ///< The name lower-cased, trailing whitespace trimmed: what h= names.
  };

  /// @param message CRLF line ends; it must outlive this object. @param max_fields header fields
  /// read at most: the message's views read no more (MimeLimits::max_headers), and a verifier
  /// must not judge fields they do not show.
  explicit DkimMessage(std::string_view message, std::size_t max_fields = 1000);

  const std::vector<Field>& fields() const { return fields_; }
  /// @return true when the header holds more than max_fields fields (the rest were not read).
  bool tooManyFields() const { return too_many_fields_; }
  /// @param relaxed relaxed (true) or simple. @return the body canonicalized (RFC 6376 3.4.3,
  /// 3.4.4), kept for the next signature that asks.
  const std::string& canonicalBody(bool relaxed);
  /// @return the field canonicalized (3.4.1, 3.4.2) with value in place of its own, and CRLF.
  static std::string canonicalField(const Field& field, std::string_view value, bool relaxed);

 private:
  std::vector<Field> fields_;
  std::string_view body_;
  std::optional<std::string> simple_, relaxed_;
  bool too_many_fields_ = false;
};

}  // namespace svc::plugins::email
