// Message text as carriers see it (E.164 numbers are sdk::normalizeE164): how many segments a
// body costs in which encoding (GSM 03.38 7-bit, else UCS-2).
#pragma once

#include <optional>
#include <string>

namespace svc::plugins::sms {

/// @param text a candidate. @return whether it is an ISO 3166 alpha-2 code's shape (two letters).
bool isCountryCode(const std::string& text);

/// What a body costs.
struct Segments {
  std::string encoding;  ///< `GSM-7` or `UCS-2`.
  int count = 0;         ///< Segments (1 for an empty body).
};

/// @param body UTF-8 text. @return its encoding and segment count as carriers count them: GSM-7
/// when every character is in the GSM 03.38 alphabet or its extension (which costs two septets),
/// 160 septets in one segment or 153 a segment when split; else UCS-2, 70 UTF-16 units in one or
/// 67 a segment. A split never separates an escape from its character or a surrogate pair.
Segments countSegments(const std::string& body);

/// @param body UTF-8 text. @return how many characters (code points) it has.
std::size_t characterCount(const std::string& body);

}  // namespace svc::plugins::sms
