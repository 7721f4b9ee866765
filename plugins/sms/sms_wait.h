// GET /api/messages/wait/: one call that returns the next incoming SMS (with its extracted_code)
// for an identity, holding the request (no thread) until it arrives or the timeout passes (204).
#pragma once

#include "sms_store.h"

#include <svc/sdk/routes.h>
#include <svc/sdk/waits.h>

#include <cstdint>
#include <optional>
#include <string>

namespace svc::plugins::sms {

/// What a wait looks for.
struct SmsWanted {
  std::string account, identity;
  std::int64_t after_us = 0;  ///< created strictly after
  std::string from;           ///< digits of the sender's number it contains; empty: any
  std::string body;           ///< lower-case part of the text; empty: any
};

/// @return whether the message is wanted.
bool isWanted(const SmsRow& m, const SmsWanted& wanted);

class SmsWait {
 public:
  SmsWait(SmsStore& store, sdk::EventBus& events);
  void start() { waits_.start(); }
  void stop() { waits_.stop(); }
  /// @return the route.
  sdk::Route route();
  sdk::Response wait(sdk::Request& r);

 private:
  /// @return the oldest wanted message, as GET shows it.
  std::optional<sdk::Response> find(const SmsWanted& wanted);

  SmsStore& store_;
  sdk::HeldWaits waits_;
};

}  // namespace svc::plugins::sms
