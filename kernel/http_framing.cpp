#include "http_framing.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

#include <algorithm>

namespace svc::kernel::http {

namespace {

constexpr std::string_view kWhitespace = " \t";

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trimWhitespace(std::string_view s) {
  std::size_t b = s.find_first_not_of(kWhitespace);
  if (b == std::string_view::npos) return {};
  std::size_t e = s.find_last_not_of(kWhitespace);
  return s.substr(b, e - b + 1);
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Splits a comma-separated list (RFC 9110 section 5.6.1), trimming each element and skipping
// empty ones, as recipients must.
std::vector<std::string_view> listElements(std::string_view value) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view element = trimWhitespace(value.substr(start, comma - start));
    if (!element.empty()) out.push_back(element);
    start = comma + 1;
  }
  return out;
}

// A field name, short enough to quote in an error (names are tokens, so safe to echo).
std::string quotedName(std::string_view name) {
  return std::string(name.substr(0, 64)) + (name.size() > 64 ? "..." : "");
}

// One field line (no CRLF): name ":" OWS value OWS. @return "" when fine, else why not.
std::string splitFieldLine(std::string_view line, std::string_view& name, std::string_view& value) {
  if (line.front() == ' ' || line.front() == '\t') {
    return "A header line starts with whitespace (obsolete line folding is not accepted).";
  }
  std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return "A header line has no colon.";
  name = line.substr(0, colon);
  if (name.empty()) return "A header line has an empty name.";
  if (name.back() == ' ' || name.back() == '\t') {
    return "A header name is followed by whitespace before its colon.";
  }
  for (unsigned char c : name) {
    if (!isTokenChar(c)) return "A header name contains a character that is not allowed.";
  }
  value = trimWhitespace(line.substr(colon + 1));
  if (sdk::hasControlCharacter(value, /*allow_tab=*/true)) {
    return "Header " + quotedName(name) + " contains control characters.";
  }
  return {};
}

// Finds the next line ending at or after `pos`. @return the index of its LF, npos when absent,
// or sets `why` when the line is not ended by CRLF or holds a bare CR.
std::size_t lineEnd(std::string_view buf, std::size_t pos, std::string& why) {
  std::size_t lf = buf.find('\n', pos);
  if (lf == std::string_view::npos) return lf;
  if (lf == pos || buf[lf - 1] != '\r') {
    why = "A line of the request ends with a bare LF; lines end with CRLF.";
  } else if (buf.substr(pos, lf - 1 - pos).find('\r') != std::string_view::npos) {
    why = "A line of the request contains a bare CR.";
  }
  return lf;
}

// request-line = method SP request-target SP HTTP-version. @return "" or why not; sets
// `version_status` to 505 for a well-formed but unsupported version.
std::string parseRequestLine(std::string_view line, RequestHead& head, int& version_status) {
  const std::string malformed = "The request line is malformed; send METHOD /path HTTP/1.1.";
  std::size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return malformed;
  std::size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return malformed;
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  for (unsigned char c : method) {
    if (!isTokenChar(c)) return malformed;
  }
  for (unsigned char c : target) {
    if (c <= 0x20 || c >= 0x7f)
      return "The request target contains a character that is not allowed.";
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !isDigit(version[5]) ||
      version[6] != '.' || !isDigit(version[7])) {
    return malformed;
  }
  head.method = std::string(method);
  head.target = std::string(target);
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    version_status = 505;
    return "HTTP version " + std::string(version.substr(5)) +
           " is not supported; send HTTP/1.1 or HTTP/1.0.";
  }
  head.minor_version = version[7] - '0';
  return {};
}

