#include "bounces/verp.h"

#include <Poco/String.h>

#include <openssl/rand.h>

#include <stdexcept>

namespace svc::plugins::email {

namespace {
constexpr const char kPrefix[] = "bounces+";
constexpr std::size_t kPrefixSize = sizeof(kPrefix) - 1;
constexpr std::size_t kTokenSize = 32;
}  // namespace

std::string newBounceToken() {
  unsigned char bytes[kTokenSize / 2];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes for a token");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

std::string verpAddress(const std::string& token, const std::string& domain) {
  return kPrefix + token + "@" + domain;
}

std::string envelopeAddress(const std::string& token, const std::string& sender) {
  const std::size_t at = sender.rfind('@');
  if (at == std::string::npos) return sender;
  std::string verp = verpAddress(token, sender.substr(at + 1));
  return verp.size() <= 254 ? verp : sender;
}

std::optional<std::string> verpToken(const std::string& address) {
  const std::size_t at = address.rfind('@');
  if (at != kPrefixSize + kTokenSize ||
      Poco::icompare(address.substr(0, kPrefixSize), kPrefix) != 0)
    return std::nullopt;
  std::string token = Poco::toLower(address.substr(kPrefixSize, kTokenSize));
  for (char c : token) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return token;
}

}  // namespace svc::plugins::email
