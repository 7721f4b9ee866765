#include "twilio_provider.h"

namespace svc::plugins::sms {

namespace {

// How many refused purchases one acquire() makes before giving up with Twilio's last refusal
// (a number gone to a faster buyer does not count: with many buyers at once, most are).
constexpr int kPurchaseAttempts = 3;
// Twilio's error: the number asked for is no longer available.
constexpr const char* kNumberNotAvailable = "21422";

}  // namespace

TwilioProvider::TwilioProvider(TwilioConfig config, CarrierEvents& events, sdk::Database& db,
                               Poco::Logger* logger)
    : config_(std::move(config)),
      client_(config_),
      webhooks_(config_, events, db),
      logger_(logger) {}

std::string TwilioProvider::name() const {
  return "twilio";
}

std::optional<Number> TwilioProvider::acquire(
    const std::string& country, const std::function<bool(const std::string&)>& taken) {
  int attempts = 0;
  for (const auto& candidate : client_.availableNumbers(country)) {
    if (taken(candidate)) continue;
    try {
      return client_.buy(candidate, config_.public_base_url + kTwilioSmsPath,
                         config_.public_base_url + kTwilioVoicePath);
    } catch (const TwilioApiError& e) {
      if (e.code() == kNumberNotAvailable) continue;
      if (++attempts == kPurchaseAttempts) throw;
    }
  }
  return std::nullopt;
}

void TwilioProvider::release(const Number& number) {
  if (number.ref.empty()) return;
  try {
    client_.release(number.ref);
  } catch (const ProviderError& e) {
    if (logger_) {
      logger_->error("Twilio number " + number.e164 + " (" + number.ref +
                     ") was not kept but could not be released: " + e.what());
    }
  }
}

Delivery TwilioProvider::send(const std::string& message_id, const std::string& from,
                              const std::string& to, const std::string& body) {
  Delivery delivery;
  try {
    // The callback names our id: Twilio's report can arrive before its answer gives us the sid.
    const SentMessage sent = client_.send(
        from, to, body,
        config_.public_base_url + kTwilioStatusPath + "?" + kTwilioMessageParam + "=" + message_id);
    delivery.ref = sent.sid;
    delivery.status = deliveryStatus(sent.status);
    if (delivery.status.empty()) delivery.status = "queued";
    if (delivery.status == "failed" || delivery.status == "undelivered") {
      delivery.error_code = sent.error_code;
      delivery.error_message =
          sent.error_message.empty() ? "Twilio failed the message at once." : sent.error_message;
    }
  } catch (const TwilioApiError& e) {
    delivery.status = "failed";
    delivery.error_code = e.code();
    delivery.error_message = e.what();
  } catch (const ProviderError& e) {
    delivery.status = "failed";
    delivery.error_message = e.what();
  }
  return delivery;
}

void TwilioProvider::registerRoutes(sdk::RouteRegistry& routes) {
  webhooks_.registerRoutes(routes);
}

}  // namespace svc::plugins::sms
