#include "passwords.h"

#include <svc/sdk/util.h>

#include <Poco/Base64Decoder.h>
#include <Poco/Base64Encoder.h>
#include <Poco/NumberParser.h>
#include <Poco/StringTokenizer.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <sstream>
#include <stdexcept>

namespace svc::plugins::auth {

namespace {
constexpr std::uint64_t kN = 1 << 15;
constexpr std::uint64_t kR = 8;
constexpr std::uint64_t kP = 1;
constexpr std::size_t kLength = 32;

std::string derive(const std::string& password, const std::string& salt, std::uint64_t n,
                   std::uint64_t r, std::uint64_t p) {
  std::string out(kLength, '\0');
  if (EVP_PBE_scrypt(password.data(), password.size(),
                     reinterpret_cast<const unsigned char*>(salt.data()), salt.size(), n, r, p,
                     64 * 1024 * 1024, reinterpret_cast<unsigned char*>(out.data()),
                     out.size()) != 1) {
    throw std::runtime_error("scrypt failed");
  }
  return out;
}

std::string b64(const std::string& raw) {
  std::ostringstream out;
  Poco::Base64Encoder enc(out, Poco::BASE64_NO_PADDING);
  enc.rdbuf()->setLineLength(0);
  enc << raw;
  enc.close();
  return out.str();
}

std::string unb64(const std::string& text) {
  std::istringstream in(text);
  Poco::Base64Decoder dec(in, Poco::BASE64_NO_PADDING);
  std::string out;
  char c;
  while (dec.get(c)) out.push_back(c);
  return out;
}
}  // namespace

std::string hashPassword(const std::string& password) {
  std::string salt = sdk::randomToken(16);
  return "scrypt$" + std::to_string(kN) + "$" + std::to_string(kR) + "$" + std::to_string(kP) +
         "$" + salt + "$" + b64(derive(password, salt, kN, kR, kP));
}

bool verifyPassword(const std::string& password, const std::string& stored) {
  Poco::StringTokenizer parts(stored, "$");
  if (parts.count() != 6 || parts[0] != "scrypt") return false;
  try {
    std::uint64_t n = Poco::NumberParser::parseUnsigned64(parts[1]);
    std::uint64_t r = Poco::NumberParser::parseUnsigned64(parts[2]);
    std::uint64_t p = Poco::NumberParser::parseUnsigned64(parts[3]);
    std::string expected = unb64(parts[5]);
    std::string actual = derive(password, parts[4], n, r, p);
    return expected.size() == actual.size() &&
           CRYPTO_memcmp(expected.data(), actual.data(), actual.size()) == 0;
  } catch (...) {
    return false;
  }
}

}  // namespace svc::plugins::auth
