// The twilio provider's configuration (the pool provider's transport reads the same): its keys as
// declared, with their defaults, and the values read from them once, at configure time.
#pragma once

#include <svc/sdk/plugin.h>

#include <Poco/Util/AbstractConfiguration.h>

#include <string>
#include <vector>

namespace svc::plugins::sms {

/// @return the `sms.twilio.*` keys, each with its default and one line of description.
const std::vector<sdk::ConfigKey>& twilioConfigKeys();

/// How to reach Twilio, and how Twilio reaches this server.
struct TwilioConfig {
  std::string api_base;         ///< `https://api.twilio.com`, no trailing slash.
  std::string account_sid;      ///< `AC...`: the Basic auth user and the path's account.
  std::string auth_token;       ///< The Basic auth password and the webhook signing key.
  int timeout_seconds = 0;      ///< For each call to Twilio: connect, send and answer.
  std::string public_base_url;  ///< `public.base_url`, no trailing slash: the webhooks' base.

  /// @param config the plugin's configuration, where every key of twilioConfigKeys() is set and
  /// `public.base_url` is readable. @return the values.
  /// @throws std::runtime_error naming the key when a value is missing or not usable.
  static TwilioConfig read(const Poco::Util::AbstractConfiguration& config);
};

}  // namespace svc::plugins::sms
