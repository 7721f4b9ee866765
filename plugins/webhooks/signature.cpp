#include "signature.h"

#include <svc/sdk/util.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace svc::plugins::webhooks {

std::string newSecret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no randomness");
  return std::string(kSecretPrefix) +
         sdk::base64(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

std::optional<std::string> secretKey(const std::string& secret) {
  std::string_view text = secret;
  if (text.substr(0, kSecretPrefix.size()) == kSecretPrefix)
    text.remove_prefix(kSecretPrefix.size());
  auto key = sdk::base64Decode(text);
  if (!key || key->size() < 24) return std::nullopt;
  return key;
}

std::string sign(std::string_view key, std::string_view id, std::int64_t timestamp,
                 std::string_view body) {
  const std::string signed_content =
      std::string(id) + "." + std::to_string(timestamp) + "." + std::string(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(signed_content.data()), signed_content.size(),
            mac, &length)) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return "v1," + sdk::base64(std::string_view(reinterpret_cast<const char*>(mac), length));
}

std::string signatureHeader(const std::vector<std::string>& secrets, std::string_view id,
                            std::int64_t timestamp, std::string_view body) {
  std::string out;
  for (const auto& secret : secrets) {
    auto key = secretKey(secret);
    if (!key) continue;
    if (!out.empty()) out += ' ';
    out += sign(*key, id, timestamp, body);
  }
  return out;
}

}  // namespace svc::plugins::webhooks
