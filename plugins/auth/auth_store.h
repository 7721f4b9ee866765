// The auth plugin's tables: accounts, users, keys, device codes, refresh tokens, provider links
// and browser sessions.
#pragma once

#include <svc/sdk/storage.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::auth {

struct User {
  std::string id, account_id, email, name, password_hash;
};

struct KeyRecord {
  std::string id, account_id, kind, identity_id, label, prefix, created_by;
  std::int64_t created_us = 0, revoked_us = 0, last_used_us = 0;
};

struct DeviceCode {
  std::string id, user_code, client_id, status, user_id;
  int interval_s = 5;
  std::int64_t last_poll_us = 0, expires_us = 0;
};

class AuthStore {
 public:
  explicit AuthStore(sdk::Database& db) : db_(db) {}
  sdk::Database& db() { return db_; }

  std::optional<User> userByEmail(const std::string& email);
  std::optional<User> userById(const std::string& id);
  /// @return the new user, or nullopt when the email is taken.
  std::optional<User> addUser(const std::string& email, const std::string& name,
                              const std::string& password_hash);
  std::optional<User> addUser(Poco::Data::Session& s, const std::string& email,
                              const std::string& name, const std::string& password_hash);
  std::optional<User> userById(Poco::Data::Session& s, const std::string& id);
  std::optional<User> userByEmail(Poco::Data::Session& s, const std::string& email);
  /// @return the user an OpenID Connect (issuer, subject) is linked to.
  std::optional<std::string> linkedUser(Poco::Data::Session& s, const std::string& issuer,
                                        const std::string& subject);
  void link(Poco::Data::Session& s, const std::string& issuer, const std::string& subject,
            const std::string& user_id);

  /// Browser sessions, by the SHA-256 of their cookie's token.
  void addSession(const std::string& token_hash, const std::string& user_id,
                  std::int64_t expires_us);
  std::optional<std::string> sessionUser(const std::string& token_hash);
  /// Ends a browser session. @param also more work in the same transaction.
  void endSession(const std::string& token_hash,
                  const std::function<void(Poco::Data::Session&)>& also = {});
  /// Gives the user an account (creating it, on `plan`) when it has none. @return the account id.
  std::string ensureAccount(Poco::Data::Session& s, User& user, const std::string& plan);
  std::optional<std::string> accountPlan(const std::string& account_id);
  bool setAccountPlan(const std::string& account_id, const std::string& plan);

  /// Stores a key (its hash). @return the record.
  KeyRecord addKey(Poco::Data::Session& s, const std::string& account_id, const std::string& kind,
                   const std::string& identity_id, const std::string& label,
                   const std::string& prefix, const std::string& key_hash,
                   const std::string& created_by);
  /// Locks the account's row until the transaction ends, so key creations for one account are
  /// counted one after another. @return the account's unrevoked keys.
  int lockAndCountKeys(Poco::Data::Session& s, const std::string& account_id);
  std::optional<KeyRecord> keyByHash(const std::string& key_hash);
  std::vector<KeyRecord> keysOf(const std::string& account_id);
  /// @return the revoked key, or nullopt when it is not the account's or already revoked.
  /// @param also runs in the same transaction with the revoked record (to publish its event).
  std::optional<KeyRecord> revokeKey(
      const std::string& account_id, const std::string& key_id,
      const std::function<void(Poco::Data::Session&, const KeyRecord&)>& also = {});
  /// @return hashes of keys revoked at or after since_us.
  std::vector<std::string> revokedSince(std::int64_t since_us);
  void touchKeys(const std::vector<std::pair<std::string, std::int64_t>>& last_used);

  void addDeviceCode(const std::string& code_hash, const DeviceCode& code);
  std::optional<DeviceCode> deviceByHash(Poco::Data::Session& s, const std::string& code_hash);
  std::optional<DeviceCode> pendingByUserCode(const std::string& user_code);
  bool userCodeInUse(const std::string& user_code);
  /// @param ids device code ids. @return those no longer pending (decided, used or expired).
  std::vector<std::string> decidedAmong(const std::vector<std::string>& ids);
  /// Moves a pending code to approved/denied. @return false when it was no longer pending.
  bool decide(const std::string& id, const std::string& status, const std::string& user_id);
  void notePoll(Poco::Data::Session& s, const std::string& id, std::int64_t at, int interval_s);
  /// approved → consumed, exactly once. @return true for the one caller that consumed it.
  bool consume(Poco::Data::Session& s, const std::string& id);

  void addRefresh(Poco::Data::Session& s, const std::string& family, const std::string& user_id,
                  const std::string& account_id, const std::string& token_hash,
                  std::int64_t expires_us);
  struct Refresh {
    std::string id, family_id, user_id, account_id;
    std::int64_t expires_us = 0, retired_us = 0, revoked_us = 0;
  };
  std::optional<Refresh> refreshByHash(Poco::Data::Session& s, const std::string& token_hash);
  /// Retires a token, once. @return false when it was already retired.
  bool retire(Poco::Data::Session& s, const std::string& id);
  void revokeFamily(Poco::Data::Session& s, const std::string& family_id);
  /// @return the families revoked at or after since_us, with when.
  std::vector<std::pair<std::string, std::int64_t>> familiesRevokedSince(std::int64_t since_us);

 private:
  sdk::Database& db_;
};

}  // namespace svc::plugins::auth
