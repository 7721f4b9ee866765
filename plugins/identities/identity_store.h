// The identities table: reading and writing identities, and the kernel's IdentityDirectory over
// it (with a short cache, since every identity-scoped request of every plugin asks it).
#pragma once

#include <svc/sdk/auth.h>
#include <svc/sdk/storage.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace svc::plugins::identities {

struct Identity {
  std::string uuid, account_id, name;
  std::int64_t created_us = 0, updated_us = 0;
};

/// @param raw a requested name (its length and characters checked by the route's declaration).
/// @return it trimmed. @throws HttpError 400 naming `name` when nothing but spaces.
std::string validName(const std::string& raw);

class IdentityStore {
 public:
  explicit IdentityStore(sdk::Database& db) : db_(db) {}
  /// @return the plugin's migrations.
  static std::vector<sdk::Migration> migrations();
  /// @param uuid a lower-case uuid. @return the identity, or nullopt.
  std::optional<Identity> load(const std::string& uuid);
  /// @return how many identities account has.
  long count(const std::string& account);
  /// @return a page of account's identities, oldest first.
  std::vector<Identity> page(const std::string& account, int limit, int offset);
  /// Inserts i inside transaction s.
  static void insert(Poco::Data::Session& s, const Identity& i);
  /// Writes i's name and updated time inside transaction s.
  static void update(Poco::Data::Session& s, const Identity& i);

 private:
  sdk::Database& db_;
};

/// The IdentityDirectory: is this identity the caller's account's?
class Directory : public sdk::IdentityDirectory {
 public:
  explicit Directory(IdentityStore& store) : store_(store) {}
  std::optional<sdk::IdentityRef> find(const std::string& account_id,
                                       const std::string& identity_uuid) override;
  /// Drops a cached identity (after a rename).
  void forget(const std::string& uuid);

 private:
  struct Entry {
    std::string account_id;
    sdk::IdentityRef ref;
    std::int64_t at_us;
  };
  IdentityStore& store_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> cache_;  // a second at most: names change rarely
};

}  // namespace svc::plugins::identities
