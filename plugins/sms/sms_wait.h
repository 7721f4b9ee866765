// GET /api/messages/wait/: one call that returns the next incoming SMS (with its extracted_code)
// for an identity, holding the request (no thread) until it arrives or the timeout passes (204).
#pragma once

#include "sms_store.h"

#include <svc/sdk/routes.h>
#include <svc/sdk/waits.h>

#include <optional>
#include <string>

namespace svc::plugins::sms {

/// What a wait looks for besides its window.
struct SmsWanted {
  std::string from;  ///< digits the sender's number ends with (4 or more); empty: any
  std::string body;  ///< lower-case part of the text; empty: any
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
  /// @return the message an sms.received event names, as GET shows it, when it is wanted.
  std::optional<sdk::Response> offer(const sdk::Event& event, const sdk::WaitWindow& window,
                                     const SmsWanted& wanted);

  SmsStore& store_;
  struct Offered {
    SmsRow row;
    sdk::Response answer;  // written once for every waiter it answers
  };
  sdk::EventMemo<Offered> offered_;  // before waits_: its thread may use it until waits_ is gone
  sdk::HeldWaits waits_;
};

}  // namespace svc::plugins::sms
