#include "at_rest.h"

#include <svc/sdk/util.h>

#include <Poco/File.h>
#include <Poco/Path.h>

#include <openssl/evp.h>

#include <sys/stat.h>

#include <algorithm>
#include <stdexcept>

namespace svc::plugins::vault {

namespace {

constexpr int kNonceBytes = 12;
constexpr int kTagBytes = 16;

// AES-256-GCM, fetched from OpenSSL's provider once: an implicit fetch on every use costs a
// lookup under a lock. Null when the provider lacks it (the constructor refuses to run then).
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

AtRestCipher::AtRestCipher(std::string key_file) : path_(std::move(key_file)) {
  if (!aes256gcm()) throw std::runtime_error("OpenSSL offers no AES-256-GCM (its providers)");
  Poco::File(Poco::Path(path_).parent()).createDirectories();
  KeyFileLock lock(path_);
  auto keys = MasterKeys::read(path_);
  if (!keys) {
    keys = MasterKeys::fresh();
    keys->save(path_);
    made_file_ = true;
  }
  adopt(std::move(*keys));
}

std::optional<AtRestCipher::Stamp> AtRestCipher::stampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return Stamp{static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
               static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

void AtRestCipher::adopt(MasterKeys keys) {
  std::lock_guard lock(mutex_);
  keys_ = std::make_shared<MasterKeys>(std::move(keys));
  generation_.fetch_add(1);
  stamp_ = stampOf(path_);
  checked_ = std::chrono::steady_clock::now();
}

std::shared_ptr<const MasterKeys> AtRestCipher::keys(bool force_reload) {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (force_reload || now - checked_ >= std::chrono::seconds(1)) {
    checked_ = now;
    // Every write renames a new file into place: a new inode. A file that vanished or cannot be
    // read leaves the keys in memory as they are (values keep decrypting); it is never remade.
    const auto stamp = stampOf(path_);
    if (stamp && !(stamp_ && *stamp == *stamp_)) {
      try {
        if (auto fresh = MasterKeys::read(path_)) {
          keys_ = std::make_shared<MasterKeys>(std::move(*fresh));
          generation_.fetch_add(1);
          stamp_ = stamp;
        }
      } catch (const std::runtime_error&) {
      }
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
  ThreadContext thread;
  EVP_CIPHER_CTX* const ctx = thread.ctx;
  int n = 0, total = 0;
  const bool ok =
      ctx && EVP_EncryptInit_ex(ctx, aes256gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_EncryptInit_ex(ctx, nullptr, nullptr, bytes(key.bytes), bytes(nonce)) == 1 &&
      EVP_EncryptUpdate(ctx, nullptr, &n, bytes(aad), static_cast<int>(aad.size())) == 1 &&
      EVP_EncryptUpdate(ctx, cipher, &n, bytes(plaintext), static_cast<int>(plaintext.size())) ==
          1 &&
      (total = n, EVP_EncryptFinal_ex(ctx, cipher + total, &n) == 1) &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, cipher + plaintext.size()) == 1;
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
  ThreadContext thread;
  EVP_CIPHER_CTX* const ctx = thread.ctx;
  int n = 0;
  const bool ok =
      ctx && EVP_DecryptInit_ex(ctx, aes256gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_DecryptInit_ex(ctx, nullptr, nullptr, bytes(key->bytes), bytes(nonce)) == 1 &&
      EVP_DecryptUpdate(ctx, nullptr, &n, bytes(aad), static_cast<int>(aad.size())) == 1 &&
      EVP_DecryptUpdate(ctx, out, &n, bytes(cipher), static_cast<int>(length)) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1 &&
      EVP_DecryptFinal_ex(ctx, out + n, &n) == 1;
  if (!ok) return std::nullopt;
  return plain;
}

std::string AtRestCipher::currentKeyId() {
  return keys(false)->current().id;
}

std::vector<std::string> AtRestCipher::keyIds() {
  std::vector<std::string> ids;
  for (const auto& k : keys(false)->all()) ids.push_back(k.id);
  return ids;
}

MasterKeys AtRestCipher::readLocked() {
  auto keys = MasterKeys::read(path_);
  if (!keys) throw std::runtime_error("vault.master_key_file " + path_ + " has vanished");
  return *keys;
}

std::string AtRestCipher::rotate() {
  KeyFileLock lock(path_);
  MasterKeys next = readLocked().withNewCurrent();
  next.save(path_);
  const std::string id = next.current().id;
  adopt(std::move(next));
  return id;
}

std::vector<std::string> AtRestCipher::retire(const std::vector<std::string>& ids,
                                              const std::vector<std::string>& in_use) {
  KeyFileLock lock(path_);
  const MasterKeys all = readLocked();
  std::vector<std::string> keep, dropped;
  for (const auto& k : all.all()) {
    const bool candidate = std::find(ids.begin(), ids.end(), k.id) != ids.end();
    const bool used = std::find(in_use.begin(), in_use.end(), k.id) != in_use.end();
    if (candidate && !used && k.id != all.current().id) {
      dropped.push_back(k.id);
    } else {
      keep.push_back(k.id);
    }
  }
  if (dropped.empty()) return dropped;
  MasterKeys kept = all.keeping(keep);
  kept.save(path_);
  adopt(std::move(kept));
  return dropped;
}

}  // namespace svc::plugins::vault
