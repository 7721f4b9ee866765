// Fuzzes the attachment upload reader (readUpload: multipart/form-data through Poco's
// MultipartReader, or a raw body) on a Content-Type header and a body.
//
// Input: the bytes before the first newline are the Content-Type header (a seed with
// "multipart/form-data; boundary=..." keeps the fuzzer on the multipart path), the rest is the
// body. What the attachment store relies on: readUpload either returns or throws HttpError 400
// or 413, never anything else; what it returns has a safe file name (UTF-8, 1-255 bytes, no
// slash, backslash or control character, not "." or ".."), a lower-case media type with a slash,
// and at most the allowed bytes; and the file's bytes are bytes of the body.
#include "fuzz_check.h"
#include "upload_form.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/Exception.h>

#include <cctype>

using namespace svc;
using namespace svc::plugins::email;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input = fuzz::asView(data, size);
  auto newline = input.find('\n');
  std::string content_type(input.substr(0, newline));
  std::string body(newline == std::string_view::npos ? "" : input.substr(newline + 1));
  constexpr std::size_t kMax = 4096;
  try {
    Upload u = readUpload(content_type, body, "raw.bin", kMax);
    const std::string& name = u.filename;
    FUZZ_CHECK(!name.empty() && name.size() <= 255, "a file name's length");
    FUZZ_CHECK(sdk::isValidUtf8(name), "a file name that is not UTF-8");
    FUZZ_CHECK(name != "." && name != "..", "a relative file name");
    for (unsigned char c : name) {
      FUZZ_CHECK(c != '/' && c != '\\', "a path separator in a file name");
      FUZZ_CHECK(c >= 0x20 && c != 0x7f, "a control character in a file name");
    }
    FUZZ_CHECK(u.content_type.find('/') != std::string::npos, "a media type without a slash");
    for (unsigned char c : u.content_type) {
      FUZZ_CHECK(c >= 0x20 && c != 0x7f && !std::isupper(c), "a media type's characters");
    }
    FUZZ_CHECK(u.data.size() <= kMax, "a file over the limit");
    FUZZ_CHECK(body.find(u.data) != std::string::npos, "file bytes that are not in the body");
  } catch (const sdk::HttpError& e) {
    FUZZ_CHECK(e.status() == 400 || e.status() == 413, "an error other than 400 or 413");
    FUZZ_CHECK(sdk::isValidUtf8(e.detail()), "an error detail that is not UTF-8");
    for (const auto& [field, messages] : e.errors()) {
      for (const auto& m : messages) FUZZ_CHECK(sdk::isValidUtf8(m), "a field error not UTF-8");
    }
  }
  return 0;
}
