#include "settings.h"

#include <stdexcept>

namespace svc::plugins::auth {

std::vector<sdk::ConfigKey> settingsKeys() {
  return {
      {"auth.local_users", "true", "allow local users (svcctl users add) to sign in", false},
      {"accounts.default_plan", "active", "plan of new accounts: active or none", false},
      {"auth.device.expires_seconds", "600", "lifetime of a device code", false, true},
      {"auth.device.interval_seconds", "5", "polling interval of a device code", false},
      {"auth.rate.device_per_minute", "30", "device logins one address may start a minute", false},
      {"auth.rate.token_per_minute", "600", "device token polls one address may make a minute",
       false},
      {"auth.rate.failed_auth_per_minute", "30",
       "failed authentications from one address a minute before its unverified credentials get "
       "429 (keys already verified still work)",
       false},
      {"auth.rate.failed_auth_per_key_per_minute", "10",
       "failed authentications with one key prefix (or other credential) a minute, from any "
       "address, before it gets 429",
       false},
      {"auth.session.hours", "12", "how long a dashboard sign-in lasts", false},
      {"auth.keys.max_per_account", "100",
       "unrevoked keys an account may have; creating more answers 400 (device logins are not "
       "refused)",
       false},
  };
}

AuthSettings readSettings(const Poco::Util::AbstractConfiguration& c) {
  AuthSettings s;
  s.default_plan = c.getString("accounts.default_plan");
  if (s.default_plan != "active" && s.default_plan != "none") {
    throw std::runtime_error("accounts.default_plan must be active or none");
  }
  s.device_expires_s = c.getInt("auth.device.expires_seconds");
  s.device_interval_s = c.getInt("auth.device.interval_seconds");
  if (s.device_expires_s < 1 || s.device_interval_s < 0) {
    throw std::runtime_error("auth.device.expires_seconds and interval_seconds must be positive");
  }
  s.issuer_url = c.getString("public.base_url");
  // The dashboard declares dashboard.url (shared); without the dashboard, where it would be.
  s.dashboard_url = c.getString("dashboard.url", s.issuer_url + "/dashboard");
  s.device_per_minute = c.getInt("auth.rate.device_per_minute");
  s.token_per_minute = c.getInt("auth.rate.token_per_minute");
  s.failed_auth_per_minute = c.getInt("auth.rate.failed_auth_per_minute");
  s.failed_auth_per_key_per_minute = c.getInt("auth.rate.failed_auth_per_key_per_minute");
  s.local_users = c.getBool("auth.local_users");
  s.session_seconds = c.getInt("auth.session.hours") * 3600;
  if (s.session_seconds < 3600) throw std::runtime_error("auth.session.hours must be at least 1");
  s.max_keys = c.getInt("auth.keys.max_per_account");
  if (s.max_keys < 1) throw std::runtime_error("auth.keys.max_per_account must be at least 1");
  return s;
}

}  // namespace svc::plugins::auth
