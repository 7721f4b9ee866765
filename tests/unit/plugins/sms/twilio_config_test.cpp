// The twilio provider's configuration, read from the declared keys and public.base_url.
#include "twilio_config.h"

#include <Poco/AutoPtr.h>
#include <Poco/Util/MapConfiguration.h>

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

namespace svc::plugins::sms {
namespace {

TwilioConfig readWith(const std::map<std::string, std::string>& values) {
  Poco::AutoPtr<Poco::Util::MapConfiguration> c = new Poco::Util::MapConfiguration;
  for (const auto& key : twilioConfigKeys()) c->setString(key.key, key.default_value);
  c->setString("public.base_url", "http://127.0.0.1:8000");
  for (const auto& [k, v] : values) c->setString(k, v);
  return TwilioConfig::read(*c);
}

const std::map<std::string, std::string> kAccount = {{"sms.twilio.account_sid", "AC1"},
                                                     {"sms.twilio.auth_token", "tok"}};

TEST(TwilioConfig, TheDefaultsReachTwilioWithTheAccountGiven) {
  const TwilioConfig c = readWith(kAccount);
  EXPECT_EQ(c.api_base, "https://api.twilio.com");
  EXPECT_EQ(c.account_sid, "AC1");
  EXPECT_EQ(c.auth_token, "tok");
  EXPECT_EQ(c.timeout_seconds, 10);
  EXPECT_EQ(c.public_base_url, "http://127.0.0.1:8000");
  for (const auto& key : twilioConfigKeys()) {
    EXPECT_EQ(key.secret, key.key == "sms.twilio.auth_token") << key.key;
  }
}

TEST(TwilioConfig, BaseUrlsLoseTheirTrailingSlash) {
  auto values = kAccount;
  values["sms.twilio.api_base"] = "http://127.0.0.1:4010/";
  values["public.base_url"] = "https://svc.example/prefix/";
  const TwilioConfig c = readWith(values);
  EXPECT_EQ(c.api_base, "http://127.0.0.1:4010");
  EXPECT_EQ(c.public_base_url, "https://svc.example/prefix");
}

TEST(TwilioConfig, RefusesAMissingAccountOrUnusableValues) {
  EXPECT_THROW(readWith({}), std::runtime_error);
  EXPECT_THROW(readWith({{"sms.twilio.account_sid", "AC1"}}), std::runtime_error);
  EXPECT_THROW(readWith({{"sms.twilio.auth_token", "tok"}}), std::runtime_error);
  for (const auto& [key, value] :
       std::map<std::string, std::string>{{"sms.twilio.api_base", "ftp://api.twilio.com"},
                                          {"sms.twilio.api_base", "api.twilio.com"},
                                          {"sms.twilio.timeout_seconds", "0"},
                                          {"public.base_url", "https://svc.example/?x=1"}}) {
    auto values = kAccount;
    values[key] = value;
    EXPECT_THROW(readWith(values), std::runtime_error) << key << "=" << value;
  }
}

}  // namespace
}  // namespace svc::plugins::sms
