// How the sms plugin reaches a carrier: one interface, one implementation per `sms.provider`
// (loopback, twilio, pool). A provider acquires numbers and hands outgoing messages to its
// carrier; what the carrier reports back (inbound messages, delivery status, incoming calls)
// it passes to CarrierEvents, which the plugin's core implements (storage, events, voice).
#pragma once

#include <svc/sdk/routes.h>

#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

namespace svc::plugins::sms {

/// A number acquired from a carrier.
struct Number {
  std::string e164;  ///< `+15550100100`.
  std::string ref;   ///< The carrier's id for it (Twilio's `PN...` sid), or empty.
};

/// What a carrier said about an outgoing message.
struct Delivery {
  std::string status;      ///< queued, sent, delivered, failed or undelivered.
  std::string ref;         ///< The carrier's id for the message (Twilio's `SM...` sid), or empty.
  std::string error_code;  ///< The carrier's error code when failed/undelivered, else empty.
  std::string error_message;  ///< Its reason, in words, when failed/undelivered.
  /// In a report: our id for the message, when the carrier gives it back (a report may arrive
  /// before the answer that told us `ref`); else empty.
  std::string message_id = {};
};

/// An SMS a carrier delivered to one of this server's numbers.
struct InboundSms {
  std::string from, to;  ///< E.164.
  std::string body;      ///< UTF-8.
  std::string ref;       ///< The carrier's id (for deduplication), or empty.
};

/// A call a carrier reports to one of this server's numbers.
struct IncomingCall {
  std::string from, to;  ///< E.164 (from may be anything a carrier shows: `anonymous`).
  std::string ref;       ///< The carrier's call id, or empty.
};

/// What to do with an incoming call.
struct CallAnswer {
  std::string handoff_url;  ///< The identity's voice agent (`response_url`), or empty: decline.
};

/// A carrier or its transport failed (network error, timeout, an error answer).
class ProviderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What carriers report, implemented by the plugin's core. Called from request threads.
class CarrierEvents {
 public:
  virtual ~CarrierEvents();
  /// @return whether the number is one of this server's (held by an identity).
  virtual bool ownsNumber(const std::string& e164) = 0;
  /// Stores an inbound message for the identity holding `to` and publishes `sms.received`.
  /// @return false when nobody holds `to`, or the message (by ref) was stored already.
  virtual bool received(const InboundSms& sms) = 0;
  /// Applies a carrier's delivery report to the message it sent as `ref` (`sms.updated`).
  /// @return false when no message has that ref.
  virtual bool delivery(const Delivery& report) = 0;
  /// Records a call to one of this server's numbers (`call.received`) and decides its answer.
  virtual CallAnswer incomingCall(const IncomingCall& call) = 0;
};

/// One way to run SMS.
class SmsProvider {
 public:
  virtual ~SmsProvider();
  /// @return its name (`loopback`).
  virtual std::string name() const = 0;
  /// Acquires a number in a country for this server.
  /// @param country ISO 3166 alpha-2, upper-case. @param taken whether this server holds a
  /// number already (the store's answer). @return the number, or nullopt when none can be had
  /// in that country now. @throws ProviderError when the carrier failed.
  virtual std::optional<Number> acquire(const std::string& country,
                                        const std::function<bool(const std::string&)>& taken) = 0;
  /// @return the countries this provider can ever have numbers in (ISO 3166 alpha-2,
  /// upper-case), or nullopt when it cannot tell (a carrier's stock changes). A country outside
  /// the set is refused for good (400 naming country_code), not as a shortage that passes (503).
  virtual std::optional<std::set<std::string>> countries() const { return std::nullopt; }
  /// Gives back a number acquired but not kept (its identity's transaction rolled back).
  virtual void release(const Number& number) = 0;
  /// Hands one message to the carrier. Carrier errors and timeouts are a failed Delivery, never
  /// an exception. @param message_id our id (for the status callback). @return its status.
  virtual Delivery send(const std::string& message_id, const std::string& from,
                        const std::string& to, const std::string& body) = 0;
  /// Registers the routes the carrier calls (webhooks), if any.
  virtual void registerRoutes(sdk::RouteRegistry& routes) = 0;
};

}  // namespace svc::plugins::sms
