// GET /api/email-messages/wait/: one call that returns the next incoming message (with its
// extracted_code) for an identity, holding the request (no thread) until it arrives or the
// timeout passes (204).
#pragma once

#include "mail_store.h"

#include <svc/sdk/routes.h>
#include <svc/sdk/storage.h>
#include <svc/sdk/waits.h>

#include <cstdint>
#include <optional>
#include <string>

namespace svc::plugins::email {

/// What a wait looks for.
struct MessageWanted {
  std::string account, identity;
  std::int64_t after_us = 0;        ///< created strictly after
  std::string from, subject, body;  ///< lower-case substrings; empty: any
};

/// @return whether the message (with its bodies loaded when wanted.body is set) is wanted.
bool isWanted(const MessageRow& m, const MessageWanted& wanted);

class MessageWait {
 public:
  MessageWait(sdk::Database& db, MailStore& store, sdk::EventBus& events);
  void start() { waits_.start(); }
  void stop() { waits_.stop(); }
  /// @return the route.
  sdk::Route route();
  sdk::Response wait(sdk::Request& r);

 private:
  /// @return the oldest wanted message, as GET shows it.
  std::optional<sdk::Response> find(const MessageWanted& wanted);

  sdk::Database& db_;
  MailStore& store_;
  sdk::HeldWaits waits_;
};

}  // namespace svc::plugins::email
