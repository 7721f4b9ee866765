// Reading SMS: the message list and one message (with its read state), and the conversation
// inbox (/api/sms-inbox/) with one conversation in full.
#pragma once

#include "sms_config.h"
#include "sms_store.h"

#include <svc/sdk/http.h>

#include <optional>
#include <string>
#include <utility>

namespace svc::plugins::sms {

/// @param id a path's conversation id. @return {phone id, other number} when it has the shape
/// `{phone_id}_{number}`, else nullopt.
std::optional<std::pair<std::string, std::string>> parseConversationId(const std::string& id);

class SmsMessages {
 public:
  SmsMessages(SmsStore& store, const SmsConfig& config) : store_(store), config_(config) {}

  /// GET /api/messages/: newest first (oldest first after a created_after cursor).
  sdk::Response list(sdk::Request& r);
  /// GET, or PUT/PATCH of is_read.
  sdk::Response one(sdk::Request& r);
  /// GET /api/sms-inbox/: conversations, newest first.
  sdk::Response inbox(sdk::Request& r);
  /// GET /api/sms-inbox/{id}/: a conversation's messages, oldest first.
  sdk::Response conversation(sdk::Request& r);

 private:
  SmsStore& store_;
  const SmsConfig& config_;
};

}  // namespace svc::plugins::sms
