// The AccountService: what the dashboard does for a signed-in person (password and provider
// sign-in, browser sessions, device approval, keys), on the plugin's own logic.
#pragma once

#include "auth_store.h"
#include "device_flow.h"
#include "keys.h"
#include "revocations.h"
#include "settings.h"

#include <svc/sdk/accounts.h>

namespace svc::plugins::auth {

class Accounts : public sdk::AccountService {
 public:
  Accounts(sdk::Database& db, AuthStore& store, KeyManager& keys, DeviceFlow& device,
           Revoker& revoker, const AuthSettings& settings)
      : db_(db),
        store_(store),
        keys_(keys),
        device_(device),
        revoker_(revoker),
        settings_(settings) {}
  bool localUsersEnabled() override;
  std::optional<sdk::UserInfo> checkPassword(const std::string& email,
                                             const std::string& password) override;
  sdk::UserInfo externalUser(const std::string& issuer, const std::string& subject,
                             const std::string& email, const std::string& name,
                             bool email_verified) override;
  std::optional<sdk::UserInfo> user(const std::string& user_id) override;
  std::optional<sdk::DeviceRequest> pendingDevice(const std::string& user_code) override;
  sdk::DeviceDecision decideDevice(const std::string& user_code, const std::string& user_id,
                                   bool approve) override;
  std::string startSession(const std::string& user_id) override;
  std::optional<sdk::UserInfo> session(const std::string& token) override;
  void endSession(const std::string& token) override;
  int sessionSeconds() override;
  std::vector<sdk::KeyInfo> keys(const std::string& account_id) override;
  std::pair<sdk::KeyInfo, std::string> createKey(const sdk::UserInfo& user,
                                                 const std::string& label,
                                                 const std::string& identity) override;
  bool revokeKey(const std::string& account_id, const std::string& key_id) override;

 private:
  sdk::Database& db_;
  AuthStore& store_;
  KeyManager& keys_;
  DeviceFlow& device_;
  Revoker& revoker_;
  const AuthSettings& settings_;
};

}  // namespace svc::plugins::auth
