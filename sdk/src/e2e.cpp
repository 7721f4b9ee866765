// The contract's end-to-end scheme with libsodium (e2e.h): no cryptography of our own.
#include <svc/sdk/e2e.h>
#include <svc/sdk/util.h>
#include <svc/sdk/vault.h>

#include <sodium.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include <unistd.h>

namespace svc::sdk::e2e {

// e2e.h stays free of vault.h's storage types, but the prefix is one.
static_assert(kPrefix == sdk::kSealedValuePrefix);
static_assert(kSaltBytes == crypto_pwhash_SALTBYTES && kSeedBytes == crypto_box_SEEDBYTES &&
              kPublicKeyBytes == crypto_box_PUBLICKEYBYTES &&
              kSealOverhead == crypto_box_SEALBYTES);

namespace {

// libsodium must be initialised once before use; sodium_init is safe to call from many threads
// and again (it answers 1 when already done).
void ready() {
  static const bool ok = sodium_init() >= 0;
  if (!ok) throw E2eError("libsodium could not be initialised");
}

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

// Whole pages of its own: mlock and munlock work on pages, so a buffer sharing a page with
// another would be unlocked when the other is freed.
SecretBytes::SecretBytes(std::size_t size) {
  if (size == 0) return;
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  capacity_ = (size + page - 1) / page * page;
  data_ = static_cast<unsigned char*>(std::aligned_alloc(page, capacity_));
  if (!data_) throw std::bad_alloc();
  sodium_memzero(data_, capacity_);
  size_ = size;
  locked_ = sodium_mlock(data_, capacity_) == 0;
}

SecretBytes SecretBytes::copyOf(std::string_view from) {
  SecretBytes out(from.size());
  std::copy(from.begin(), from.end(), out.data_);
  return out;
}

SecretBytes::~SecretBytes() {
  release();
}

void SecretBytes::release() noexcept {
  if (!data_) return;
  sodium_memzero(data_, capacity_);
  if (locked_) sodium_munlock(data_, capacity_);
  std::free(data_);
  data_ = nullptr;
  size_ = capacity_ = 0;
  locked_ = false;
}

SecretBytes::SecretBytes(SecretBytes&& other) noexcept
    : data_(other.data_), size_(other.size_), capacity_(other.capacity_), locked_(other.locked_) {
  other.data_ = nullptr;
  other.size_ = other.capacity_ = 0;
  other.locked_ = false;
}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
  if (this != &other) {
    release();
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(locked_, other.locked_);
  }
  return *this;
}

void SecretBytes::push_back(unsigned char byte) {
  if (size_ == capacity_) {
    SecretBytes bigger(std::max<std::size_t>(64, capacity_ * 2));
    std::copy(data_, data_ + size_, bigger.data_);
    bigger.size_ = size_;
    *this = std::move(bigger);
  }
  data_[size_++] = byte;
}

void SecretBytes::pop_back() {
  if (size_ > 0) data_[--size_] = 0;
}

SecretBytes deriveSeed(std::string_view passphrase, std::string_view salt, const Kdf& kdf) {
  ready();
  if (salt.size() != kSaltBytes) {
    throw E2eError("the salt must be 16 bytes");
  }
  if (kdf.p != 1 || kdf.t < 1 || kdf.m < 8) {
    throw E2eError("the KDF parameters must have p = 1, t >= 1 and m >= 8 KiB");
  }
  SecretBytes seed(kSeedBytes);
  const auto memlimit = static_cast<std::size_t>(kdf.m) * 1024;
  if (crypto_pwhash(seed.data(), seed.size(), passphrase.data(), passphrase.size(), bytes(salt),
                    static_cast<unsigned long long>(kdf.t), memlimit,
                    crypto_pwhash_ALG_ARGON2ID13) != 0) {
    throw E2eError("Argon2id could not run with m = " + std::to_string(kdf.m) +
                   " KiB (not enough memory?)");
  }
  return seed;
}

KeyPair KeyPair::fromSeed(const SecretBytes& seed) {
  ready();
  if (seed.size() != crypto_box_SEEDBYTES) throw E2eError("the seed must be 32 bytes");
  KeyPair keys;
  keys.public_key_.assign(crypto_box_PUBLICKEYBYTES, '\0');
  keys.secret_key_ = SecretBytes(crypto_box_SECRETKEYBYTES);
  if (crypto_box_seed_keypair(reinterpret_cast<unsigned char*>(keys.public_key_.data()),
                              keys.secret_key_.data(), seed.data()) != 0) {
    throw E2eError("libsodium could not make the key pair");
  }
  return keys;
}

KeyPair KeyPair::derive(std::string_view passphrase, std::string_view salt, const Kdf& kdf) {
  return fromSeed(deriveSeed(passphrase, salt, kdf));
}

std::optional<SecretBytes> KeyPair::openBox(std::string_view box) const {
  ready();
  if (box.size() < crypto_box_SEALBYTES) return std::nullopt;
  SecretBytes plain(box.size() - crypto_box_SEALBYTES);
  // An empty value seals to a bare overhead; SecretBytes(0) has no buffer to write to.
  unsigned char none = 0;
  if (crypto_box_seal_open(plain.empty() ? &none : plain.data(), bytes(box), box.size(),
                           bytes(public_key_), secret_key_.data()) != 0) {
    return std::nullopt;
  }
  return plain;
}

std::optional<SecretBytes> KeyPair::open(std::string_view value) const {
  if (!isSealed(value)) return std::nullopt;
  const auto box = sdk::base64Decode(value.substr(kPrefix.size()));
  if (!box) return std::nullopt;
  return openBox(*box);
}

std::string sealBox(std::string_view plaintext, std::string_view public_key) {
  ready();
  if (public_key.size() != crypto_box_PUBLICKEYBYTES) {
    throw E2eError("the public key must be 32 bytes");
  }
  std::string box(plaintext.size() + crypto_box_SEALBYTES, '\0');
  if (crypto_box_seal(reinterpret_cast<unsigned char*>(box.data()), bytes(plaintext),
                      plaintext.size(), bytes(public_key)) != 0) {
    throw E2eError("crypto_box_seal failed (not a valid public key?)");
  }
  return box;
}

std::string seal(std::string_view plaintext, std::string_view public_key) {
  return std::string(kPrefix) + sdk::base64(sealBox(plaintext, public_key));
}

bool isSealed(std::string_view value) {
  return value.substr(0, kPrefix.size()) == kPrefix;
}

std::string makeVerifier(std::string_view public_key) {
  return sdk::base64(sealBox(kVerifierText, public_key));
}

bool checkVerifier(std::string_view verifier, const KeyPair& keys) {
  const auto box = sdk::base64Decode(verifier);
  if (!box) return false;
  const auto plain = keys.openBox(*box);
  return plain && plain->view() == kVerifierText;
}

std::string newSalt() {
  ready();
  std::string salt(kSaltBytes, '\0');
  randombytes_buf(salt.data(), salt.size());
  return salt;
}

void wipe(std::string& text) {
  if (!text.empty()) sodium_memzero(text.data(), text.size());
  text.clear();
}

}  // namespace svc::sdk::e2e
