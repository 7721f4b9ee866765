// Fuzzes the kernel's HTTP/1.1 framing: parseRequestHead and ChunkedDecoder.
//
// Input: byte 0 is a control byte, the rest is wire bytes. Bit 0 of the control byte set: the
// bytes are a chunked body only (reaches the decoder without a valid head first); clear: they are
// a request, and when its head is complete and chunked, the rest is its body. The other bits seed
// the sizes of the pieces the body is fed in, because the decoder must give the same answer
// however the network happens to split the bytes (a differential check of whole against split).
#include "fuzz_check.h"
#include "http_framing.h"

#include <svc/sdk/util.h>

#include <string>

using svc::fuzz::Rng;
using namespace svc::kernel::http;

namespace {

// Small limits, so the "too large" and "too many" paths are reached with small inputs.
constexpr std::size_t kMaxHead = 2048;
constexpr std::size_t kMaxFields = 16;
constexpr std::size_t kMaxChunkLine = 64;

struct Decoded {
  ChunkedDecoder::Status status = ChunkedDecoder::Status::kNeedMore;
  std::size_t consumed = 0;  // of the whole body, across calls
  std::string out;
};

Decoded decodeWhole(std::string_view body) {
  Decoded d;
  ChunkedDecoder decoder(kMaxChunkLine);
  d.status = decoder.feed(body, d.consumed, d.out);
  FUZZ_CHECK(d.consumed <= body.size(), "decoder consumed more than it was given");
  if (d.status == ChunkedDecoder::Status::kError) {
    FUZZ_CHECK(!decoder.error().empty(), "an error without a reason");
  }
  return d;
}

// Feeds the body as a connection does: bytes arrive in pieces, the caller keeps what the decoder
// did not consume and offers it again with the next piece.
Decoded decodeSplit(std::string_view body, Rng& rng) {
  Decoded d;
  ChunkedDecoder decoder(kMaxChunkLine);
  std::string pending;
  std::size_t offered = 0;
  while (offered < body.size()) {
    std::size_t n = std::min(body.size() - offered, rng.range(1, 16));
    pending.append(body.substr(offered, n));
    offered += n;
    std::size_t used = 0;
    d.status = decoder.feed(pending, used, d.out);
    FUZZ_CHECK(used <= pending.size(), "decoder consumed more than it was given");
    d.consumed += used;
    pending.erase(0, used);
    if (d.status != ChunkedDecoder::Status::kNeedMore) break;
  }
  return d;
}

void checkChunked(std::string_view body, Rng& rng) {
  Decoded whole = decodeWhole(body);
  Decoded split = decodeSplit(body, rng);
  FUZZ_CHECK(whole.status == split.status, "split feeding changed the decoder's verdict");
  FUZZ_CHECK(whole.out == split.out, "split feeding changed the decoded payload");
  if (whole.status == ChunkedDecoder::Status::kDone) {
    FUZZ_CHECK(whole.consumed == split.consumed, "split feeding changed where the body ends");
  }
  // Decoding never invents bytes: the payload is at most the input.
  FUZZ_CHECK(whole.out.size() <= body.size(), "payload larger than the chunked body");
}

bool noControl(std::string_view s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

// What every accepted head promises the rest of the kernel.
void checkAccepted(std::string_view in, const HeadParse& p) {
  const RequestHead& h = p.head;
  FUZZ_CHECK(p.consumed <= in.size(), "consumed beyond the buffer");
  FUZZ_CHECK(p.consumed >= 4 && in.substr(p.consumed - 4, 4) == "\r\n\r\n",
             "an accepted head does not end with CRLF CRLF");
  FUZZ_CHECK(!h.method.empty(), "empty method");
  for (unsigned char c : h.method) FUZZ_CHECK(isTokenChar(c), "method is not a token");
  FUZZ_CHECK(!h.target.empty(), "empty target");
  for (unsigned char c : h.target) FUZZ_CHECK(c > 0x20 && c < 0x7f, "target has CTL/space/8-bit");
  FUZZ_CHECK(h.minor_version == 0 || h.minor_version == 1, "version other than 1.0/1.1");
  FUZZ_CHECK(h.fields.size() <= kMaxFields, "more fields than allowed");
  int hosts = 0, lengths = 0, codings = 0;
  for (const auto& [name, value] : h.fields) {
    FUZZ_CHECK(!name.empty(), "empty field name");
    for (unsigned char c : name) FUZZ_CHECK(isTokenChar(c), "field name is not a token");
    FUZZ_CHECK(noControl(value), "control character in an accepted field value");
    FUZZ_CHECK(value.empty() || (value.front() != ' ' && value.front() != '\t' &&
                                 value.back() != ' ' && value.back() != '\t'),
               "field value not trimmed");
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    hosts += lower == "host";
    lengths += lower == "content-length";
    codings += lower == "transfer-encoding";
  }
  // Request smuggling lives here: never both framings, and only the framing the fields name.
  FUZZ_CHECK(!(lengths && codings), "accepted both Content-Length and Transfer-Encoding");
  FUZZ_CHECK(h.minor_version == 0 || hosts == 1, "HTTP/1.1 head without exactly one Host");
  FUZZ_CHECK(hosts <= 1, "accepted several Host fields");
  switch (h.framing) {
    case BodyFraming::kNone:
      FUZZ_CHECK(!lengths && !codings, "framing none despite a framing field");
      break;
    case BodyFraming::kLength: {
      FUZZ_CHECK(lengths && !codings, "length framing without Content-Length");
      const std::string* cl = h.field("content-length");
      FUZZ_CHECK(cl && !cl->empty(), "length framing without a value");
      break;
    }
    case BodyFraming::kChunked:
      FUZZ_CHECK(codings && !lengths, "chunked framing without Transfer-Encoding");
      FUZZ_CHECK(h.minor_version == 1, "chunked framing in HTTP/1.0");
      break;
  }
  // The head is complete on its own: what follows it cannot change how it reads.
  HeadParse again = parseRequestHead(in.substr(0, p.consumed), HeadLimits{kMaxHead, kMaxFields});
  FUZZ_CHECK(again.status == HeadParse::Status::kComplete && again.consumed == p.consumed &&
                 again.head.fields == h.fields && again.head.framing == h.framing &&
                 again.head.content_length == h.content_length,
             "the head reads differently without the bytes after it");
  // One byte less is never a complete head.
  HeadParse shorter =
      parseRequestHead(in.substr(0, p.consumed - 1), HeadLimits{kMaxHead, kMaxFields});
  FUZZ_CHECK(shorter.status != HeadParse::Status::kComplete, "a head complete before its end");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  std::string_view in = svc::fuzz::asView(data + 1, size - 1);
  Rng rng(control >> 1);
  if (control & 1) {
    checkChunked(in, rng);
    return 0;
  }
  HeadParse p = parseRequestHead(in, HeadLimits{kMaxHead, kMaxFields});
  switch (p.status) {
    case HeadParse::Status::kIncomplete:
      FUZZ_CHECK(p.consumed == 0, "incomplete yet consumed");
      // Still waiting means the buffer is within the limit (else it is an error by now).
      FUZZ_CHECK(in.size() <= kMaxHead + 16, "kept waiting past the head limit");
      break;
    case HeadParse::Status::kError:
      FUZZ_CHECK(p.error.status == 400 || p.error.status == 501 || p.error.status == 505,
                 "unexpected error status");
      FUZZ_CHECK(!p.error.detail.empty(), "an error without a reason");
      // The detail is sent to the client and logged: it names, never echoes raw bytes.
      for (unsigned char c : p.error.detail)
        FUZZ_CHECK(c >= 0x20 && c < 0x7f, "raw bytes in detail");
      break;
    case HeadParse::Status::kComplete:
      checkAccepted(in, p);
      if (p.head.framing == BodyFraming::kChunked) checkChunked(in.substr(p.consumed), rng);
      break;
  }
  // An error is decided on bytes already received: more bytes never turn it into something else.
  if (p.status != HeadParse::Status::kError && in.size() > 1) {
    HeadParse prefix = parseRequestHead(in.substr(0, rng.range(0, in.size() - 1)),
                                        HeadLimits{kMaxHead, kMaxFields});
    FUZZ_CHECK(prefix.status != HeadParse::Status::kError,
               "a prefix erred where the whole did not");
  }
  return 0;
}
