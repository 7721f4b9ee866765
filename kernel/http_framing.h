// HTTP/1.1 request framing, strictly by RFC 9112, on bytes already received.
//
// Why our own parser: a request's framing decides where the next request starts, and every
// leniency (whitespace before a colon, a Transfer-Encoding the server does not apply, two
// Content-Lengths) is a way for one client to hide a second request inside a body that a proxy
// in front of us framed differently. So there is exactly one reading of a request and anything
// ambiguous is refused: the caller answers the error and closes the connection.
//
// Both parsers work on a buffer that grows as bytes arrive and never block: parseRequestHead
// says "incomplete" until the blank line that ends the head is in the buffer, and ChunkedDecoder
// keeps its place between calls. Neither touches a socket, so they are unit-tested and fuzzed on
// their own.
//
// What is refused (the status the caller answers, then it closes):
//   400  a malformed request line; a line ended by a bare LF or containing a bare CR; a header
//        line without a colon or with whitespace before it; an obs-folded line; a control
//        character in a field; an invalid Content-Length, or several that differ; both
//        Content-Length and Transfer-Encoding; Transfer-Encoding in HTTP/1.0; a chunked coding
//        that is not the last; HTTP/1.1 without exactly one Host; a head larger than allowed.
//   501  a transfer coding other than chunked (gzip, xchunked, ...).
//   505  a well-formed version other than HTTP/1.0 and HTTP/1.1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace svc::kernel::http {

/// How a request's body is framed.
enum class BodyFraming { kNone, kLength, kChunked };

struct RequestHead {
  std::string method;
  std::string target;     ///< the request-target as sent (origin-form for our routes)
  int minor_version = 1;  ///< HTTP/1.<minor>: 0 or 1
  /// Field lines in order: names as sent, values without surrounding whitespace.
  std::vector<std::pair<std::string, std::string>> fields;
  BodyFraming framing = BodyFraming::kNone;
  std::uint64_t content_length = 0;  ///< with kLength
  bool keep_alive = true;            ///< what the client asked for (Connection, version)
  bool expect_continue = false;      ///< Expect: 100-continue

  /// @param name a field name, any case. @return the first value, or nullptr.
  const std::string* field(std::string_view name) const;
};

struct FramingError {
  int status = 400;    ///< 400, 501 or 505
  std::string detail;  ///< a sentence naming what was wrong, never echoing raw input
};

struct HeadLimits {
  std::size_t max_head_bytes = 32 * 1024;  ///< the request line and every field line
  std::size_t max_fields = 100;
};

struct HeadParse {
  enum class Status { kIncomplete, kComplete, kError };
  Status status = Status::kIncomplete;
  std::size_t consumed = 0;  ///< with kComplete: bytes of the head, including the blank line
  RequestHead head;          ///< with kComplete
  FramingError error;        ///< with kError
};

/// Parses the head at the start of `buffer` (empty lines before a request line are skipped, as
/// RFC 9112 section 2.2 allows). @return kIncomplete until the head is whole, unless what has
/// arrived is already wrong or too large.
HeadParse parseRequestHead(std::string_view buffer, const HeadLimits& limits = {});

/// Decodes a chunked body as it arrives (RFC 9112 section 7.1). Chunk extensions are skipped
/// (at most kMaxExtensionBytes in all); trailer fields are checked like header fields and dropped.
class ChunkedDecoder {
 public:
  enum class Status { kNeedMore, kDone, kError };
  /// @param max_line longest chunk-size line or trailer line accepted.
  explicit ChunkedDecoder(std::size_t max_line = 4096) : max_line_(max_line) {}
  /// Consumes what it can of `input`, appending the payload to `out`.
  /// @param consumed set to the bytes of `input` used; the caller drops them before the next call.
  /// @return kDone once the last chunk and trailers are read (bytes after it are not consumed).
  Status feed(std::string_view input, std::size_t& consumed, std::string& out);
  /// Chunk extensions of one body, in all, beyond which it is malformed.
  static constexpr std::size_t kMaxExtensionBytes = 16 * 1024;
  /// @return why, after kError.
  const std::string& error() const { return error_; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone, kError };
  Status fail(const char* why);
  State state_ = State::kSize;
  std::uint64_t remaining_ = 0;
  std::size_t trailer_bytes_ = 0;
  std::size_t extension_bytes_ = 0;
  std::size_t max_line_;
  std::string error_;
};

/// @return true when `c` may appear in a token (RFC 9110 section 5.6.2).
bool isTokenChar(unsigned char c);

}  // namespace svc::kernel::http
