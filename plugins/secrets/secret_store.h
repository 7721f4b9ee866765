// The secrets plugin's table: a secret's own columns (id, account, identity, key, times). Its
// protected fields, `value` and `notes`, are the vault's (sdk::Vault, holder `secrets`): never
// stored here. Writes publish their events in the caller's transaction.
#pragma once

#include <svc/sdk/events.h>
#include <svc/sdk/storage.h>
#include <svc/sdk/vault.h>

#include <Poco/Data/Session.h>
#include <Poco/JSON/Object.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::secrets {

/// The vault's name for the records of this plugin.
inline constexpr const char* kHolder = "secrets";

struct SecretRow {
  std::string id, account_id, identity_uuid, key;
  std::int64_t created_us = 0, updated_us = 0;
};

/// Which secrets a list reads: an identity's (else an account's), optionally one key.
struct SecretFilter {
  std::string account_id;
  std::string identity_uuid;  ///< Empty: the whole account.
  std::optional<std::string> key;
};

class SecretStore {
 public:
  explicit SecretStore(sdk::EventBus& events) : events_(events) {}
  static std::vector<sdk::Migration> migrations();

  /// @param id any text. @return the secret with that id, or nullopt (also for a non-UUID).
  std::optional<SecretRow> find(Poco::Data::Session& s, const std::string& id);
  /// @return the identity's secret with that key, or nullopt: one lookup in the unique index.
  std::optional<SecretRow> byKey(Poco::Data::Session& s, const std::string& identity,
                                 const std::string& key);
  /// @return the filter's secrets, newest first.
  std::vector<SecretRow> list(Poco::Data::Session& s, const SecretFilter& filter, int limit,
                              int offset);
  long count(Poco::Data::Session& s, const SecretFilter& filter);

  /// Inserts a secret and publishes `secret.created`. @throws HttpError 409 `conflict` when its
  /// identity has that key (the unique index decides, also between racing writers).
  void insert(Poco::Data::Session& tx, const SecretRow& row);
  /// Writes a secret's key and updated time and publishes `secret.updated`. @throws HttpError 409
  /// `conflict` as insert() does, 404 when it is gone.
  void update(Poco::Data::Session& tx, const SecretRow& row);
  /// Deletes a secret and publishes `secret.deleted`. @return false when it was gone already.
  bool remove(Poco::Data::Session& tx, const SecretRow& row);

  /// @return the secret as the API shows it. @param fields its protected fields from the vault.
  static Poco::JSON::Object::Ptr json(const SecretRow& row, const sdk::ProtectedFields& fields);
  /// @return the secret without its protected fields: what events carry.
  static Poco::JSON::Object::Ptr eventJson(const SecretRow& row);

 private:
  sdk::EventBus& events_;
};

}  // namespace svc::plugins::secrets
