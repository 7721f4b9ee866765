#include "twilio_config.h"

#include <Poco/Exception.h>
#include <Poco/URI.h>

#include <stdexcept>

namespace svc::plugins::sms {

namespace {

// An http(s) URL with a host and nothing after the path, without its trailing slashes.
std::string baseUrl(const Poco::Util::AbstractConfiguration& c, const std::string& key) {
  std::string url = c.getString(key, "");
  try {
    Poco::URI uri(url);
    if ((uri.getScheme() == "http" || uri.getScheme() == "https") && !uri.getHost().empty() &&
        uri.getRawQuery().empty() && uri.getFragment().empty()) {
      while (!url.empty() && url.back() == '/') url.pop_back();
      return url;
    }
  } catch (const Poco::Exception&) {
  }
  throw std::runtime_error(key + ": '" + url + "' is not an http or https base URL");
}

std::string required(const Poco::Util::AbstractConfiguration& c, const std::string& key) {
  std::string value = c.getString(key, "");
  if (value.empty())
    throw std::runtime_error(key + " must be set for the twilio and pool providers");
  return value;
}

}  // namespace

const std::vector<sdk::ConfigKey>& twilioConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      {"sms.twilio.api_base", "https://api.twilio.com",
       "Twilio's REST API base URL (a Twilio-compatible server's, in tests)"},
      {"sms.twilio.account_sid", "", "the Twilio account SID (AC...)"},
      {"sms.twilio.auth_token", "", "the Twilio auth token: API password and webhook signing key",
       true},
      {"sms.twilio.timeout_seconds", "10",
       "how long one call to Twilio may take before it counts as failed"},
  };
  return keys;
}

TwilioConfig TwilioConfig::read(const Poco::Util::AbstractConfiguration& c) {
  TwilioConfig out;
  out.api_base = baseUrl(c, "sms.twilio.api_base");
  out.account_sid = required(c, "sms.twilio.account_sid");
  out.auth_token = required(c, "sms.twilio.auth_token");
  out.timeout_seconds = c.getInt("sms.twilio.timeout_seconds");
  if (out.timeout_seconds <= 0) {
    throw std::runtime_error("sms.twilio.timeout_seconds must be positive");
  }
  out.public_base_url = baseUrl(c, "public.base_url");
  return out;
}

}  // namespace svc::plugins::sms
