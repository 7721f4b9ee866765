// GET /api/email-messages/wait/: one call that returns the next incoming message (with its
// extracted_code) for an identity, holding the request (no thread) until it arrives or the
// timeout passes (204).
#pragma once

#include "mail_store.h"

#include <svc/sdk/routes.h>
#include <svc/sdk/storage.h>
#include <svc/sdk/waits.h>

#include <optional>
#include <string>

namespace svc::plugins::email {

/// What a wait looks for besides its window.
struct MessageWanted {
  std::string from;            ///< lower-case sender address or domain; empty: any
  std::string subject, body;   ///< lower-case substrings; empty: any
  bool authenticated = false;  ///< only mail whose verdict is pass
};

/// @return whether the sender's address is `from` itself or, when `from` is a domain (with or
/// without a leading `@`), at that domain or one below it. Case-insensitive.
bool senderMatches(const std::string& from_email, const std::string& from);
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
  /// @return the oldest wanted message of the window, as GET shows it.
  std::optional<sdk::Response> find(const sdk::WaitWindow& window, const MessageWanted& wanted);
  /// @return the message an email.received event names, as GET shows it, when it is wanted.
  std::optional<sdk::Response> offer(const sdk::Event& event, const sdk::WaitWindow& window,
                                     const MessageWanted& wanted);

  struct Offered {
    MessageRow row;
    sdk::Response answer;  // written once for every waiter it answers
  };

  sdk::Database& db_;
  MailStore& store_;
  sdk::EventMemo<Offered> offered_;  // before waits_: its thread may use it until waits_ is gone
  sdk::HeldWaits waits_;
};

}  // namespace svc::plugins::email
