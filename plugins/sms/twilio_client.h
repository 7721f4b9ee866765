// Twilio's REST API (2010-04-01) as the twilio provider uses it: numbers available in a country,
// buying and releasing a number, sending a message. HTTP Basic auth with the account's SID and
// auth token, form-encoded requests, JSON answers, one connection per call with a time limit.
#pragma once

#include "provider.h"
#include "twilio_config.h"
#include "twilio_signature.h"

#include <Poco/JSON/Object.h>

#include <string>
#include <vector>

namespace svc::plugins::sms {

/// Twilio answered with an error (its JSON: `code`, `message`, `status`).
class TwilioApiError : public ProviderError {
 public:
  /// @param http_status the HTTP status. @param code Twilio's error code (`21211`), or empty.
  /// @param message Twilio's message.
  TwilioApiError(int http_status, std::string code, const std::string& message);
  /// @return the HTTP status of the answer.
  int httpStatus() const { return http_status_; }
  /// @return Twilio's error code, or empty when its answer named none.
  const std::string& code() const { return code_; }

 private:
  int http_status_;
  std::string code_;
};

/// A message Twilio accepted.
struct SentMessage {
  std::string sid;     ///< `SM...`.
  std::string status;  ///< Twilio's status: queued, accepted, sending, sent, failed...
  std::string error_code, error_message;  ///< When Twilio took it but failed it at once.
};

/// @param twilio_status a message status as Twilio names it (MessageStatus, or `status`).
/// @return ours: queued (queued, accepted, scheduled, sending), sent, delivered (or read),
/// undelivered, failed (or canceled); empty for a status that says nothing about an outgoing
/// message (receiving, received, anything unknown).
std::string deliveryStatus(const std::string& twilio_status);

/// One Twilio account's REST API. Thread-safe: it holds no connection between calls.
class TwilioClient {
 public:
  /// @param config api_base, account_sid, auth_token and timeout_seconds are used.
  explicit TwilioClient(TwilioConfig config);

  /// @param country ISO 3166 alpha-2. @return local numbers that can take SMS (E.164), as
  /// AvailablePhoneNumbers/{country}/Local answers them; empty when Twilio has none.
  /// @throws ProviderError (TwilioApiError for an error answer).
  std::vector<std::string> availableNumbers(const std::string& country);
  /// Buys a number and points its SMS and voice webhooks (POST) at this server.
  /// @return the number bought, with its `PN...` sid. @throws ProviderError.
  Number buy(const std::string& e164, const std::string& sms_url, const std::string& voice_url);
  /// Releases a number bought (IncomingPhoneNumbers/{sid}). @throws ProviderError.
  void release(const std::string& sid);
  /// Sends an SMS. @param status_callback where Twilio reports its delivery.
  /// @throws ProviderError (TwilioApiError when Twilio refused it).
  SentMessage send(const std::string& from, const std::string& to, const std::string& body,
                   const std::string& status_callback);

 private:
  struct Answer {
    int status = 0;
    Poco::JSON::Object::Ptr json;  ///< Null for an empty body.
  };
  // One call under the account's path (`Messages.json`), with a query or a form body.
  // @throws TwilioApiError for a status of 400 or more, ProviderError for anything else.
  Answer call(const std::string& method, const std::string& resource, const FormParams& query = {},
              const FormParams& form = {});

  TwilioConfig config_;
};

}  // namespace svc::plugins::sms
