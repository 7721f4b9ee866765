// The vault: where plugins keep the protected fields of their records (a password entry's
// password, username and notes; a secret's value and notes; a third party's tokens).
//
// Offered by the `vault` plugin, which owns `/api/encryption/`. A plugin keeping protected values
// lists `vault` in PluginInfo::requires_plugins, keeps its other columns in its own tables, and
// hands the protected ones to the vault inside its own transaction:
//   - put() applies the account's rule, once for every plugin: while the account's passphrase is
//     being changed every vault write answers 409 `vault_rekeying`; once the account has end-to-end
//     encryption set up, every non-empty value must be an `e2e::<base64 sealed box>` string (400
//     naming the field otherwise), so the server never receives those plaintexts; before that,
//     `e2e::` values are refused (nobody could open them). It then stores every value encrypted at
//     rest (AES-256-GCM under the server's master key, bound to account, holder, record and
//     field).
//   - get() gives the values back as the client sent them (decrypted at rest only).
//   - fetch() and open() split get() in two for a plugin's read cache: fetch() reads a record's
//     values still encrypted at rest, and open() decrypts them later, on every use, or says that
//     they may have changed since (a passphrase change or key rotation) and must be fetched again.
//     Such a cache must also drop a record when the plugin writes it (here or, through its events,
//     in another svcd process); the secrets plugin's SecretCache shows how.
//   - erase() removes a record's values with the record.
// The vault re-encrypts at rest on key rotation and replaces every value of an account in the
// passphrase change itself, so a plugin has nothing more to do for either.
#pragma once

#include <svc/sdk/services.h>

#include <Poco/Data/Session.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::sdk {

/// The prefix of a value sealed by the client (a libsodium sealed box, standard base64).
inline constexpr std::string_view kSealedValuePrefix = "e2e::";

/// The dashboard script the vault plugin adds (svc/sdk/dashboard.h; name it in
/// DashboardPage::scripts, with kVaultWorkerScript): `svcVault`, with which a page opens and
/// seals an account's values in the browser (through the worker, which holds the cryptography).
/// `svcVault.records(svc, spec)` renders an identity's records of one kind (the passwords and
/// secrets plugins' pages): names only, each revealed, copied and edited, and new ones added, on
/// request, after the person unlocks the vault with the passphrase; the passphrase and key never
/// leave the page. plugins/vault/web/vault.js documents spec.
inline constexpr const char* kVaultDashboardScript = "vault/vault.js";
/// The worker script `svcVault` starts (a page naming kVaultDashboardScript names it too): the
/// key derivation runs there, off the page's thread, and the key pair lives only there, so that
/// locking (terminating it) drops every copy libsodium made.
inline constexpr const char* kVaultWorkerScript = "vault/vault-worker.js";

/// The request header in which a client names the public key (base64, as GET /api/encryption/
/// shows it) it sealed a write's values to. put() refuses the write with 409 `e2e_key_changed`
/// when that is no longer the account's key (its passphrase was changed meanwhile, by another
/// client): values sealed to the old key would open for nobody who has the new passphrase.
inline constexpr const char* kSealedToHeader = "X-Svc-E2e-Public-Key";

/// Protected fields of one record: field name → value ("" means none).
using ProtectedFields = std::map<std::string, std::string>;

/// A write of one record's protected fields.
struct VaultWrite {
  std::string account;     ///< The record's account.
  std::string identity;    ///< The record's identity (shown in the passphrase change's list).
  std::string holder;      ///< The plugin's name for the kind of record: `passwords`, `secrets`.
  std::string record;      ///< The record's id: a uuid.
  ProtectedFields fields;  ///< The fields to set; fields not named keep their values.
  /// The public key the client says it sealed the values to (the kSealedToHeader header), or
  /// empty when it does not say. When given it must be the account's current key. Initialised,
  /// so that `{account, identity, holder, record, fields}` stays complete.
  std::string sealed_to{};
};

/// One record's protected fields as the vault keeps them: still encrypted at rest. fetch() reads
/// it and open() decrypts it; a plugin may keep it in between. Its members are the vault's.
struct StoredRecord {
  /// One field: its name, the id of the master key it is encrypted under, and the ciphertext.
  struct Field {
    std::string name, key_id, sealed;
  };
  std::string account, holder, record;
  /// What open() compares: this process's count of the account's passphrase changes and of key
  /// changes. Never stored, never compared across processes.
  std::uint64_t epoch = 0;
  std::vector<Field> fields;  ///< Empty when the record has no protected value.
  /// @return roughly the memory it holds, for a cache's bound.
  std::size_t bytes() const {
    std::size_t n = sizeof(*this) + account.size() + holder.size() + record.size();
    for (const auto& f : fields) n += sizeof(f) + f.name.size() + f.key_id.size() + f.sealed.size();
    return n;
  }
};

/// The vault. Its methods are called from many request threads at once.
class Vault {
 public:
  virtual ~Vault();
  /// @param account_id an account. @return whether it has end-to-end encryption set up.
  virtual bool endToEnd(const std::string& account_id) = 0;
  /// Stores protected fields in the caller's transaction (rolled back with it).
  /// @param transaction the session of the caller's transaction. @param write what to store.
  /// @throws HttpError 409 `vault_rekeying`, 409 `e2e_key_changed` (write.sealed_to is not the
  /// account's public key), or 400 naming the offending field.
  virtual void put(Poco::Data::Session& transaction, const VaultWrite& write) = 0;
  /// @param session a session (the caller's, in or out of a transaction). @param account the
  /// records' account (values of another account are never returned). @param holder the kind of
  /// record. @param records their ids. @return each record's stored fields, keyed by the id as
  /// given (records without any are absent).
  /// @throws std::runtime_error when a stored value does not decrypt (it is logged with its
  /// record): the request answers 500, never a damaged value.
  virtual std::map<std::string, ProtectedFields> get(Poco::Data::Session& session,
                                                     const std::string& account,
                                                     const std::string& holder,
                                                     const std::vector<std::string>& records) = 0;
  /// Reads records' protected fields without decrypting them, to open() now or later.
  /// @param session a session. @param account the records' account. @param holder their kind.
  /// @param records their ids. @return every record given, keyed by the id as given (a record
  /// without values has no fields).
  virtual std::map<std::string, StoredRecord> fetch(Poco::Data::Session& session,
                                                    const std::string& account,
                                                    const std::string& holder,
                                                    const std::vector<std::string>& records) = 0;
  /// Decrypts what fetch() read. @param stored a record as fetched.
  /// @return its fields, or nullopt when they may have changed since it was fetched (a passphrase
  /// change, or a key rotation here or in another svcd): fetch it again.
  /// @throws std::runtime_error as get() does.
  virtual std::optional<ProtectedFields> open(const StoredRecord& stored) = 0;
  /// Removes a record's protected fields in the caller's transaction.
  /// @param transaction the session. @param account the record's account. @param holder its kind.
  /// @param record its id. @throws HttpError 409 `vault_rekeying`.
  virtual void erase(Poco::Data::Session& transaction, const std::string& account,
                     const std::string& holder, const std::string& record) = 0;
};

/// The key of the Vault service.
inline constexpr ServiceKey<Vault> kVaultService{"svc.vault.v1"};

}  // namespace svc::sdk
