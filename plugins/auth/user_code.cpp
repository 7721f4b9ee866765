#include "user_code.h"

#include <openssl/rand.h>

#include <cctype>
#include <cstring>

namespace svc::plugins::auth {

std::string newUserCode() {
  std::string code;
  while (code.size() < 8) {
    unsigned char b;
    RAND_bytes(&b, 1);
    if (b >= 240) continue;  // 240 = 12 * 20: no modulo bias
    code.push_back(kUserCodeAlphabet[b % 20]);
  }
  return code;
}

std::string normalizeUserCode(const std::string& input) {
  std::string code;
  for (char c : input) {
    if (c == '-' || c == ' ') continue;
    code.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  if (code.size() != 8) return "";
  for (char c : code) {
    if (!std::strchr(kUserCodeAlphabet, c)) return "";
  }
  return code;
}

std::string displayUserCode(const std::string& code) {
  return code.substr(0, 4) + "-" + code.substr(4);
}

}  // namespace svc::plugins::auth
