#include "e2e_rule.h"

#include <svc/sdk/util.h>
#include <svc/sdk/vault.h>

#include <Poco/Exception.h>

#include <map>

namespace svc::plugins::vault {

namespace {

constexpr std::size_t kSaltBytes = 16;
constexpr std::size_t kPublicKeyBytes = 32;
// Never smaller than the contract's parameters; bounded so that no client is asked for more
// than a machine can give (libsodium's p is always 1).
constexpr int kMinOps = 3, kMaxOps = 100;
constexpr int kMinMemKiB = 65536, kMaxMemKiB = 4 * 1024 * 1024;

// @return the bytes of canonical, padded standard base64 (what sdk::base64 writes), else nullopt.
std::optional<std::string> strictBase64(std::string_view text) {
  if (text.empty()) return std::nullopt;
  auto bytes = sdk::base64Decode(text);
  if (!bytes || sdk::base64(*bytes) != text) return std::nullopt;
  return bytes;
}

std::optional<std::string> shapeError(const std::string& text, std::size_t size, const char* what) {
  const auto bytes = strictBase64(text);
  if (!bytes || bytes->size() != size) {
    return std::string("must be standard base64 (with padding) of ") + what;
  }
  return std::nullopt;
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
  std::map<std::string, std::string> errors;  // one problem a field, the first found
  EncryptionSetup setup;
  auto text = [&](const char* name, std::string& into) {
    try {
      if (auto v = request.stringField(name)) {
        into = *v;
        return true;
      }
      errors[name] = "this field is required";
    } catch (const sdk::HttpError&) {
      errors[name] = "must be a string";
    }
    return false;
  };
  if (text("salt", setup.salt)) {
    if (auto e = shapeError(setup.salt, kSaltBytes, "16 bytes")) errors["salt"] = *e;
  }
  if (text("public_key", setup.public_key)) {
    if (auto e = shapeError(setup.public_key, kPublicKeyBytes, "32 bytes (an X25519 key)")) {
      errors["public_key"] = *e;
    }
  }
  if (text("verifier", setup.verifier)) {
    if (auto e = shapeError(setup.verifier, kSealOverhead + kVerifierText.size(),
                            "a sealed box of `svc-e2e-verify` (62 bytes)")) {
      errors["verifier"] = *e;
    }
  }
  if (request.json && request.json->has("kdf") && !request.json->isNull("kdf")) {
    auto kdf = request.json->getObject("kdf");
    auto number = [&](const char* name, int& into, int low, int high) {
      if (!kdf->has(name)) return;
      const auto v = kdf->get(name);
      const std::string field = std::string("kdf.") + name;
      if (!v.isInteger() || v.convert<long long>() < low || v.convert<long long>() > high) {
        errors[field] =
            "must be an integer from " + std::to_string(low) + " to " + std::to_string(high);
        return;
      }
      into = v.convert<int>();
    };
    if (!kdf) {
      errors["kdf"] = "must be an object {alg, t, m, p}";
    } else {
      if (kdf->has("alg") &&
          !(kdf->get("alg").isString() && kdf->get("alg").convert<std::string>() == "argon2id")) {
        errors["kdf.alg"] = "must be \"argon2id\"";
      }
      number("t", setup.t, kMinOps, kMaxOps);
      number("m", setup.m, kMinMemKiB, kMaxMemKiB);
      number("p", setup.p, 1, 1);
    }
  }
  sdk::FieldErrors all;
  for (const auto& [field, message] : errors) all.add(field, message);
  all.throwIfAny();
  return setup;
}

}  // namespace svc::plugins::vault
