// Bytes on the wire for the HTTP listener and the stream hub: one response-head writer.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace svc::kernel::http {

/// Appends a status line and header fields, without the blank line that ends them, to `out`:
/// the status with its reason phrase, Date, Content-Type (when not empty), then `headers`.
void appendResponseHead(std::string& out, int status, const std::string& content_type,
                        const std::vector<std::pair<std::string, std::string>>& headers);

}  // namespace svc::kernel::http
