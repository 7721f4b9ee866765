// DKIM signing (RFC 6376): rsa-sha256 with relaxed/relaxed canonicalization, for mail that
// leaves through the relay, so receivers can tell it really comes from the sender's domain.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace svc::plugins::email {

class DkimSigner {
 public:
  /// @param selector the DNS selector (`<selector>._domainkey.<domain>` holds the public key).
  /// @param pem_key_file an RSA private key in PEM. @throws std::runtime_error when unreadable.
  DkimSigner(std::string selector, const std::string& pem_key_file);
  ~DkimSigner();
  /// @param message RFC 5322 bytes with CRLF line ends. @param domain the signing domain (d=).
  /// @param time_s the signature time (t=). @return the message with a DKIM-Signature first.
  std::string sign(const std::string& message, const std::string& domain,
                   std::int64_t time_s) const;

 private:
  struct Key;
  std::string selector_;
  std::unique_ptr<Key> key_;
};

/// Relaxed body canonicalization (RFC 6376 section 3.4.4). @param body the body after the blank
/// line. @return its canonical form.
std::string relaxedBody(std::string_view body);
/// Relaxed header canonicalization (section 3.4.2) of one field. @param name its name.
/// @param value its value as received, folding included. @return `name:value` (no CRLF).
std::string relaxedHeader(std::string_view name, std::string_view value);

}  // namespace svc::plugins::email
