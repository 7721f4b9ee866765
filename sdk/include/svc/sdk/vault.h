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
//   - erase() removes a record's values with the record.
// The vault re-encrypts at rest on key rotation and replaces every value of an account in the
// passphrase change itself, so a plugin has nothing more to do for either.
#pragma once

#include <svc/sdk/services.h>

#include <Poco/Data/Session.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace svc::sdk {

/// The prefix of a value sealed by the client (a libsodium sealed box, standard base64).
inline constexpr std::string_view kSealedValuePrefix = "e2e::";

/// Protected fields of one record: field name → value ("" means none).
using ProtectedFields = std::map<std::string, std::string>;

/// A write of one record's protected fields.
struct VaultWrite {
  std::string account;     ///< The record's account.
  std::string identity;    ///< The record's identity (shown in the passphrase change's list).
  std::string holder;      ///< The plugin's name for the kind of record: `passwords`, `secrets`.
  std::string record;      ///< The record's id: a uuid.
  ProtectedFields fields;  ///< The fields to set; fields not named keep their values.
};

/// The vault. Its methods are called from many request threads at once.
class Vault {
 public:
  virtual ~Vault();
  /// @param account_id an account. @return whether it has end-to-end encryption set up.
  virtual bool endToEnd(const std::string& account_id) = 0;
  /// Stores protected fields in the caller's transaction (rolled back with it).
  /// @param transaction the session of the caller's transaction. @param write what to store.
  /// @throws HttpError 409 `vault_rekeying`, or 400 naming the offending field.
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
  /// Removes a record's protected fields in the caller's transaction.
  /// @param transaction the session. @param account the record's account. @param holder its kind.
  /// @param record its id. @throws HttpError 409 `vault_rekeying`.
  virtual void erase(Poco::Data::Session& transaction, const std::string& account,
                     const std::string& holder, const std::string& record) = 0;
};

/// The key of the Vault service.
inline constexpr ServiceKey<Vault> kVaultService{"svc.vault.v1"};

}  // namespace svc::sdk
