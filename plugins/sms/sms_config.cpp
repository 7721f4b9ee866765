#include "sms_config.h"

#include "phone_text.h"
#include "pool_provider.h"
#include "twilio_config.h"

#include <svc/sdk/addresses.h>

#include <Poco/NumberParser.h>
#include <Poco/String.h>
#include <Poco/StringTokenizer.h>

#include <stdexcept>

namespace svc::plugins::sms {

const std::vector<sdk::ConfigKey>& smsConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = [] {
    std::vector<sdk::ConfigKey> all = {
        {"sms.provider", "loopback",
         "how SMS reaches carriers: loopback (numbers of this server only), twilio or pool"},
        {"sms.loopback.numbers", "US:+12025550100-+12025550199",
         "the loopback provider's numbers: comma list of COUNTRY:FIRST-LAST ranges (fictional "
         "NANP 555-01XX numbers by default)"},
        {"sms.phones.per_account", "10",
         "phone numbers one account may hold (0: no limit): a shared range, or the operator's "
         "carrier bill, is not one account's to take"},
        {"sms.send.per_hour", "60", "messages an identity may send per hour"},
        {"sms.send.per_day", "500", "messages an identity may send per day"},
        {"sms.messages.exact_count", "10000",
         "message lists count matches exactly up to this many; beyond, count is a lower bound "
         "(count_is_exact: false)"},
    };
    // The providers' own keys, declared beside their code.
    for (const auto* more : {&twilioConfigKeys(), &poolConfigKeys()}) {
      all.insert(all.end(), more->begin(), more->end());
    }
    return all;
  }();
  return keys;
}

std::string NumberRange::at(std::uint64_t i) const {
  // Same length as first: the range never carries into another digit.
  std::string digits = std::to_string(std::stoull(first.substr(1)) + i);
  return "+" + std::string(first.size() - 1 - digits.size(), '0') + digits;
}

std::vector<NumberRange> parseNumberRanges(const std::string& text) {
  std::vector<NumberRange> out;
  for (const auto& item : Poco::StringTokenizer(
           text, ",", Poco::StringTokenizer::TOK_TRIM | Poco::StringTokenizer::TOK_IGNORE_EMPTY)) {
    const auto colon = item.find(':'),
               dash = item.find('-', colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos || dash == std::string::npos) {
      throw std::runtime_error("sms.loopback.numbers: '" + item + "' is not COUNTRY:FIRST-LAST");
    }
    NumberRange r;
    r.country = Poco::toUpper(item.substr(0, colon));
    auto first = sdk::normalizeE164(item.substr(colon + 1, dash - colon - 1));
    auto last = sdk::normalizeE164(item.substr(dash + 1));
    if (!isCountryCode(r.country) || !first || !last || first->size() != last->size() ||
        *first > *last) {
      throw std::runtime_error("sms.loopback.numbers: '" + item +
                               "' needs a two-letter country and two E.164 numbers of the same "
                               "length, the first not after the last");
    }
    r.first = *first;
    r.size = std::stoull(last->substr(1)) - std::stoull(first->substr(1)) + 1;
    out.push_back(r);
  }
  return out;
}

SmsConfig SmsConfig::read(const Poco::Util::AbstractConfiguration& c) {
  SmsConfig out;
  out.provider = Poco::toLower(Poco::trim(c.getString("sms.provider")));
  if (out.provider != "loopback" && out.provider != "twilio" && out.provider != "pool") {
    throw std::runtime_error("sms.provider must be loopback, twilio or pool");
  }
  out.loopback_numbers = parseNumberRanges(c.getString("sms.loopback.numbers"));
  out.phones_per_account = c.getInt("sms.phones.per_account");
  out.per_hour = c.getInt("sms.send.per_hour");
  out.per_day = c.getInt("sms.send.per_day");
  out.exact_count_limit = c.getInt("sms.messages.exact_count");
  return out;
}

}  // namespace svc::plugins::sms