// The framing and connection semantics of a complete head. @return "" or why not (status set).
std::string interpretFields(RequestHead& head, int& status) {
  status = 400;
  std::vector<std::string_view> lengths, codings;
  int hosts = 0;
  bool close = false, keep_alive = false;
  for (const auto& [name, value] : head.fields) {
    if (equalsIgnoreCase(name, "content-length")) {
      auto elements = listElements(value);
      if (elements.empty()) return "Content-Length is empty.";
      lengths.insert(lengths.end(), elements.begin(), elements.end());
    } else if (equalsIgnoreCase(name, "transfer-encoding")) {
      auto elements = listElements(value);
      codings.insert(codings.end(), elements.begin(), elements.end());
      if (elements.empty()) return "Transfer-Encoding is empty.";
    } else if (equalsIgnoreCase(name, "host")) {
      ++hosts;
      if (value.find_first_of(" \t/\\?#@") != std::string::npos)
        return "The Host header is invalid.";
    } else if (equalsIgnoreCase(name, "connection")) {
      for (auto token : listElements(value)) {
        close = close || equalsIgnoreCase(token, "close");
        keep_alive = keep_alive || equalsIgnoreCase(token, "keep-alive");
      }
    } else if (equalsIgnoreCase(name, "expect")) {
      head.expect_continue = equalsIgnoreCase(value, "100-continue");
    }
  }
  if (hosts > 1) return "The request has more than one Host header.";
  if (hosts == 0 && head.minor_version == 1) return "An HTTP/1.1 request needs a Host header.";
  head.keep_alive = !close && (head.minor_version == 1 || keep_alive);

  if (!codings.empty()) {
    if (!lengths.empty()) {
      return "The request has both Transfer-Encoding and Content-Length; send one.";
    }
    if (head.minor_version == 0) return "Transfer-Encoding is not allowed in HTTP/1.0.";
    for (std::size_t i = 0; i < codings.size(); ++i) {
      const bool chunked = equalsIgnoreCase(codings[i], "chunked");
      if (chunked && i + 1 == codings.size()) break;
      if (chunked) return "The chunked transfer coding must be the last one applied.";
      bool token = std::all_of(codings[i].begin(), codings[i].end(),
                               [](char c) { return isTokenChar(static_cast<unsigned char>(c)); });
      if (!token) return "Transfer-Encoding is malformed.";
      status = 501;
      return "Transfer coding " + quotedName(codings[i]) +
             " is not supported; send the body as is or chunked.";
    }
    head.framing = BodyFraming::kChunked;
    return {};
  }
  if (!lengths.empty()) {
    for (auto element : lengths) {
      if (element.size() > 18 || !std::all_of(element.begin(), element.end(), isDigit)) {
        return "Content-Length is not a decimal number of bytes.";
      }
      if (element != lengths.front()) return "The request has Content-Lengths that differ.";
    }
    head.framing = BodyFraming::kLength;
    head.content_length = std::stoull(std::string(lengths.front()));
  }
  return {};
}

}  // namespace

bool isTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

