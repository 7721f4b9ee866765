// End-to-end encryption in svcctl commands: the passphrase, the account's metadata, unlocking,
// and sealing and opening a record's protected fields (svc/sdk/e2e.h does the cryptography).
//
//   svc::sdk::e2e::CliVault vault(cli, args);  // args may carry --passphrase-file
//   if (vault.endToEnd()) body.set("value", vault.seal(value));   // asks for the passphrase once
//   ...
//   vault.openFields(*reply.json(), {"value", "notes"});          // `e2e::` values opened
//
// The passphrase comes from `--passphrase-file FILE` (declare passphraseFileOption() on the
// command), else the file `SVC_VAULT_PASSPHRASE_FILE` names, else a prompt on the terminal without
// echo; with none of them (no controlling terminal) the command is refused, saying how to give it.
// Part of SvcSdk::e2e.
#pragma once

#include <svc/sdk/cli.h>
#include <svc/sdk/e2e.h>

#include <Poco/JSON/Object.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace svc::sdk::e2e {

/// `--passphrase-file FILE`, for a command's options.
CliOption passphraseFileOption();

/// Where a passphrase comes from when no file is given: the terminal, without echo.
/// @param prompt what to ask, e.g. "Vault passphrase: ". @param confirm ask twice and refuse
/// when the two differ (setting a new passphrase). @throws CliError when there is no terminal
/// (code `no_terminal`, its message naming readPassphrase()'s files: a caller that asks for
/// another passphrase names its own option instead).
SecretBytes promptPassphrase(const std::string& prompt, bool confirm);

/// @param file a file holding the passphrase (one trailing line break is not part of it).
/// @throws CliError when it cannot be read or is empty.
SecretBytes readPassphraseFile(const std::string& file);

/// @return the passphrase: `--passphrase-file`, else `SVC_VAULT_PASSPHRASE_FILE`, else the
/// terminal (twice when `confirm`). @throws CliError.
SecretBytes readPassphrase(const CliArgs& args, const std::string& prompt, bool confirm);

/// @return whether the command prints to a terminal (its out() is stdout, and stdout a tty): a
/// value may be shown there without `--reveal`.
bool printsToTerminal(const CliContext& cli);

/// An account's end-to-end metadata, as `GET /api/encryption/` answers it (raw bytes decoded).
struct Metadata {
  std::string salt;        ///< 16 bytes
  std::string public_key;  ///< 32 bytes
  std::string verifier;    ///< base64, as stored
  Kdf kdf;
  bool rekeying = false;  ///< a passphrase change holds the vault

  /// @return `{salt, public_key, verifier, kdf: {alg, t, m, p}}`, for `PUT /api/encryption/`.
  Poco::JSON::Object::Ptr toJson() const;
};

/// New metadata and its key pair.
struct NewKeys {
  Metadata metadata;
  KeyPair keys;
};
/// @return a new salt, the key pair of `passphrase` with it (one Argon2id run), a new verifier.
NewKeys createKeys(const SecretBytes& passphrase, const Kdf& kdf = Kdf{});

/// @return the account's metadata, or nullopt when it has no end-to-end encryption (404). KDF
/// parameters above the contract's defaults (t 3, m 65536 KiB, p 1) are used, with a warning on
/// err(): each unlock then takes longer and more memory, which whoever set them chose.
/// @throws CliError for another answer, or metadata this client must not use (KDF parameters
/// below the contract's or above its bounds, keys of the wrong size).
std::optional<Metadata> fetchMetadata(const CliContext& cli);

/// @return the key pair of `passphrase` for `metadata`. @throws CliError saying plainly that the
/// passphrase is wrong when the verifier does not open with it, or that the server's public key
/// is not the passphrase's (nothing would then be sealed to a key the server chose).
KeyPair unlock(const Metadata& metadata, const SecretBytes& passphrase);

/// One command's view of the account's vault: fetches the metadata once, asks for the
/// passphrase at most once, when something must be sealed or opened.
class CliVault {
 public:
  CliVault(const CliContext& cli, const CliArgs& args);
  ~CliVault();

  /// @return whether the account has end-to-end encryption set up.
  bool endToEnd();
  /// @return the account's key pair, asking for the passphrase the first time. @throws CliError
  /// (wrong passphrase, no terminal, no end-to-end encryption).
  const KeyPair& keys();
  /// @return `plaintext` sealed to the account's key (checked against the passphrase first), or
  /// `plaintext` itself when the account has no end-to-end encryption. @throws CliError when the
  /// account has none but a passphrase was given (the server must not get plaintext by saying
  /// "not set up").
  std::string seal(std::string_view plaintext);
  /// Seals each of `fields` present in `body` as a non-empty string (seal()).
  void sealFields(Poco::JSON::Object& body, const std::vector<std::string>& fields);
  /// Replaces each of `fields` of `record` that is an `e2e::` value with what it seals (asking for
  /// the passphrase only when there is one). @throws CliError naming the field when one does
  /// not open with the account's key, or is not sealed although the account has end-to-end
  /// encryption (altered on the server).
  void openFields(Poco::JSON::Object& record, const std::vector<std::string>& fields);
  /// @return for CliContext::api(): the header naming the public key values were sealed to
  /// (sdk::kSealedToHeader), so the server refuses them with 409 `e2e_key_changed` should the
  /// passphrase have changed meanwhile; none when nothing was sealed.
  CliHeaders sealedToHeaders() const;

 private:
  bool passphraseGiven() const;

  const CliContext& cli_;
  const CliArgs& args_;
  bool fetched_ = false;
  std::optional<Metadata> metadata_;
  std::optional<KeyPair> keys_;
};

}  // namespace svc::sdk::e2e
