#include "schema.h"

namespace svc::plugins::auth {

std::vector<sdk::Migration> authMigrations() {
  // The same statements serve both dialects: portable types only (architecture.md).
  return {
      sdk::Migration::portable(
          1, "accounts, users, keys, device codes, refresh tokens, signing keys",
          {"CREATE TABLE auth_accounts (id CHAR(36) NOT NULL PRIMARY KEY, plan VARCHAR(16) NOT "
           "NULL, "
           "created_us BIGINT NOT NULL, updated_us BIGINT NOT NULL)",
           "CREATE TABLE auth_users (id CHAR(36) NOT NULL PRIMARY KEY, account_id VARCHAR(36) NOT "
           "NULL, "
           "email VARCHAR(254) NOT NULL UNIQUE, name VARCHAR(200) NOT NULL, "
           "password_hash VARCHAR(255) NOT NULL, created_us BIGINT NOT NULL, "
           "updated_us BIGINT NOT NULL)",
           "CREATE TABLE auth_keys (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT "
           "NULL, "
           "kind VARCHAR(16) NOT NULL, identity_id VARCHAR(36) NOT NULL, label VARCHAR(200) NOT "
           "NULL, "
           "prefix VARCHAR(32) NOT NULL, key_hash CHAR(64) NOT NULL UNIQUE, "
           "created_by VARCHAR(36) NOT NULL, created_us BIGINT NOT NULL, revoked_us BIGINT NOT "
           "NULL, "
           "last_used_us BIGINT NOT NULL)",
           "CREATE INDEX auth_keys_account ON auth_keys (account_id)",
           "CREATE INDEX auth_keys_revoked ON auth_keys (revoked_us)",
           "CREATE TABLE auth_device_codes (id CHAR(36) NOT NULL PRIMARY KEY, "
           "code_hash CHAR(64) NOT NULL UNIQUE, user_code CHAR(8) NOT NULL, "
           "client_id VARCHAR(200) NOT NULL, status VARCHAR(16) NOT NULL, user_id VARCHAR(36) NOT "
           "NULL, "
           "interval_s INT NOT NULL, last_poll_us BIGINT NOT NULL, expires_us BIGINT NOT NULL, "
           "created_us BIGINT NOT NULL)",
           "CREATE INDEX auth_device_codes_user_code ON auth_device_codes (user_code)",
           "CREATE TABLE auth_refresh_tokens (id CHAR(36) NOT NULL PRIMARY KEY, "
           "family_id CHAR(36) NOT NULL, user_id CHAR(36) NOT NULL, account_id CHAR(36) NOT NULL, "
           "token_hash CHAR(64) NOT NULL UNIQUE, created_us BIGINT NOT NULL, "
           "expires_us BIGINT NOT NULL, retired_us BIGINT NOT NULL, revoked_us BIGINT NOT NULL)",
           "CREATE INDEX auth_refresh_family ON auth_refresh_tokens (family_id)",
           "CREATE TABLE auth_signing_keys (kid VARCHAR(64) NOT NULL PRIMARY KEY, "
           "private_pem TEXT NOT NULL, created_us BIGINT NOT NULL)"}),
      sdk::Migration::portable(
          2, "OpenID Connect links and browser sessions",
          {"CREATE TABLE auth_user_links (issuer VARCHAR(255) NOT NULL, "
           "subject VARCHAR(255) NOT NULL, user_id CHAR(36) NOT NULL, "
           "created_us BIGINT NOT NULL, PRIMARY KEY (issuer, subject))",
           "CREATE TABLE auth_web_sessions (token_hash CHAR(64) NOT NULL PRIMARY KEY, "
           "user_id CHAR(36) NOT NULL, created_us BIGINT NOT NULL, "
           "expires_us BIGINT NOT NULL)",
           "CREATE INDEX auth_web_sessions_expiry ON auth_web_sessions (expires_us)"}),
      sdk::Migration::portable(
          3, "revoked refresh-token families found by time (their access tokens are refused)",
          {"CREATE INDEX auth_refresh_revoked ON auth_refresh_tokens (revoked_us)"})};
}

}  // namespace svc::plugins::auth
