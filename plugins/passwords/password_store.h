// The passwords plugin's table and its rows. An entry's own columns (uuid, account, identity,
// domain, times) live in `password_entries`; its protected fields (username, password, notes) are
// handed to the vault (svc/sdk/vault.h) in the same transaction, under the holder `passwords`, and
// never touch this table. Writes publish `password.created|updated|deleted` in their
// transaction, with the entry minus its protected fields.
#pragma once

#include <svc/sdk/events.h>
#include <svc/sdk/storage.h>
#include <svc/sdk/vault.h>

#include <Poco/Data/Session.h>
#include <Poco/JSON/Object.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::passwords {

/// The vault's name for this plugin's records.
inline constexpr const char* kVaultHolder = "passwords";

struct EntryRow {
  std::string uuid, account_id, identity_uuid, domain;
  std::int64_t created_us = 0, updated_us = 0;
};

/// Which entries a list shows. identity empty: the whole account's.
struct EntryFilter {
  std::string account, identity;
  std::optional<std::string> domain;  ///< Exact (both lower-case).
  std::optional<std::string> search;  ///< A substring of the domain (lower-case).
};

class PasswordStore {
 public:
  PasswordStore(sdk::Database& database, sdk::EventBus& events, sdk::Vault& vault);
  static std::vector<sdk::Migration> migrations();

  sdk::Database& database() { return db_; }
  sdk::Vault& vault() { return vault_; }

  std::optional<EntryRow> entry(Poco::Data::Session& s, const std::string& uuid);
  long count(Poco::Data::Session& s, const EntryFilter& filter);
  /// @return the entries, newest first.
  std::vector<EntryRow> list(Poco::Data::Session& s, const EntryFilter& filter, int limit,
                             int offset);
  /// @return each entry's protected fields, read from the vault in one call per account.
  std::map<std::string, sdk::ProtectedFields> secrets(Poco::Data::Session& s,
                                                      const std::vector<EntryRow>& rows);

  /// Inserts an entry with its protected fields and publishes `password.created`.
  /// @param sealed_to the public key the client sealed to (sdk::kSealedToHeader), or empty.
  /// @throws HttpError from the vault (400 naming a field, 409 `vault_rekeying`,
  /// `e2e_key_changed`).
  void insert(Poco::Data::Session& tx, const EntryRow& row, const sdk::ProtectedFields& fields,
              const std::string& sealed_to);
  /// Sets an entry's domain (when given) and the protected fields named in `fields`, and
  /// publishes `password.updated`. @return the row as it now is. @throws HttpError 404 when the
  /// entry is gone, or the vault's.
  EntryRow update(Poco::Data::Session& tx, const EntryRow& row,
                  const std::optional<std::string>& domain, const sdk::ProtectedFields& fields,
                  const std::string& sealed_to);
  /// Deletes an entry with its protected fields and publishes `password.deleted`.
  /// @throws HttpError 404 when it is gone already, or the vault's.
  void remove(Poco::Data::Session& tx, const EntryRow& row);

  /// @param row an entry. @param fields its protected fields, or nullptr: the shape of events,
  /// which never carry them. @return the entry as the API shows it.
  static Poco::JSON::Object::Ptr entryJson(const EntryRow& row, const sdk::ProtectedFields* fields);

 private:
  sdk::Database& db_;
  sdk::EventBus& events_;
  sdk::Vault& vault_;
};

}  // namespace svc::plugins::passwords
