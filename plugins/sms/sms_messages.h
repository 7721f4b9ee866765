// SMS messages and conversations: sending (/api/messages/send/, with the per-identity limits),
// the message list and one message (read state), the conversation inbox (/api/sms-inbox/), and
// the operator's inject (an inbound message as if a carrier delivered it).
#pragma once

#include "carrier_events.h"
#include "provider.h"
#include "sms_config.h"
#include "sms_store.h"

#include <svc/sdk/http.h>

#include <optional>
#include <string>

namespace svc::plugins::sms {

/// @param id a path's conversation id. @return {phone id, other number} when it has the shape
/// `{phone_id}_{number}`, else nullopt.
std::optional<std::pair<std::string, std::string>> parseConversationId(const std::string& id);

class SmsMessages {
 public:
  SmsMessages(SmsStore& store, SmsProvider& provider, StoredCarrierEvents& carrier,
              const SmsConfig& config)
      : store_(store), provider_(provider), carrier_(carrier), config_(config) {}

  /// POST /api/messages/send/: 201 with the message as the carrier left it.
  sdk::Response send(sdk::Request& r);
  /// GET /api/messages/: newest first.
  sdk::Response list(sdk::Request& r);
  /// GET, or PUT/PATCH of is_read.
  sdk::Response one(sdk::Request& r);
  /// GET /api/sms-inbox/: conversations, newest first.
  sdk::Response inbox(sdk::Request& r);
  /// GET /api/sms-inbox/{id}/: a conversation's messages, oldest first.
  sdk::Response conversation(sdk::Request& r);
  /// POST /admin/sms/inject/ (operator): `{to, from, body}` delivered as inbound.
  sdk::Response inject(sdk::Request& r);
  /// Marks `failed` the outgoing messages stored but never handed to a carrier (svcd stopped
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
