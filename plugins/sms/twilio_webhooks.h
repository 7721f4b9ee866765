// The routes Twilio calls on this server, under /api/sms/webhooks/twilio/: an inbound SMS (sms/),
// a message's delivery report (status/) and an incoming call (voice/). Each is public but must
// carry a valid X-Twilio-Signature over the public URL it was sent to and its form parameters,
// and must not be a request seen before: otherwise 403 and nothing reaches CarrierEvents.
#pragma once

#include "provider.h"
#include "replay_guard.h"
#include "twilio_config.h"
#include "twilio_signature.h"

#include <svc/sdk/routes.h>

#include <functional>
#include <string>

namespace svc::plugins::sms {

/// Where the webhooks live below public.base_url.
inline constexpr const char* kTwilioSmsPath = "/api/sms/webhooks/twilio/sms/";
inline constexpr const char* kTwilioStatusPath = "/api/sms/webhooks/twilio/status/";
inline constexpr const char* kTwilioVoicePath = "/api/sms/webhooks/twilio/voice/";
/// The status callback URL's query parameter naming our message id (a UUID).
inline constexpr const char* kTwilioMessageParam = "message";

/// What a call hears when its number's identity takes no calls.
inline constexpr const char* kDeclinedCallMessage =
    "This number does not take calls. Please send a text message instead. Goodbye.";

/// Twilio's three webhooks, verified, turned into CarrierEvents calls.
class TwilioWebhooks {
 public:
  /// @param config auth_token (the signing key) and public_base_url are used.
  /// @param events where verified reports go; must outlive this.
  /// @param db holds the requests seen (ReplayGuard's table); must outlive this.
  TwilioWebhooks(const TwilioConfig& config, CarrierEvents& events, sdk::Database& db);

  /// Registers the three POST routes (no credential; a form body).
  void registerRoutes(sdk::RouteRegistry& routes);

  /// The handlers (public for tests). @throws sdk::HttpError 403 `permission_denied` for a
  /// request unsigned, badly signed or replayed; 400 for a signed one that lacks a field.
  sdk::Response sms(const sdk::Request& request);
  sdk::Response status(const sdk::Request& request);
  sdk::Response voice(const sdk::Request& request);

 private:
  // Verifies the request and runs handle with its parameters; a replay is refused, and a
  // request whose handling throws is forgotten (Twilio retries it).
  sdk::Response verified(const sdk::Request& request,
                         const std::function<sdk::Response(const FormParams&)>& handle);

  std::string auth_token_;
  std::string public_base_url_;
  CarrierEvents& events_;
  ReplayGuard seen_;
};

}  // namespace svc::plugins::sms
