// The sms plugin's configuration: its keys as declared (defaults live only there) and their
// parsed values.
#pragma once

#include <svc/sdk/plugin.h>

#include <Poco/Util/AbstractConfiguration.h>

#include <cstdint>
#include <string>
#include <vector>

namespace svc::plugins::sms {

/// @return the keys the plugin reads, each with its default and one line of description.
const std::vector<sdk::ConfigKey>& smsConfigKeys();

/// A range of numbers of one country, for the loopback provider.
struct NumberRange {
  std::string country;     ///< ISO 3166 alpha-2, upper-case.
  std::string first;       ///< E.164.
  std::uint64_t size = 0;  ///< How many numbers, first included.
  /// @return the i-th number of the range (i < size).
  std::string at(std::uint64_t i) const;
};

/// @param text `US:+12025550100-+12025550199,GB:+447700900000-+447700900999`.
/// @return the ranges. @throws std::runtime_error naming what is wrong.
std::vector<NumberRange> parseNumberRanges(const std::string& text);

struct SmsConfig {
  std::string provider;  ///< loopback, twilio or pool.
  std::vector<NumberRange> loopback_numbers;
  int phones_per_account = 0;     ///< Numbers one account may hold (0: no limit).
  int per_hour = 0, per_day = 0;  ///< Sending limits per identity (0: none).
  long exact_count_limit = 0;     ///< Message lists count exactly up to this many.
  /// @param config the plugin's configuration, where every key of smsConfigKeys() is set.
  /// @throws std::runtime_error naming the key when a value is not usable.
  static SmsConfig read(const Poco::Util::AbstractConfiguration& config);
};

}  // namespace svc::plugins::sms
