// Keys of an account: minting (within the account's allowance, an identity key only for an
// identity of the account) and revoking, each with its event in the same transaction.
#pragma once

#include "auth_service.h"
#include "auth_store.h"
#include "revocations.h"

#include <svc/sdk/plugin.h>

#include <Poco/JSON/Object.h>

#include <string>
#include <utility>

namespace svc::plugins::auth {

/// @return the key as GET /api/auth/keys/ shows it (never its secret).
Poco::JSON::Object::Ptr keyJson(const KeyRecord& k);

class KeyManager {
 public:
  /// @param max_keys unrevoked keys an account may have.
  /// @param revoker ends what a revoked key holds open.
  KeyManager(sdk::PluginContext& context, AuthStore& store, AuthService& authenticator,
             Revoker& revoker, int max_keys)
      : context_(context),
        store_(store),
        authenticator_(authenticator),
        revoker_(revoker),
        max_keys_(max_keys) {}

  /// Creates a management key (identity empty) or an identity key. @return the record and the
  /// key. @throws sdk::HttpError 404 for an identity the account does not have, 400 past the
  /// account's allowance.
  std::pair<KeyRecord, std::string> mint(const std::string& account_id, const std::string& creator,
                                         const std::string& label, std::string identity);
  /// Revokes an account's key and drops it from this process's cache at once.
  /// @return false when the account has no such unrevoked key.
  bool revoke(const std::string& account_id, const std::string& key_id);
  /// Publishes a key event (`key.created`, `key.revoked`) in the transaction of session s, so the
  /// event is stored with the change or not at all.
  void publish(const std::string& type, const KeyRecord& k, Poco::Data::Session& s);

 private:
  sdk::HttpError tooManyKeys() const;

  sdk::PluginContext& context_;
  AuthStore& store_;
  AuthService& authenticator_;
  Revoker& revoker_;
  int max_keys_;
};

}  // namespace svc::plugins::auth
