// DKIM signatures built here with OpenSSL, for any canonicalization, algorithm and tag list a
// test wants (DkimSigner makes only relaxed/relaxed rsa-sha256), to check verifiers against.
#pragma once

#include <openssl/evp.h>

#include <cstddef>
#include <optional>
#include <string>

namespace svc::plugins::email::testing {

struct TestSignature {
  EVP_PKEY* key = nullptr;
  std::string a = "rsa-sha256";
  std::string c = "relaxed/relaxed";
  std::string d = "example.org";
  std::string s = "sel";
  std::string h = "from:to:subject";
  std::optional<std::size_t> l;  ///< Sign only this many bytes of the canonical body.
  std::string extra;             ///< More tags, e.g. "i=@example.org; ", written before h=.
  std::string field_name = "DKIM-Signature";
  std::string separator = " ";  ///< Between tags, e.g. "\r\n\t" to fold each onto its line.
};

/// @return a 2048-bit RSA key, made once for the test binary.
EVP_PKEY* sharedRsaKey();

/// @return message with the signature's field on top.
std::string signForTest(const std::string& message, const TestSignature& sig);

/// @return the DKIM key record of key (k=rsa or k=ed25519), with extra tags before p=.
std::string keyRecord(EVP_PKEY* key, const std::string& extra = "");

}  // namespace svc::plugins::email::testing
