#include "key_format.h"

#include <Poco/Checksum.h>

#include <openssl/rand.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace svc::plugins::auth {

namespace {
constexpr char kAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr std::size_t kBodyLength = 43;     // 256 bits in base62
constexpr std::size_t kChecksumLength = 6;  // 32 bits in base62

void randomBytes(unsigned char* out, std::size_t n) {
  if (RAND_bytes(out, static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
}

}  // namespace

std::string keyChecksum(std::string_view text) {
  Poco::Checksum sum(Poco::Checksum::TYPE_CRC32);
  sum.update(text.data(), static_cast<unsigned>(text.size()));
  Poco::UInt32 crc = sum.checksum();
  unsigned char be[4] = {static_cast<unsigned char>(crc >> 24),
                         static_cast<unsigned char>(crc >> 16),
                         static_cast<unsigned char>(crc >> 8), static_cast<unsigned char>(crc)};
  return base62(be, sizeof be, kChecksumLength);
}

std::string base62(const unsigned char* bytes, std::size_t size, std::size_t width) {
  std::vector<unsigned char> number(bytes, bytes + size);
  std::string digits;
  // Repeated division of the big-endian number by 62.
  bool nonzero = true;
  while (nonzero) {
    nonzero = false;
    unsigned remainder = 0;
    for (auto& b : number) {
      unsigned acc = (remainder << 8) | b;
      b = static_cast<unsigned char>(acc / 62);
      remainder = acc % 62;
      nonzero = nonzero || b != 0;
    }
    digits.push_back(kAlphabet[remainder]);
  }
  while (digits.size() < width) digits.push_back('0');
  return std::string(digits.rbegin(), digits.rend());
}

std::string_view keyPrefix(KeyKind kind) {
  return kind == KeyKind::kManagement ? "svc_mgmt_" : "svc_id_";
}

std::string newKey(KeyKind kind) {
  unsigned char raw[32];
  randomBytes(raw, sizeof raw);
  std::string key = std::string(keyPrefix(kind)) + base62(raw, sizeof raw, kBodyLength);
  return key + keyChecksum(key);
}

std::optional<KeyKind> checkKey(std::string_view key) {
  for (KeyKind kind : {KeyKind::kManagement, KeyKind::kIdentity}) {
    std::string_view prefix = keyPrefix(kind);
    if (key.substr(0, prefix.size()) != prefix) continue;
    if (key.size() != prefix.size() + kBodyLength + kChecksumLength) return std::nullopt;
    for (char c : key.substr(prefix.size())) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
      if (!ok) return std::nullopt;
    }
    // 43 base62 digits reach past 2^256 - 1, which no 32-byte key is: such a body is a typo.
    // The alphabet is in ASCII order, so comparing the digits as text compares the numbers.
    static const std::string kLargestBody = [] {
      unsigned char all_ones[32];
      std::fill(std::begin(all_ones), std::end(all_ones), 0xff);
      return base62(all_ones, sizeof all_ones, kBodyLength);
    }();
    if (key.substr(prefix.size(), kBodyLength) > kLargestBody) return std::nullopt;
    std::string_view body = key.substr(0, key.size() - kChecksumLength);
    if (keyChecksum(body) != key.substr(key.size() - kChecksumLength)) return std::nullopt;
    return kind;
  }
  return std::nullopt;
}

std::string visiblePrefix(std::string_view key) {
  auto kind = checkKey(key);
  std::size_t n = kind ? keyPrefix(*kind).size() + 4 : 8;
  return std::string(key.substr(0, std::min(n, key.size())));
}

}  // namespace svc::plugins::auth
