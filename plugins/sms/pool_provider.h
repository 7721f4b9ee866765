// `sms.provider = pool`: the operator's own numbers (`sms.pool.numbers`), already set up at the
// carrier to call this server's webhooks, handed out in the order listed; messages go out and
// come in through a transport provider (the twilio provider), which this one wraps.
#pragma once

#include "provider.h"

#include <svc/sdk/plugin.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace svc::plugins::sms {

/// @return the `sms.pool.*` keys, each with its default and one line of description.
const std::vector<sdk::ConfigKey>& poolConfigKeys();

/// One number of the pool.
struct PoolNumber {
  std::string e164;     ///< `+15551230001`.
  std::string country;  ///< ISO 3166 alpha-2, upper-case.
};

/// @param list `sms.pool.numbers`: a comma list of E.164 numbers, each optionally preceded by
/// its country and a colon (`CA:+14165550100`). Without one, the country is that of the number's
/// calling code in a small table (+1 is US, +44 GB, +49 DE, ...); a number of a code that the
/// table lacks must name its country. @return the numbers, in order, once each.
/// @throws std::runtime_error naming the key and the entry that is not usable.
std::vector<PoolNumber> parsePoolNumbers(const std::string& list);

/// The pool: numbers from the list, everything else through the transport.
class PoolProvider : public SmsProvider {
 public:
  /// @param numbers the pool, in the order handed out. @param transport the provider that
  /// sends and takes the webhooks (a TwilioProvider); its acquire() and release() are not used.
  PoolProvider(std::vector<PoolNumber> numbers, std::unique_ptr<SmsProvider> transport);

  std::string name() const override;
  /// @return the first number of the country that this server does not hold yet.
  std::optional<Number> acquire(const std::string& country,
                                const std::function<bool(const std::string&)>& taken) override;
  /// The countries of the pool's numbers.
  std::optional<std::set<std::string>> countries() const override;
  /// Does nothing: a pool number stays the operator's, free for the next identity.
  void release(const Number& number) override;
  Delivery send(const std::string& message_id, const std::string& from, const std::string& to,
                const std::string& body) override;
  void registerRoutes(sdk::RouteRegistry& routes) override;

 private:
  std::vector<PoolNumber> numbers_;
  std::unique_ptr<SmsProvider> transport_;
};

}  // namespace svc::plugins::sms
