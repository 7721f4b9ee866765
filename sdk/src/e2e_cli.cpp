// The account's end-to-end metadata and unlocking it in svcctl (e2e_cli.h).
#include <svc/sdk/e2e_cli.h>
#include <svc/sdk/util.h>
#include <svc/sdk/vault.h>

#include <Poco/JSON/Object.h>

#include <unistd.h>

#include <cstdlib>
#include <iostream>

namespace svc::sdk::e2e {

namespace {

// What a client accepts from the server: never weaker than the contract's parameters (a server
// must not make a passphrase cheaper to guess), nor more memory than the server itself allows.
constexpr int kMinT = 3, kMaxT = 100, kMinM = 65536, kMaxM = 4 * 1024 * 1024;

std::string decoded(const Poco::JSON::Object& o, const char* field, std::size_t size) {
  const auto bytes = sdk::base64Decode(o.optValue<std::string>(field, ""));
  if (!bytes || bytes->size() != size) {
    throw CliError(std::string("the server's end-to-end metadata has a malformed ") + field);
  }
  return *bytes;
}

}  // namespace

bool printsToTerminal(const CliContext& cli) {
  return &cli.out() == &std::cout && ::isatty(STDOUT_FILENO) == 1;
}

Poco::JSON::Object::Ptr Metadata::toJson() const {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("salt", sdk::base64(salt));
  o->set("public_key", sdk::base64(public_key));
  o->set("verifier", verifier);
  Poco::JSON::Object::Ptr k = new Poco::JSON::Object;
  k->set("alg", "argon2id");
  k->set("t", kdf.t);
  k->set("m", kdf.m);
  k->set("p", kdf.p);
  o->set("kdf", k);
  return o;
}

NewKeys createKeys(const SecretBytes& passphrase, const Kdf& kdf) {
  NewKeys made;
  made.metadata.salt = newSalt();
  made.metadata.kdf = kdf;
  made.keys = KeyPair::derive(passphrase.view(), made.metadata.salt, kdf);
  made.metadata.public_key = made.keys.publicKey();
  made.metadata.verifier = makeVerifier(made.keys.publicKey());
  return made;
}

std::optional<Metadata> fetchMetadata(const CliContext& cli) {
  auto reply = cli.api("GET", "/api/encryption/");
  if (reply.status == 404) return std::nullopt;
  CliContext::expect(reply, 200);
  auto o = reply.json();
  Metadata m;
  m.salt = decoded(*o, "salt", kSaltBytes);
  m.public_key = decoded(*o, "public_key", kPublicKeyBytes);
  m.verifier = o->optValue<std::string>("verifier", "");
  decoded(*o, "verifier",
          kSealOverhead + kVerifierText.size());  // a sealed box of svc-e2e-verify, nothing larger
  auto kdf = o->getObject("kdf");
  if (!kdf || kdf->optValue<std::string>("alg", "") != "argon2id") {
    throw CliError("the server's end-to-end metadata names no argon2id KDF");
  }
  m.kdf.t = kdf->optValue<int>("t", 0);
  m.kdf.m = kdf->optValue<int>("m", 0);
  m.kdf.p = kdf->optValue<int>("p", 0);
  if (m.kdf.t < kMinT || m.kdf.t > kMaxT || m.kdf.m < kMinM || m.kdf.m > kMaxM || m.kdf.p != 1) {
    throw CliError("the server's KDF parameters (t " + std::to_string(m.kdf.t) + ", m " +
                   std::to_string(m.kdf.m) + " KiB, p " + std::to_string(m.kdf.p) +
                   ") are outside what the contract allows (t 3-100, m 65536-4194304 KiB, p 1)");
  }
  if (m.kdf.t > Kdf{}.t || m.kdf.m > Kdf{}.m) {
    cli.err() << "svcctl: note: this account's key derivation is raised above the contract's "
                 "defaults (t "
              << m.kdf.t << ", m " << m.kdf.m
              << " KiB; the defaults are t 3, m 65536 KiB): each unlock takes longer and more "
                 "memory. If you did not choose that, whoever can change the account's "
                 "metadata did.\n";
  }
  m.rekeying = o->has("rekey") && !o->isNull("rekey");
  return m;
}

KeyPair unlock(const Metadata& metadata, const SecretBytes& passphrase) {
  KeyPair keys;
  try {
    keys = KeyPair::derive(passphrase.view(), metadata.salt, metadata.kdf);
  } catch (const E2eError& e) {
    throw CliError(e.what());
  }
  if (!checkVerifier(metadata.verifier, keys)) {
    throw CliError("wrong passphrase: it does not open this account's vault");
  }
  if (keys.publicKey() != metadata.public_key) {
    throw CliError(
        "the server's public key is not the one this passphrase makes: nothing is sealed to it "
        "(the account's end-to-end metadata was changed without the passphrase)");
  }
  return keys;
}

CliVault::CliVault(const CliContext& cli, const CliArgs& args) : cli_(cli), args_(args) {}

CliVault::~CliVault() = default;

bool CliVault::endToEnd() {
  if (!fetched_) {
    metadata_ = fetchMetadata(cli_);
    fetched_ = true;
  }
  return metadata_.has_value();
}

const KeyPair& CliVault::keys() {
  if (!keys_) {
    if (!endToEnd()) throw CliError("this account has no end-to-end encryption set up");
    keys_ = unlock(*metadata_, readPassphrase(args_, "Vault passphrase: ", false));
  }
  return *keys_;
}

bool CliVault::passphraseGiven() const {
  return args_.has("--passphrase-file") || std::getenv("SVC_VAULT_PASSPHRASE_FILE") != nullptr;
}

std::string CliVault::seal(std::string_view plaintext) {
  if (!endToEnd()) {
    // The server says "not set up": a client that came with a passphrase expected otherwise,
    // and a server (or something between) must not get plaintext by saying so.
    if (passphraseGiven()) {
      throw CliError(
          "a vault passphrase was given, but the server says this account has no end-to-end "
          "encryption: nothing was sent. Run `svcctl vault init` to set it up, or leave out "
          "--passphrase-file and SVC_VAULT_PASSPHRASE_FILE to store the value unsealed.");
    }
    return std::string(plaintext);
  }
  return e2e::seal(plaintext, keys().publicKey());
}

void CliVault::sealFields(Poco::JSON::Object& body, const std::vector<std::string>& fields) {
  for (const auto& field : fields) {
    if (!body.has(field) || !body.get(field).isString()) continue;
    const std::string value = body.getValue<std::string>(field);
    if (!value.empty()) body.set(field, seal(value));
  }
}

CliHeaders CliVault::sealedToHeaders() const {
  if (!keys_) return {};
  return {{kSealedToHeader, sdk::base64(keys_->publicKey())}};
}

void CliVault::openFields(Poco::JSON::Object& record, const std::vector<std::string>& fields) {
  for (const auto& field : fields) {
    if (!record.has(field) || !record.get(field).isString()) continue;
    const std::string value = record.getValue<std::string>(field);
    if (value.empty()) continue;
    if (!isSealed(value)) {
      // Stored before encryption was set up it would have been sealed by the setup; so the
      // server (or something between) altered it. Never shown as if it were the account's.
      if (endToEnd()) {
        throw CliError("the " + field +
                       " is not sealed although the account has end-to-end encryption: it was "
                       "altered on the server, and is not shown");
      }
      continue;
    }
    const auto opened = keys().open(value);
    if (!opened) {
      throw CliError("the " + field +
                     " does not open with this account's key (sealed to another key, or altered)");
    }
    record.set(field, std::string(opened->view()));
  }
}

}  // namespace svc::sdk::e2e
