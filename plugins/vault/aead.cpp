#include "aead.h"

#include "master_keys.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace svc::plugins::vault {

namespace {

constexpr int kNonceBytes = 12;
constexpr int kTagBytes = 16;

// AES-256-GCM, fetched from OpenSSL's provider once: an implicit fetch on every use costs a
// lookup under a lock. Null when the provider lacks it.
EVP_CIPHER* aes256gcm() {
  static EVP_CIPHER* const cipher = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  return cipher;
}

// One context per thread, saving an allocation per use; reset (its key schedule wiped) after
// every use, so no key lingers in an idle thread.
struct CipherContext {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~CipherContext() { EVP_CIPHER_CTX_free(ctx); }
};

struct ThreadContext {
  EVP_CIPHER_CTX* ctx;
  ThreadContext() {
    thread_local CipherContext c;
    ctx = c.ctx;
  }
  ~ThreadContext() {
    if (ctx) EVP_CIPHER_CTX_reset(ctx);
  }
};

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

void requireAesGcm() {
  if (!aes256gcm()) throw std::runtime_error("OpenSSL offers no AES-256-GCM (its providers)");
}

std::string gcmSeal(std::string_view key, std::string_view aad, std::string_view plaintext) {
  if (key.size() != 32) throw std::logic_error("vault: an AES-256 key has 32 bytes");
  const std::string nonce = randomBytes(kNonceBytes);
  std::string out(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  out.replace(0, kNonceBytes, nonce);
  auto* cipher = reinterpret_cast<unsigned char*>(out.data()) + kNonceBytes;
  ThreadContext thread;
  EVP_CIPHER_CTX* const ctx = thread.ctx;
  int n = 0, total = 0;
  const bool ok =
      ctx && aes256gcm() && EVP_EncryptInit_ex(ctx, aes256gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_EncryptInit_ex(ctx, nullptr, nullptr, bytes(key), bytes(nonce)) == 1 &&
      EVP_EncryptUpdate(ctx, nullptr, &n, bytes(aad), static_cast<int>(aad.size())) == 1 &&
      EVP_EncryptUpdate(ctx, cipher, &n, bytes(plaintext), static_cast<int>(plaintext.size())) ==
          1 &&
      (total = n, EVP_EncryptFinal_ex(ctx, cipher + total, &n) == 1) &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, cipher + plaintext.size()) == 1;
  if (!ok) throw std::runtime_error("AES-256-GCM encryption failed");
  return out;
}

std::optional<std::string> gcmOpen(std::string_view key, std::string_view aad,
                                   std::string_view raw) {
  if (key.size() != 32 || raw.size() < static_cast<std::size_t>(kNonceBytes + kTagBytes)) {
    return std::nullopt;
  }
  const std::size_t length = raw.size() - kNonceBytes - kTagBytes;
  const std::string_view nonce = raw.substr(0, kNonceBytes);
  const std::string_view cipher = raw.substr(kNonceBytes, length);
  std::string tag(raw.substr(kNonceBytes + length));
  std::string plain(length, '\0');
  auto* out = reinterpret_cast<unsigned char*>(plain.data());
  ThreadContext thread;
  EVP_CIPHER_CTX* const ctx = thread.ctx;
  int n = 0;
  const bool ok =
      ctx && aes256gcm() && EVP_DecryptInit_ex(ctx, aes256gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_DecryptInit_ex(ctx, nullptr, nullptr, bytes(key), bytes(nonce)) == 1 &&
      EVP_DecryptUpdate(ctx, nullptr, &n, bytes(aad), static_cast<int>(aad.size())) == 1 &&
      EVP_DecryptUpdate(ctx, out, &n, bytes(cipher), static_cast<int>(length)) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1 &&
      EVP_DecryptFinal_ex(ctx, out + n, &n) == 1;
  if (!ok) return std::nullopt;
  return plain;
}

std::string wrappingKeyOf(std::string_view file_key) {
  static constexpr std::string_view kLabel = "svc vault wrapping key v1";
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), file_key.data(), static_cast<int>(file_key.size()), bytes(kLabel),
            kLabel.size(), out, &length) ||
      length != 32) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return std::string(reinterpret_cast<char*>(out), length);
}

}  // namespace svc::plugins::vault
