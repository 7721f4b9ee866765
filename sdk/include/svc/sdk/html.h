// HTML text: what a page shows of data (names, declarations, messages) is escaped, always.
#pragma once

#include <string>
#include <string_view>

namespace svc::sdk {

/// @param text any text. @return it with `& < > " '` as character references, safe in HTML
/// text and in quoted attribute values.
std::string htmlEscape(std::string_view text);

}  // namespace svc::sdk
