// The auth plugin's configuration: its keys are declared (with their defaults) once, in
// settingsKeys(), and read once, at configure, into AuthSettings.
#pragma once

#include <svc/sdk/plugin.h>

#include <Poco/Util/AbstractConfiguration.h>

#include <string>
#include <vector>

namespace svc::plugins::auth {

struct AuthSettings {
  bool local_users = false;                ///< auth.local_users: local users may sign in.
  std::string default_plan;                ///< accounts.default_plan: `active` or `none`.
  int device_expires_s = 0;                ///< auth.device.expires_seconds
  int device_interval_s = 0;               ///< auth.device.interval_seconds
  int device_per_minute = 0;               ///< auth.rate.device_per_minute
  int token_per_minute = 0;                ///< auth.rate.token_per_minute
  int failed_auth_per_minute = 0;          ///< auth.rate.failed_auth_per_minute
  int failed_auth_per_key_per_minute = 0;  ///< auth.rate.failed_auth_per_key_per_minute
  int session_seconds = 0;                 ///< auth.session.hours, in seconds.
  int max_keys = 0;                        ///< auth.keys.max_per_account
  std::string issuer_url;                  ///< public.base_url: the access tokens' issuer.
  std::string dashboard_url;               ///< dashboard.url: where people approve device codes.
};

/// @return the configuration keys the plugin declares, with their defaults.
std::vector<sdk::ConfigKey> settingsKeys();

/// Reads the plugin's settings (defaults come from the declarations, applied by the kernel).
/// @throws std::runtime_error naming the key when a value is out of range.
AuthSettings readSettings(const Poco::Util::AbstractConfiguration& c);

}  // namespace svc::plugins::auth
