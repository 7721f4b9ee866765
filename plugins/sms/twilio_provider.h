// `sms.provider = twilio`: numbers bought from Twilio (AvailablePhoneNumbers, then
// IncomingPhoneNumbers with this server's webhooks), messages sent through its Messages resource
// with a status callback, and what Twilio reports taken in through TwilioWebhooks.
#pragma once

#include "provider.h"
#include "twilio_client.h"
#include "twilio_config.h"
#include "twilio_webhooks.h"

#include <svc/sdk/storage.h>

#include <Poco/Logger.h>

#include <functional>
#include <optional>
#include <string>

namespace svc::plugins::sms {

/// Twilio as the carrier. Thread-safe.
class TwilioProvider : public SmsProvider {
 public:
  /// @param config the values of the `sms.twilio.*` keys and public.base_url.
  /// @param events where Twilio's reports go; must outlive this.
  /// @param db holds the webhook requests seen (the table of ReplayGuard::migration(), which the
  /// plugin's migrations must include); must outlive this.
  /// @param logger where a number that could not be released is reported, or null.
  TwilioProvider(TwilioConfig config, CarrierEvents& events, sdk::Database& db,
                 Poco::Logger* logger = nullptr);

  std::string name() const override;
  /// Searches the country's local SMS numbers and buys the first this server does not hold
  /// (the next one when Twilio refuses a purchase: another buyer may have been faster; any
  /// number the search offered may be tried, but only three refusals for other reasons).
  std::optional<Number> acquire(const std::string& country,
                                const std::function<bool(const std::string&)>& taken) override;
  /// Releases the number at Twilio; a failure is logged, not thrown (it runs in a rollback).
  void release(const Number& number) override;
  Delivery send(const std::string& message_id, const std::string& from, const std::string& to,
                const std::string& body) override;
  void registerRoutes(sdk::RouteRegistry& routes) override;

 private:
  TwilioConfig config_;
  TwilioClient client_;
  TwilioWebhooks webhooks_;
  Poco::Logger* logger_;
};

}  // namespace svc::plugins::sms
