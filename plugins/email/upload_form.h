// Reads an attachment upload: a multipart/form-data body with the file in the field "file"
// (what browsers and curl -F send), or the file as the whole body with its name in ?filename=.
#pragma once

#include <cstddef>
#include <string>

namespace svc::plugins::email {

/// One uploaded file, checked: a safe file name (UTF-8, at most 255 bytes, no path separator or
/// control character), a media type such as text/plain, and at most the allowed bytes.
struct Upload {
  std::string filename;
  std::string content_type;
  std::string data;
};

/// @param content_type the request's Content-Type header as sent (parameters included).
/// @param body the request body. @param query_filename the ?filename= parameter (raw bodies).
/// @param max_bytes the most bytes a file may have.
/// @throws sdk::HttpError 400 `invalid` naming the field at fault (a multipart body without a
/// boundary, cut short before its closing boundary, malformed, or without a "file" field; a
/// missing or unsafe file name; a bad media type), 413 `payload_too_large` beyond max_bytes.
Upload readUpload(const std::string& content_type, const std::string& body,
                  const std::string& query_filename, std::size_t max_bytes);

}  // namespace svc::plugins::email
