#include "at_rest.h"

#include <svc/sdk/util.h>

#include <openssl/evp.h>

#include <sys/stat.h>

#include <stdexcept>

namespace svc::plugins::vault {

namespace {

constexpr int kNonceBytes = 12;
constexpr int kTagBytes = 16;

std::int64_t mtimeNs(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

struct CipherContext {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~CipherContext() { EVP_CIPHER_CTX_free(ctx); }
};

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

AtRestCipher::AtRestCipher(std::string key_file)
    : path_(std::move(key_file)),
      keys_(std::make_shared<MasterKeys>(MasterKeys::load(path_))),
      checked_(std::chrono::steady_clock::now()),
      file_mtime_ns_(mtimeNs(path_)) {}

std::shared_ptr<const MasterKeys> AtRestCipher::keys(bool force_reload) {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (force_reload || now - checked_ >= std::chrono::seconds(1)) {
    checked_ = now;
    const std::int64_t mtime = mtimeNs(path_);
    if (mtime != file_mtime_ns_) {
      keys_ = std::make_shared<MasterKeys>(MasterKeys::load(path_));
      file_mtime_ns_ = mtime;
    }
  }
  return keys_;
}

SealedAtRest AtRestCipher::seal(std::string_view aad, std::string_view plaintext) {
  const auto ring = keys(false);
  const MasterKey& key = ring->current();
  const std::string nonce = randomBytes(kNonceBytes);
  std::string out(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  out.replace(0, kNonceBytes, nonce);
  auto* cipher = reinterpret_cast<unsigned char*>(out.data()) + kNonceBytes;
  CipherContext c;
  int n = 0, total = 0;
  const bool ok =
      c.ctx && EVP_EncryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_EncryptInit_ex(c.ctx, nullptr, nullptr, bytes(key.bytes), bytes(nonce)) == 1 &&
      EVP_EncryptUpdate(c.ctx, nullptr, &n, bytes(aad), static_cast<int>(aad.size())) == 1 &&
      EVP_EncryptUpdate(c.ctx, cipher, &n, bytes(plaintext), static_cast<int>(plaintext.size())) ==
          1 &&
      (total = n, EVP_EncryptFinal_ex(c.ctx, cipher + total, &n) == 1) &&
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, cipher + plaintext.size()) == 1;
  if (!ok) throw std::runtime_error("AES-256-GCM encryption failed");
  return {key.id, sdk::base64(out)};
}

std::optional<std::string> AtRestCipher::open(const SealedAtRest& sealed, std::string_view aad) {
  auto ring = keys(false);
  const MasterKey* key = ring->find(sealed.key_id);
  if (!key) {
    // Another svcd may have rotated the file a moment ago.
    ring = keys(true);
    key = ring->find(sealed.key_id);
  }
  const auto raw = sdk::base64Decode(sealed.data);
  if (!key || !raw || raw->size() < static_cast<std::size_t>(kNonceBytes + kTagBytes)) {
    return std::nullopt;
  }
  const std::size_t length = raw->size() - kNonceBytes - kTagBytes;
  const std::string_view nonce(raw->data(), kNonceBytes);
  const std::string_view cipher(raw->data() + kNonceBytes, length);
  std::string tag = raw->substr(kNonceBytes + length);
  std::string plain(length, '\0');
  auto* out = reinterpret_cast<unsigned char*>(plain.data());
  CipherContext c;
  int n = 0;
  const bool ok =
      c.ctx && EVP_DecryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_DecryptInit_ex(c.ctx, nullptr, nullptr, bytes(key->bytes), bytes(nonce)) == 1 &&
      EVP_DecryptUpdate(c.ctx, nullptr, &n, bytes(aad), static_cast<int>(aad.size())) == 1 &&
      EVP_DecryptUpdate(c.ctx, out, &n, bytes(cipher), static_cast<int>(length)) == 1 &&
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1 &&
      EVP_DecryptFinal_ex(c.ctx, out + n, &n) == 1;
  if (!ok) return std::nullopt;
  return plain;
}

std::string AtRestCipher::currentKeyId() {
  return keys(false)->current().id;
}

std::string AtRestCipher::rotate() {
  std::lock_guard lock(mutex_);
  auto next =
      std::make_shared<MasterKeys>(MasterKeys::load(path_).withCurrent(MasterKeys::generate()));
  next->save(path_);
  keys_ = next;
  file_mtime_ns_ = mtimeNs(path_);
  return keys_->current().id;
}

std::vector<std::string> AtRestCipher::retireAllBut(const std::vector<std::string>& ids) {
  std::lock_guard lock(mutex_);
  const MasterKeys all = MasterKeys::load(path_);
  auto kept = std::make_shared<MasterKeys>(all.keeping(ids));
  std::vector<std::string> retired;
  for (const auto& k : all.all()) {
    if (!kept->find(k.id)) retired.push_back(k.id);
  }
  if (retired.empty()) return retired;
  kept->save(path_);
  keys_ = kept;
  file_mtime_ns_ = mtimeNs(path_);
  return retired;
}

}  // namespace svc::plugins::vault
