#include "upload_form.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/Net/MessageHeader.h>
#include <Poco/Net/NameValueCollection.h>
#include <Poco/String.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>
#include <vector>

namespace svc::plugins::email {

namespace {

// One part's header fields as `name: value` lines ending in CRLF, up to the empty line. Strict as
// our HTTP heads are (RFC 9112 section 5): a line without a colon, whitespace before the colon or
// a folded line is refused, never guessed at, so the file's bytes start exactly where the client
// put them. @return the fields, names in lower case.
std::vector<std::pair<std::string, std::string>> partFields(std::string_view head) {
  std::vector<std::pair<std::string, std::string>> fields;
  std::size_t at = 0;
  while (at < head.size()) {
    std::size_t end = std::min(head.find("\r\n", at), head.size());
    std::string_view line = head.substr(at, end - at);
    at = end + 2;
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || line.front() == ' ' ||
        line.front() == '\t' || std::isspace(static_cast<unsigned char>(line[colon - 1])) ||
        sdk::hasControlCharacter(line.substr(0, colon))) {
      throw sdk::HttpError::invalid("file", "a part's header line " + sdk::quoteForDetail(line) +
                                                " is not a name, a colon and a value");
    }
    fields.emplace_back(Poco::toLower(std::string(line.substr(0, colon))),
                        Poco::trim(std::string(line.substr(colon + 1))));
  }
  return fields;
}

// The part named "file" of a multipart/form-data body (RFC 7578, delimiters per RFC 2046 section
// 5.1.1). Poco's MultipartReader is lenient: it guesses at malformed part heads and takes the end
// of the bytes for the closing delimiter, so a malformed or cut-short body could be stored as a
// file with other bytes than the client sent (found by fuzzing). This reader refuses instead.
Upload readMultipart(const std::string& content_type, const std::string& body) {
  Poco::Net::NameValueCollection params;
  std::string media;
  Poco::Net::MessageHeader::splitParameters(content_type, media, params);
  const std::string boundary = params.get("boundary", "");
  if (boundary.empty() || boundary.size() > 70 || sdk::hasControlCharacter(boundary)) {
    throw sdk::HttpError::invalid("file", "the multipart body needs a boundary of 1-70 characters");
  }
  const std::string delimiter = "\r\n--" + boundary;
  const auto cutShort = [&] {
    return sdk::HttpError::invalid("body", "the multipart body ends before its closing boundary " +
                                               sdk::quoteForDetail("--" + boundary + "--") +
                                               ": it was cut short; send the whole body");
  };
  // The first delimiter may open the body (no preamble); every later one follows a CRLF.
  std::size_t at = body.find(delimiter);
  if (body.compare(0, delimiter.size() - 2, delimiter, 2) == 0) {
    at = delimiter.size() - 2;
  } else if (at != std::string::npos) {
    at += delimiter.size();
  }
  std::optional<Upload> file;
  while (at != std::string::npos) {
    if (body.compare(at, 2, "--") == 0) {  // the close delimiter
      if (!file)
        throw sdk::HttpError::invalid("file", "send the file in a multipart field named file");
      return *file;
    }
    at = body.find_first_not_of(" \t", at);  // transport padding
    if (at == std::string::npos) throw cutShort();
    if (body.compare(at, 2, "\r\n") != 0) {
      throw sdk::HttpError::invalid("body", "a multipart boundary line must end in CRLF");
    }
    at += 2;
    // A part's head ends at an empty line; a part may have no fields at all.
    std::size_t head_end = body.compare(at, 2, "\r\n") == 0 ? at : body.find("\r\n\r\n", at);
    if (head_end == std::string::npos) throw cutShort();
    std::size_t content = head_end == at ? at + 2 : head_end + 4;
    auto fields = partFields(std::string_view(body).substr(at, content - 2 - at));
    // The CRLF before a delimiter belongs to it, so an empty part may share its head's CRLF.
    std::size_t next = body.find(delimiter, content - 2);
    if (next == std::string::npos) throw cutShort();
    std::string disposition, type = "application/octet-stream";
    for (const auto& [name, value] : fields) {
      if (name == "content-disposition") disposition = value;
      if (name == "content-type") type = value;
    }
    Poco::Net::NameValueCollection dparams;
    std::string kind;
    Poco::Net::MessageHeader::splitParameters(disposition, kind, dparams);
    if (!file && dparams.get("name", "") == "file") {
      file = Upload{dparams.get("filename", ""), type,
                    next > content ? body.substr(content, next - content) : std::string()};
    }
    at = next + delimiter.size();
  }
  throw cutShort();
}

}  // namespace

Upload readUpload(const std::string& content_type, const std::string& body,
                  const std::string& query_filename, std::size_t max_bytes) {
  std::string media = Poco::toLower(Poco::trim(content_type.substr(0, content_type.find(';'))));
  Upload u;
  if (media == "multipart/form-data") {
    u = readMultipart(content_type, body);
  } else {
    u = {query_filename, media.empty() ? "application/octet-stream" : media, body};
  }
  if (u.data.size() > max_bytes) {
    throw sdk::HttpError(413, "payload_too_large",
                         "An attachment may have at most " + std::to_string(max_bytes) + " bytes.");
  }
  u.filename = Poco::trim(u.filename);
  if (u.filename.empty()) throw sdk::HttpError::invalid("filename", "name the file (?filename=)");
  if (!sdk::isValidUtf8(u.filename) || sdk::hasControlCharacter(u.filename) ||
      u.filename.find_first_of("/\\") != std::string::npos || u.filename.size() > 255 ||
      u.filename == "." || u.filename == "..") {
    throw sdk::HttpError::invalid("filename",
                                  "at most 255 bytes of UTF-8, no path separators "
                                  "or control characters");
  }
  u.content_type = Poco::toLower(Poco::trim(u.content_type.substr(0, u.content_type.find(';'))));
  if (u.content_type.find('/') == std::string::npos || u.content_type.size() > 127 ||
      sdk::hasControlCharacter(u.content_type)) {
    throw sdk::HttpError::invalid("content_type", "must be a media type such as text/plain");
  }
  return u;
}

}  // namespace svc::plugins::email
