#include <svc/sdk/accounts.h>
#include <svc/sdk/util.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace svc::sdk {

std::string sessionCsrf(const std::string& session_token) {
  unsigned char mac[32];
  unsigned int length = 0;
  const std::string label = "svc dashboard csrf";
  HMAC(EVP_sha256(), session_token.data(), static_cast<int>(session_token.size()),
       reinterpret_cast<const unsigned char*>(label.data()), label.size(), mac, &length);
  return base64url(std::string(reinterpret_cast<char*>(mac), length));
}

}  // namespace svc::sdk
