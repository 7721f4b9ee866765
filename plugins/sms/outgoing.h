// Messages that leave: sending (/api/messages/send/, with the per-identity limits), the
// operator's inject (an inbound message as a carrier would deliver it), and what a stop left
// between storing a message and the carrier's answer.
#pragma once

#include "carrier_events.h"
#include "provider.h"
#include "sms_config.h"
#include "sms_store.h"

#include <svc/sdk/http.h>

#include <cstdint>

namespace svc::plugins::sms {

class SmsOutgoing {
 public:
  SmsOutgoing(SmsStore& store, SmsProvider& provider, StoredCarrierEvents& carrier,
              const SmsConfig& config)
      : store_(store), provider_(provider), carrier_(carrier), config_(config) {}

  /// POST /api/messages/send/: 201 with the message as the carrier left it.
  sdk::Response send(sdk::Request& r);
  /// POST /admin/sms/inject/ (operator): `{to, from, body}` delivered as inbound.
  sdk::Response inject(sdk::Request& r);
  /// Marks `failed` the outgoing messages stored but never answered by a carrier (svcd stopped
  /// between the two) that are older than older_than_us: whether they left is unknown, so the
  /// agent is told rather than left waiting on `queued`. @return how many.
  int failUnsent(std::int64_t older_than_us);

 private:
  void checkSendingLimit(Poco::Data::Session& s, const std::string& identity);

  SmsStore& store_;
  SmsProvider& provider_;
  StoredCarrierEvents& carrier_;
  const SmsConfig& config_;
};

}  // namespace svc::plugins::sms
