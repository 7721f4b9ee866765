// Fuzzes the auth plugin's key format checker (checkKey) against an independent reading of the
// format: prefix, 43 base62 digits that encode 32 bytes, and 6 base62 digits of the CRC32 of
// everything before them.
//
// Input: byte 0 even, the rest is a candidate key as is. Byte 0 odd: the rest is a candidate
// without its checksum and the harness appends the right one, so the fuzzer explores bodies that
// pass the CRC (a random key has a 1 in 2^32 chance of that). Every key checkKey accepts must
// decode to 32 bytes that base62 writes back as the same body, i.e. be a key newKey could have
// made; and every key the reference accepts, checkKey must accept.
#include "fuzz_check.h"
#include "key_format.h"

#include <Poco/Checksum.h>

#include <optional>
#include <string>

using namespace svc::plugins::auth;

namespace {

constexpr std::string_view kAlphabet =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// Big-endian base62 digits to `width` bytes. @return nullopt when the number does not fit.
std::optional<std::string> decodeBase62(std::string_view digits, std::size_t width) {
  std::string bytes(width, '\0');
  for (char d : digits) {
    std::size_t value = kAlphabet.find(d);
    if (value == std::string_view::npos) return std::nullopt;
    unsigned carry = static_cast<unsigned>(value);
    for (std::size_t i = width; i-- > 0;) {
      unsigned acc = static_cast<unsigned char>(bytes[i]) * 62u + carry;
      bytes[i] = static_cast<char>(acc & 0xff);
      carry = acc >> 8;
    }
    if (carry) return std::nullopt;  // more than width bytes
  }
  return bytes;
}

std::string crcDigits(std::string_view text) {
  Poco::Checksum sum(Poco::Checksum::TYPE_CRC32);
  sum.update(text.data(), static_cast<unsigned>(text.size()));
  Poco::UInt32 crc = sum.checksum();
  const unsigned char be[4] = {
      static_cast<unsigned char>(crc >> 24), static_cast<unsigned char>(crc >> 16),
      static_cast<unsigned char>(crc >> 8), static_cast<unsigned char>(crc)};
  return base62(be, sizeof be, 6);
}

// The format, read independently of key_format.cpp.
std::optional<KeyKind> referenceCheck(std::string_view key) {
  for (KeyKind kind : {KeyKind::kManagement, KeyKind::kIdentity}) {
    std::string_view prefix = kind == KeyKind::kManagement ? "svc_mgmt_" : "svc_id_";
    if (key.substr(0, prefix.size()) != prefix) continue;
    if (key.size() != prefix.size() + 43 + 6) return std::nullopt;
    std::string_view body = key.substr(prefix.size(), 43);
    std::string_view check = key.substr(prefix.size() + 43);
    auto bytes = decodeBase62(body, 32);
    if (!bytes) return std::nullopt;  // above 2^256: no key newKey makes
    if (!decodeBase62(check, 4)) return std::nullopt;
    if (crcDigits(key.substr(0, prefix.size() + 43)) != check) return std::nullopt;
    return kind;
  }
  return std::nullopt;
}

void checkOne(std::string_view key) {
  std::optional<KeyKind> got = checkKey(key);
  std::optional<KeyKind> want = referenceCheck(key);
  if (got != want) {
    std::fprintf(stderr, "key [%.*s]: checkKey %s, reference %s\n", static_cast<int>(key.size()),
                 key.data(), got ? "accepts" : "refuses", want ? "accepts" : "refuses");
    FUZZ_CHECK(false, "checkKey disagrees with the key format");
  }
  if (got) {
    // Round trip: the body is 32 bytes written in base62, exactly as newKey writes them.
    std::string_view prefix = keyPrefix(*got);
    std::string_view body = key.substr(prefix.size(), 43);
    auto bytes = decodeBase62(body, 32);
    FUZZ_CHECK(bytes.has_value(), "an accepted body does not fit 32 bytes");
    std::string again =
        base62(reinterpret_cast<const unsigned char*>(bytes->data()), bytes->size(), 43);
    FUZZ_CHECK(again == body, "an accepted body does not round-trip through base62");
    FUZZ_CHECK(visiblePrefix(key) == std::string(key.substr(0, prefix.size() + 4)),
               "visiblePrefix of an accepted key");
  } else {
    FUZZ_CHECK(visiblePrefix(key).size() <= 8, "visiblePrefix of a refused key shows too much");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string key(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) key += crcDigits(key);
  checkOne(key);
  return 0;
}
