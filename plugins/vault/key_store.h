// The vault's data keys in the database: `vault_data_keys`, each data key wrapped (AES-256-GCM) by
// a wrapping key of `vault.master_key_file`, one row per (data key, wrapping key); and
// `vault_key_state`, one row: the current data key (new values are sealed under it), the one
// current before it, the wrapping key in use and, while the operator replaces it, the next one.
#pragma once

#include "vault_store.h"

#include <svc/sdk/storage.h>

#include <Poco/Data/Session.h>

#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::vault {

/// The state row.
struct KeyState {
  std::string current_key;   ///< The data key new values are sealed under ("" before the first).
  std::string previous_key;  ///< The one current before it (kept: late writes may use it).
  std::string wrap_id;       ///< The wrapping key every data key is wrapped under.
  std::string next_wrap_id;  ///< While a replacement runs, the new one (keys wrapped under both).
};

/// One data key wrapped under one wrapping key.
struct WrappedKey {
  std::string key_id, wrap_id;
  std::string wrapped;  ///< base64(nonce, ciphertext, tag).
};

/// SQL of the two tables. Every write is idempotent: a transaction retried runs it again safely.
class KeyStore {
 public:
  /// @param database the kernel's database.
  explicit KeyStore(sdk::Database& database) : db_(database) {}
  /// @return the vault's migration that makes the tables.
  static sdk::Migration migration();
  sdk::Database& database() { return db_; }

  /// Makes the state row naming wrap_id, unless there is one (the first svcd to start claims it).
  void claim(Poco::Data::Session& s, const std::string& wrap_id);
  /// @return the state row, or nullopt before any svcd claimed it.
  std::optional<KeyState> state(Poco::Data::Session& s, Lock lock);
  /// @param key_id one data key, or "" for every one. @return its rows.
  std::vector<WrappedKey> wrapped(Poco::Data::Session& s, const std::string& key_id);
  /// @return the ids of every data key.
  std::vector<std::string> keyIds(Poco::Data::Session& s);
  /// @return the ids of the keys some stored value is sealed under.
  std::vector<std::string> valueKeyIds(Poco::Data::Session& s);
  /// Adds a row. @param ignore_existing whether a row already there is kept (else an error: a new
  /// key's id must be new).
  void add(Poco::Data::Session& s, const WrappedKey& key, bool ignore_existing);
  /// Makes `next` current (the current one becomes the previous) if `expected` still is.
  /// @return whether it did.
  bool setCurrent(Poco::Data::Session& s, const std::string& expected, const std::string& next);
  /// Sets the replacement's wrapping key ("" ends it).
  void setNextWrap(Poco::Data::Session& s, const std::string& next_wrap_id);
  /// Makes wrap_id the one wrapping key: the rows under any other go, the replacement ends.
  void finishWrap(Poco::Data::Session& s, const std::string& wrap_id);
  /// Drops every row under wrap_id.
  void dropWrap(Poco::Data::Session& s, const std::string& wrap_id);
  /// Drops a data key (every row of it).
  void dropKey(Poco::Data::Session& s, const std::string& key_id);

 private:
  std::string lockClause(Lock lock) const;
  std::string insertIgnore() const;

  sdk::Database& db_;
};

}  // namespace svc::plugins::vault
