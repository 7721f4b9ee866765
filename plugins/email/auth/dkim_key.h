// DKIM public keys (RFC 6376 section 3.6.1 key records; RFC 8463 ed25519), decoded once.
//
// Decoding an RSA key is most of what a DKIM check costs with OpenSSL 3 (its decoder framework
// takes the better part of a millisecond a key, against some 30 µs for the RSA verify), and a
// receiver sees the same few signers again and again. So decoded keys are kept, keyed by the
// record's exact text (its SHA-256): a record changed in DNS is a new key, and the old one ages
// out.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

using EVP_PKEY = struct evp_pkey_st;
using EVP_PKEY_CTX = struct evp_pkey_ctx_st;
using EVP_MD = struct evp_md_st;

namespace svc::plugins::email {

/// @return OpenSSL's SHA-256, fetched once: EVP_sha256() fetches it again on every use, through
/// the provider's method store and its locks.
const EVP_MD* dkimSha256();

struct DkimKey {
  enum class State { kUsable, kRevoked, kInvalid };
  State state = State::kInvalid;
  std::string problem;              ///< Why it is not usable (for tests and logs).
  std::string type;                 ///< k=: "rsa" or "ed25519".
  std::vector<std::string> hashes;  ///< h=, lower-case; empty: any.
  bool strict = false;              ///< t=s: i= must be in d= itself, not a subdomain.
  EVP_PKEY* pkey = nullptr;
  EVP_PKEY_CTX* rsa_sha256 =
      nullptr;  ///< An RSA key's verify context, initialized; copied per use.

  /// @param record the TXT record as served (its strings joined). @return it decoded; never
  /// throws.
  static std::shared_ptr<const DkimKey> decode(const std::string& record);
  /// @return whether h= allows hash (e.g. "sha256").
  bool allowsHash(std::string_view hash) const;
  /// @return whether signature is this RSA key's PKCS #1 v1.5 signature of a SHA-256 digest.
  /// The verify context is set up once per key and copied per call: OpenSSL 3's
  /// EVP_DigestVerifyInit looks the algorithm up by name each time (a walk of its name map).
  bool verifiesSha256(const unsigned char* digest, std::size_t size,
                      const std::string& signature) const;

  DkimKey() = default;
  DkimKey(const DkimKey&) = delete;
  DkimKey& operator=(const DkimKey&) = delete;
  ~DkimKey();
};

/// Decoded keys by record text (its digest), least recently used dropped first; shared by every
/// thread.
class DkimKeyCache {
 public:
  explicit DkimKeyCache(std::size_t capacity = 1000) : capacity_(capacity) {}
  /// @return the decoded record, from the cache when it has been seen.
  std::shared_ptr<const DkimKey> get(const std::string& record);
  std::size_t size() const;

 private:
  using Order = std::list<std::string>;
  struct Entry {
    std::shared_ptr<const DkimKey> key;
    Order::iterator at;
  };
  std::size_t capacity_;
  mutable std::mutex mutex_;
  Order order_;  // most recently used first
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace svc::plugins::email
