// Log output: text lines or one JSON object per line, to stderr.
#pragma once

#include <string>

namespace svc::kernel {

/// Points Poco's root logger at stderr in the given format and level.
/// @param format `text` or `json`. @param level a Poco level name.
void configureLogging(const std::string& format, const std::string& level);

}  // namespace svc::kernel
