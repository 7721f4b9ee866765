// The Vault service (svc/sdk/vault.h): the end-to-end rule and encryption at rest, applied to
// every plugin's protected values in the plugin's own transaction.
#pragma once

#include "at_rest.h"
#include "vault_store.h"

#include <svc/sdk/vault.h>

#include <Poco/Logger.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace svc::plugins::vault {

/// What sdk::Vault promises, over the vault's tables and the master keys.
class VaultService : public sdk::Vault {
 public:
  /// @param store the tables. @param cipher the master keys. @param log where a value that does
  /// not decrypt is reported.
  VaultService(VaultStore& store, AtRestCipher& cipher, Poco::Logger& log);

  bool endToEnd(const std::string& account_id) override;
  void put(Poco::Data::Session& transaction, const sdk::VaultWrite& write) override;
  std::map<std::string, sdk::ProtectedFields> get(Poco::Data::Session& session,
                                                  const std::string& account,
                                                  const std::string& holder,
                                                  const std::vector<std::string>& records) override;
  std::map<std::string, sdk::StoredRecord> fetch(Poco::Data::Session& session,
                                                 const std::string& account,
                                                 const std::string& holder,
                                                 const std::vector<std::string>& records) override;
  std::optional<sdk::ProtectedFields> open(const sdk::StoredRecord& stored) override;
  void erase(Poco::Data::Session& transaction, const std::string& account,
             const std::string& holder, const std::string& record) override;

  /// Makes the account's StoredRecords fetched so far stale: its values were all replaced (a
  /// passphrase change, here or in another svcd). @param account_id the account.
  void invalidate(const std::string& account_id);

  /// @param row a stored value. @return its plaintext. @throws std::runtime_error (logged) when
  /// it does not decrypt.
  std::string openRow(const ValueRow& row);
  /// @param row a stored value. @return its plaintext, or nullopt (logged) when it does not
  /// decrypt.
  std::optional<std::string> tryOpenRow(const ValueRow& row);
  /// @param s the write's session (the current data key is read through it). @param row where a
  /// value goes (its sealed and key_id are filled in). @param value the value.
  void seal(Poco::Data::Session& s, ValueRow& row, const std::string& value);
  /// @throws sdk::HttpError 409 `vault_rekeying` while a passphrase change holds the account.
  /// @param row the account's row, if it has one.
  static void refuseWhileRekeying(const std::optional<AccountRow>& row);

 private:
  /// Logs that row does not decrypt.
  void report(const ValueRow& row);
  /// Logs that row does not decrypt and throws std::runtime_error.
  [[noreturn]] void undecryptable(const ValueRow& row);
  /// @return what a StoredRecord of the account fetched now carries: it changes with each of the
  /// account's passphrase changes and every change of the master keys this process knows. Only
  /// this process's: never stored, never compared with another's.
  std::uint64_t epoch(const std::string& account_id);

  VaultStore& store_;
  AtRestCipher& cipher_;
  Poco::Logger& log_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::uint64_t> replacements_;  ///< by account
};

}  // namespace svc::plugins::vault