const std::string* RequestHead::field(std::string_view name) const {
  for (const auto& [n, v] : fields) {
    if (equalsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

HeadParse parseRequestHead(std::string_view buf, const HeadLimits& limits) {
  HeadParse r;
  auto fail = [&r](int status, std::string detail) {
    r.status = HeadParse::Status::kError;
    r.error = FramingError{status, std::move(detail)};
    return r;
  };
  const std::string too_large =
      "The request head is larger than " + std::to_string(limits.max_head_bytes) + " bytes.";
  std::size_t pos = 0;
  for (int skipped = 0; skipped < 8 && buf.substr(pos, 2) == "\r\n"; ++skipped) pos += 2;
  const std::size_t start = pos;
  bool request_line = true;
  for (;;) {
    std::string why;
    std::size_t lf = lineEnd(buf, pos, why);
    if (lf == std::string_view::npos) {
      if (buf.size() - start > limits.max_head_bytes) return fail(400, too_large);
      return r;  // incomplete
    }
    if (lf + 1 - start > limits.max_head_bytes) return fail(400, too_large);
    if (!why.empty()) return fail(400, why);
    std::string_view line = buf.substr(pos, lf - 1 - pos);
    pos = lf + 1;
    if (request_line) {
      request_line = false;
      int version_status = 400;
      why = parseRequestLine(line, r.head, version_status);
      if (!why.empty()) return fail(version_status, why);
      continue;
    }
    if (line.empty()) break;
    if (r.head.fields.size() >= limits.max_fields) {
      return fail(
          400, "The request has more than " + std::to_string(limits.max_fields) + " header lines.");
    }
    std::string_view name, value;
    why = splitFieldLine(line, name, value);
    if (!why.empty()) return fail(400, why);
    r.head.fields.emplace_back(std::string(name), std::string(value));
  }
  int status = 400;
  std::string why = interpretFields(r.head, status);
  if (!why.empty()) return fail(status, why);
  r.status = HeadParse::Status::kComplete;
  r.consumed = pos;
  return r;
}

ChunkedDecoder::Status ChunkedDecoder::fail(const char* why) {
  state_ = State::kError;
  error_ = why;
  return Status::kError;
}

ChunkedDecoder::Status ChunkedDecoder::feed(std::string_view input, std::size_t& consumed,
                                            std::string& out) {
  std::size_t pos = 0;
  consumed = 0;
  for (;;) {
    switch (state_) {
      case State::kSize:
      case State::kTrailer: {
        std::string why;
        std::size_t lf = lineEnd(input, pos, why);
        if (lf == std::string_view::npos) {
          if (input.size() - pos > max_line_) return fail("A chunk line is too long.");
          consumed = pos;
          return Status::kNeedMore;
        }
        if (lf - pos > max_line_) return fail("A chunk line is too long.");
        if (!why.empty()) return fail("A chunk line is not ended by CRLF.");
        std::string_view line = input.substr(pos, lf - 1 - pos);
        pos = lf + 1;
        if (state_ == State::kTrailer) {
          if (line.empty()) {
            state_ = State::kDone;
            consumed = pos;
            return Status::kDone;
          }
          trailer_bytes_ += line.size();
          std::string_view name, value;
          if (trailer_bytes_ > max_line_ || !splitFieldLine(line, name, value).empty()) {
            return fail("The chunked body's trailer is malformed.");
          }
          break;
        }
        std::size_t digits = 0;
        std::uint64_t size = 0;
        while (digits < line.size() && hexValue(line[digits]) >= 0) {
          size = size * 16 + static_cast<std::uint64_t>(hexValue(line[digits]));
          if (++digits > 15) return fail("A chunk size is too large.");
        }
        if (digits == 0) return fail("A chunk does not start with its size in hexadecimal.");
        // chunk-size [ BWS ";" chunk-ext ]: whitespace after the size only before a semicolon.
        std::string_view extension = trimWhitespace(line.substr(digits));
        if (digits < line.size() && (extension.empty() || extension.front() != ';')) {
          return fail("A chunk size is followed by something other than an extension.");
        }
        if (sdk::hasControlCharacter(extension, /*allow_tab=*/true)) {
          return fail("A chunk extension is malformed.");
        }
        // Extensions carry nothing we use; unbounded, they would make a body of a few bytes
        // cost gigabytes on the wire.
        extension_bytes_ += extension.size();
        if (extension_bytes_ > kMaxExtensionBytes)
          return fail("The chunk extensions are too long.");
        if (size == 0) {
          state_ = State::kTrailer;
        } else {
          remaining_ = size;
          state_ = State::kData;
        }
        break;
      }
      case State::kData: {
        std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, input.size() - pos));
        out.append(input.data() + pos, n);
        pos += n;
        remaining_ -= n;
        if (remaining_ > 0) {
          consumed = pos;
          return Status::kNeedMore;
        }
        state_ = State::kDataEnd;
        break;
      }
      case State::kDataEnd:
        if (input.size() - pos < 2) {
          consumed = pos;
          return Status::kNeedMore;
        }
        if (input[pos] != '\r' || input[pos + 1] != '\n') {
          return fail("A chunk's data is not followed by CRLF.");
        }
        pos += 2;
        state_ = State::kSize;
        break;
      case State::kDone:
        consumed = pos;
        return Status::kDone;
      case State::kError:
        consumed = pos;
        return Status::kError;
    }
  }
}

}  // namespace svc::kernel::http
