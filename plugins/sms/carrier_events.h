// What carriers report, stored: inbound messages (deduplicated by the carrier's id), delivery
// reports moving a sent message's status, and calls (recorded, and answered by the identity's
// voice agent when it has one enabled).
#pragma once

#include "provider.h"
#include "sms_store.h"

#include <svc/sdk/identity_extensions.h>

#include <optional>

namespace svc::plugins::sms {

class StoredCarrierEvents : public CarrierEvents {
 public:
  /// @param voice the identities' voice-agent settings, or nullptr (calls are then declined).
  StoredCarrierEvents(SmsStore& store, sdk::VoiceAgentDirectory* voice)
      : store_(store), voice_(voice) {}

  bool ownsNumber(const std::string& e164) override;
  bool received(const InboundSms& sms) override { return receive(sms).has_value(); }
  bool delivery(const Delivery& report) override;
  CallAnswer incomingCall(const IncomingCall& call) override;

  /// Stores an inbound message. @return it, or nullopt when nobody holds `to` or the carrier's
  /// id was stored already.
  std::optional<SmsRow> receive(const InboundSms& sms);

 private:
  SmsStore& store_;
  sdk::VoiceAgentDirectory* voice_;
};

}  // namespace svc::plugins::sms
