#include "pool_provider.h"

#include <Poco/String.h>
#include <Poco/StringTokenizer.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <utility>

namespace svc::plugins::sms {

namespace {

// Calling codes of one country each (and +1, NANP, taken as US: a Canadian or Caribbean number
// names its country). The longest matching code wins.
constexpr std::pair<const char*, const char*> kCallingCodes[] = {
    {"1", "US"},   {"7", "RU"},   {"20", "EG"},  {"27", "ZA"},  {"30", "GR"},  {"31", "NL"},
    {"32", "BE"},  {"33", "FR"},  {"34", "ES"},  {"36", "HU"},  {"39", "IT"},  {"40", "RO"},
    {"41", "CH"},  {"43", "AT"},  {"44", "GB"},  {"45", "DK"},  {"46", "SE"},  {"47", "NO"},
    {"48", "PL"},  {"49", "DE"},  {"52", "MX"},  {"54", "AR"},  {"55", "BR"},  {"56", "CL"},
    {"57", "CO"},  {"61", "AU"},  {"62", "ID"},  {"63", "PH"},  {"64", "NZ"},  {"65", "SG"},
    {"66", "TH"},  {"81", "JP"},  {"82", "KR"},  {"84", "VN"},  {"86", "CN"},  {"90", "TR"},
    {"91", "IN"},  {"351", "PT"}, {"352", "LU"}, {"353", "IE"}, {"354", "IS"}, {"358", "FI"},
    {"420", "CZ"}, {"421", "SK"}, {"852", "HK"}, {"886", "TW"}, {"971", "AE"}, {"972", "IL"},
};

bool isE164(const std::string& s) {
  return s.size() >= 8 && s.size() <= 16 && s[0] == '+' && s[1] != '0' &&
         std::all_of(s.begin() + 1, s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string countryOfCallingCode(const std::string& e164) {
  std::string best, country;
  for (const auto& [code, iso] : kCallingCodes) {
    const std::string prefix = std::string("+") + code;
    if (e164.compare(0, prefix.size(), prefix) == 0 && prefix.size() > best.size()) {
      best = prefix;
      country = iso;
    }
  }
  return country;
}

}  // namespace

const std::vector<sdk::ConfigKey>& poolConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      {"sms.pool.numbers", "",
       "comma list of E.164 numbers the operator owns (sms.provider = pool), each optionally "
       "preceded by its country: CA:+14165550100"},
  };
  return keys;
}

std::vector<PoolNumber> parsePoolNumbers(const std::string& list) {
  std::vector<PoolNumber> out;
  for (const auto& entry : Poco::StringTokenizer(
           list, ",", Poco::StringTokenizer::TOK_TRIM | Poco::StringTokenizer::TOK_IGNORE_EMPTY)) {
    PoolNumber number;
    const auto colon = entry.find(':');
    number.e164 = Poco::trim(colon == std::string::npos ? entry : entry.substr(colon + 1));
    number.country = colon == std::string::npos ? countryOfCallingCode(number.e164)
                                                : Poco::toUpper(Poco::trim(entry.substr(0, colon)));
    const auto fail = [&](const std::string& why) {
      return std::runtime_error("sms.pool.numbers: '" + entry + "' " + why);
    };
    if (!isE164(number.e164)) throw fail("is not an E.164 number (+ and 7 to 15 digits)");
    if (number.country.size() != 2 ||
        !std::isalpha(static_cast<unsigned char>(number.country[0])) ||
        !std::isalpha(static_cast<unsigned char>(number.country[1]))) {
      throw fail("needs its country before it (CC:+number): its calling code is not known");
    }
    const bool repeated = std::any_of(out.begin(), out.end(),
                                      [&](const PoolNumber& n) { return n.e164 == number.e164; });
    if (repeated) throw fail("is listed twice");
    out.push_back(std::move(number));
  }
  return out;
}

PoolProvider::PoolProvider(std::vector<PoolNumber> numbers, std::unique_ptr<SmsProvider> transport)
    : numbers_(std::move(numbers)), transport_(std::move(transport)) {}

std::string PoolProvider::name() const {
  return "pool";
}

std::optional<Number> PoolProvider::acquire(const std::string& country,
                                            const std::function<bool(const std::string&)>& taken) {
  for (const auto& number : numbers_) {
    if (number.country == country && !taken(number.e164)) return Number{number.e164, ""};
  }
  return std::nullopt;
}

std::optional<std::set<std::string>> PoolProvider::countries() const {
  std::set<std::string> out;
  for (const auto& number : numbers_) out.insert(number.country);
  return out;
}

void PoolProvider::release(const Number& /*number*/) {}

Delivery PoolProvider::send(const std::string& message_id, const std::string& from,
                            const std::string& to, const std::string& body) {
  return transport_->send(message_id, from, to, body);
}

void PoolProvider::registerRoutes(sdk::RouteRegistry& routes) {
  transport_->registerRoutes(routes);
}

}  // namespace svc::plugins::sms
