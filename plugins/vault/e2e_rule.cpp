#include "e2e_rule.h"

#include <svc/sdk/util.h>
#include <svc/sdk/vault.h>

namespace svc::plugins::vault {

namespace {

// @return the bytes of canonical, padded standard base64 (what sdk::base64 writes), else nullopt.
std::optional<std::string> strictBase64(std::string_view text) {
  if (text.empty()) return std::nullopt;
  auto bytes = sdk::base64Decode(text);
  if (!bytes || sdk::base64(*bytes) != text) return std::nullopt;
  return bytes;
}

}  // namespace

bool isSealedValue(std::string_view value) {
  if (value.substr(0, sdk::kSealedValuePrefix.size()) != sdk::kSealedValuePrefix) return false;
  const auto bytes = strictBase64(value.substr(sdk::kSealedValuePrefix.size()));
  return bytes && bytes->size() >= kSealOverhead;
}

std::optional<std::string> protectedValueError(std::string_view value, bool end_to_end) {
  if (value.empty()) return std::nullopt;
  const bool looks_sealed =
      value.substr(0, sdk::kSealedValuePrefix.size()) == sdk::kSealedValuePrefix;
  if (end_to_end && !isSealedValue(value)) {
    return std::string(
        "end-to-end encryption is set up for this account: send an `e2e::<base64>` sealed box "
        "to the public key of GET /api/encryption/, never the plaintext");
  }
  if (!end_to_end && looks_sealed) {
    return std::string(
        "this account has no end-to-end encryption: set it up with PUT /api/encryption/ before "
        "sending `e2e::` values");
  }
  return std::nullopt;
}

EncryptionSetup parseEncryptionSetup(const sdk::Request& request) {
  // The shapes (base64 of the right lengths, the KDF's bounds) are the route's declaration's
  // (encryptionInputSchema()), checked before this runs.
  EncryptionSetup setup;
  setup.salt = request.requiredString("salt");
  setup.public_key = request.requiredString("public_key");
  setup.verifier = request.requiredString("verifier");
  if (request.json && request.json->has("kdf") && !request.json->isNull("kdf")) {
    auto kdf = request.json->getObject("kdf");
    if (!kdf) throw sdk::HttpError::invalid("kdf", "must be an object {alg, t, m, p}");
    setup.t = kdf->optValue("t", setup.t);
    setup.m = kdf->optValue("m", setup.m);
    setup.p = kdf->optValue("p", setup.p);
  }
  return setup;
}

}  // namespace svc::plugins::vault
