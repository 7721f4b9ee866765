// The loopback provider (the default): numbers from configured ranges of fictional numbers, and
// messages delivered between this server's numbers at once. Nothing leaves the machine: a message
// to any other number is `undelivered`, saying so.
#pragma once

#include "provider.h"
#include "sms_config.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace svc::plugins::sms {

class LoopbackProvider : public SmsProvider {
 public:
  LoopbackProvider(std::vector<NumberRange> ranges, CarrierEvents& events);
  std::string name() const override { return "loopback"; }
  /// The first number of the country's ranges that is not taken.
  std::optional<Number> acquire(const std::string& country,
                                const std::function<bool(const std::string&)>& taken) override;
  /// The countries of the configured ranges.
  std::optional<std::set<std::string>> countries() const override;
  void release(const Number&) override {}
  /// Delivers to a number of this server (`delivered`), else `undelivered`.
  Delivery send(const std::string& message_id, const std::string& from, const std::string& to,
                const std::string& body) override;
  void registerRoutes(sdk::RouteRegistry&) override {}

 private:
  std::vector<NumberRange> ranges_;
  CarrierEvents& events_;
};

}  // namespace svc::plugins::sms
