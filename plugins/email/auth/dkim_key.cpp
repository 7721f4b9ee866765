#include "auth/dkim_key.h"

#include "auth/dkim_tags.h"

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <algorithm>
#include <memory>

namespace svc::plugins::email {

namespace {

// RFC 8301: RSA keys below this are not accepted (libopendkim's default minimum too).
constexpr int kMinRsaBits = 1024;
// RFC 8301 asks verifiers to handle up to 4096 bits; larger keys cost a sender nothing and each
// check of them many times a normal one.
constexpr int kMaxRsaBits = 4096;

std::shared_ptr<DkimKey> invalid(std::shared_ptr<DkimKey> key, std::string why) {
  key->state = DkimKey::State::kInvalid;
  key->problem = std::move(why);
  return key;
}

}  // namespace

const EVP_MD* dkimSha256() {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

DkimKey::~DkimKey() {
  EVP_PKEY_CTX_free(rsa_sha256);
  EVP_PKEY_free(pkey);
}

bool DkimKey::verifiesSha256(const unsigned char* digest, std::size_t size,
                             const std::string& signature) const {
  if (rsa_sha256 == nullptr) return false;
  // A copy per call: a context is one thread's at a time, and copying reads the original only.
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_dup(rsa_sha256),
                                                                  EVP_PKEY_CTX_free);
  return ctx && EVP_PKEY_verify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                                signature.size(), digest, size) == 1;
}

bool DkimKey::allowsHash(std::string_view hash) const {
  return hashes.empty() || std::find(hashes.begin(), hashes.end(), hash) != hashes.end();
}

std::shared_ptr<const DkimKey> DkimKey::decode(const std::string& record) {
  auto key = std::make_shared<DkimKey>();
  const auto tags = DkimTags::parse(record);
  if (!tags) return invalid(key, "the key record is not a tag list");
  if (const auto* v = tags->find("v"); v != nullptr && *v != "DKIM1") {
    return invalid(key, "v= is not DKIM1");
  }
  const auto* k = tags->find("k");
  key->type = k == nullptr ? "rsa" : *k;
  if (key->type != "rsa" && key->type != "ed25519") return invalid(key, "unknown k=");
  if (const auto* h = tags->find("h")) key->hashes = splitDkimList(*h);
  if (const auto* s = tags->find("s")) {
    const auto services = splitDkimList(*s);
    if (std::find(services.begin(), services.end(), "*") == services.end() &&
        std::find(services.begin(), services.end(), "email") == services.end()) {
      return invalid(key, "s= does not allow email");
    }
  }
  if (const auto* t = tags->find("t")) {
    for (const auto& flag : splitDkimList(*t)) key->strict = key->strict || flag == "s";
  }
  const auto* p = tags->find("p");
  if (p == nullptr) return invalid(key, "no p=");
  if (p->empty()) {
    key->state = State::kRevoked;
    key->problem = "the key is revoked (empty p=)";
    return key;
  }
  const auto der = decodeDkimBase64(*p);
  if (!der || der->empty()) return invalid(key, "p= is not base64");
  const auto* bytes = reinterpret_cast<const unsigned char*>(der->data());
  if (key->type == "ed25519") {
    // RFC 8463 section 4.2: the 32 bytes of the public key, not wrapped in ASN.1.
    if (der->size() != 32) return invalid(key, "an ed25519 key is not 32 bytes");
    key->pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, bytes, der->size());
    if (key->pkey == nullptr) return invalid(key, "p= is no ed25519 key");
  } else {
    key->pkey = d2i_PUBKEY(nullptr, &bytes, static_cast<long>(der->size()));
    if (key->pkey == nullptr || EVP_PKEY_get_base_id(key->pkey) != EVP_PKEY_RSA) {
      return invalid(key, "p= is no RSA SubjectPublicKeyInfo");
    }
    const int bits = EVP_PKEY_get_bits(key->pkey);
    if (bits < kMinRsaBits) return invalid(key, "RSA key under 1024 bits");
    if (bits > kMaxRsaBits) return invalid(key, "RSA key over 4096 bits");
    key->rsa_sha256 = EVP_PKEY_CTX_new_from_pkey(nullptr, key->pkey, nullptr);
    if (key->rsa_sha256 == nullptr || EVP_PKEY_verify_init(key->rsa_sha256) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(key->rsa_sha256, RSA_PKCS1_PADDING) != 1 ||
        EVP_PKEY_CTX_set_signature_md(key->rsa_sha256, EVP_sha256()) != 1) {
      return invalid(key, "OpenSSL cannot verify with this RSA key");
    }
  }
  key->state = State::kUsable;
  return key;
}

namespace {

// The cache's key for a record: its SHA-256, so an entry costs 32 bytes however long the record
// (a TXT answer may be 16 KiB; a thousand of them twice over was 32 MB).
std::string recordDigest(const std::string& record) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(record.data(), record.size(), digest, &size, dkimSha256(), nullptr) != 1) {
    return {};
  }
  return std::string(reinterpret_cast<const char*>(digest), size);
}

}  // namespace

std::shared_ptr<const DkimKey> DkimKeyCache::get(const std::string& record) {
  const std::string digest = recordDigest(record);
  if (digest.empty()) return DkimKey::decode(record);  // not kept without its key
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(digest);
    if (it != entries_.end()) {
      order_.splice(order_.begin(), order_, it->second.at);
      return it->second.key;
    }
  }
  // Decoded outside the lock: two threads meeting a new key both decode it, and neither waits
  // for the other's decode.
  auto key = DkimKey::decode(record);
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.count(digest) != 0 || capacity_ == 0) return key;
  order_.push_front(digest);
  entries_.emplace(digest, Entry{key, order_.begin()});
  while (entries_.size() > capacity_) {
    entries_.erase(order_.back());
    order_.pop_back();
  }
  return key;
}

std::size_t DkimKeyCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace svc::plugins::email
