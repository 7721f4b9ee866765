// The vault's tables: each account's encryption metadata (and passphrase-change lease), and every
// protected value of every plugin, encrypted at rest.
#pragma once

#include <svc/sdk/storage.h>

#include <Poco/Data/Session.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::vault {

/// An account's row: its encryption metadata (empty until set up) and its passphrase-change lease.
struct AccountRow {
  std::string account_id;
  std::string salt, public_key, verifier;  ///< Empty until end-to-end encryption is set up.
  int kdf_t = 3, kdf_m = 65536, kdf_p = 1;
  std::int64_t created_us = 0, updated_us = 0;
  std::string rekey_token_hash;       ///< SHA-256 hex of the lease's token, or empty.
  std::int64_t rekey_expires_us = 0;  ///< When the lease ends.
  /// @return whether end-to-end encryption is set up.
  bool endToEnd() const { return !public_key.empty(); }
  /// @param now_us the time. @return whether a passphrase change holds the account's vault.
  bool rekeying(std::int64_t now_us) const {
    return !rekey_token_hash.empty() && rekey_expires_us > now_us;
  }
};

/// One protected field of one record, as stored.
struct ValueRow {
  std::string holder, record, field;
  std::string account_id, identity_uuid;
  std::string key_id;  ///< The master key it is encrypted under.
  std::string sealed;  ///< base64(nonce, ciphertext, tag).
};

/// How a read locks what it reads (MySQL; SQLite's one writer already serializes writes).
enum class Lock { kNone, kShared, kExclusive };

/// The vault's storage. Thread-safe (each call uses the session it is given).
class VaultStore {
 public:
  /// @param database the kernel's database.
  explicit VaultStore(sdk::Database& database);
  /// @return the vault's migrations.
  static std::vector<sdk::Migration> migrations();
  /// @return the database.
  sdk::Database& database() { return db_; }

  /// @return the account's row, or nullopt when it has none.
  std::optional<AccountRow> account(Poco::Data::Session& s, const std::string& account_id,
                                    Lock lock);
  /// Makes the account's row when it has none, in a statement of its own (outside any
  /// transaction): a transaction then locks a row that exists, never the gap where it would be,
  /// which two transactions inserting the same row would deadlock on.
  void ensureAccount(const std::string& account_id);
  /// Inserts or replaces the account's row.
  void saveAccount(Poco::Data::Session& s, const AccountRow& row);

  /// Inserts or replaces one value (a record's value stays in the account it was made in).
  void putValue(Poco::Data::Session& s, const ValueRow& row);
  /// Removes one field of an account's record.
  void eraseValue(Poco::Data::Session& s, const std::string& account_id, const std::string& holder,
                  const std::string& record, const std::string& field);
  /// Removes every field of an account's record.
  void eraseRecord(Poco::Data::Session& s, const std::string& account_id, const std::string& holder,
                   const std::string& record);
  /// @param records ids (lower-case uuids; others are skipped). @return the account's values of
  /// those records.
  std::vector<ValueRow> values(Poco::Data::Session& s, const std::string& account_id,
                               const std::string& holder, const std::vector<std::string>& records);
  /// @return every value of an account, in a stable order.
  std::vector<ValueRow> accountValues(Poco::Data::Session& s, const std::string& account_id,
                                      Lock lock);
  /// @return up to limit values encrypted under another key than key_id.
  std::vector<ValueRow> notUnderKey(Poco::Data::Session& s, const std::string& key_id, int limit);
  /// Replaces a value's encryption if it is still as read. @return whether it was.
  bool reseal(Poco::Data::Session& s, const ValueRow& was, const std::string& key_id,
              const std::string& sealed);
  /// @return the ids of the keys some value is encrypted under.
  std::vector<std::string> keyIdsInUse(Poco::Data::Session& s);

 private:
  std::string lockClause(Lock lock) const;

  sdk::Database& db_;
};

}  // namespace svc::plugins::vault
