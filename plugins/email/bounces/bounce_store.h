// Bounces of the mail this server sent: the token each relayed message's envelope sender
// carries (verp.h), and per recipient that will not get a message, why. Recording a bounce marks
// the message `bounced` (whichever recipients did get it) and publishes `email.bounced`; the
// message's views show the recipients as its `bounce` object. Tables: email_bounce_tokens and
// email_bounces (mail_store_schema.cpp, migration 6).
#pragma once

#include "mail_store.h"

#include <svc/sdk/events.h>

#include <Poco/JSON/Object.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// One recipient that will not get a message.
struct Bounce {
  std::string recipient;  ///< Lower case.
  std::string status;     ///< RFC 3463 code, `5.1.1`.
  std::string reason;     ///< The remote server's words (the DSN's Diagnostic-Code or the
                          ///< relay's answer), else what the status code means.
  std::string source;     ///< `relay` (our relay refused it) or `dsn` (a report came back).
  std::int64_t bounced_us = 0;
};

/// A relayed message as its token row knows it.
struct Relayed {
  MessageRow message;
  std::vector<std::string> recipients;  ///< Those the relay was given (lower case): only they
                                        ///< can bounce; local delivery cannot.
};

class BounceStore {
 public:
  BounceStore(MailStore& store, sdk::EventBus& events);

  /// Makes and stores the token of a message about to be relayed, with the recipients it is
  /// relayed to, in the caller's transaction. @param verp false: the plain sender (relays that
  /// require the envelope sender to be the logged-in mailbox). @return its envelope sender: the
  /// VERP address on sender_address's domain, or sender_address (verp false, or too long).
  std::string envelopeSender(Poco::Data::Session& tx, const std::string& message_id,
                             const std::string& sender_address,
                             const std::vector<std::string>& relayed_to, bool verp);
  /// @param token a token from a VERP address. @param now_us now. @return the message it was
  /// made for, unless older than kTokenLifetimeUs.
  std::optional<Relayed> byToken(Poco::Data::Session& s, const std::string& token,
                                 std::int64_t now_us);
  /// @param inbox_id an inbox. @param message_id an RFC 5322 Message-ID (`<...>`).
  /// @return the relayed outgoing message of that inbox with that Message-ID, unless its token
  /// is older than kTokenLifetimeUs (a message never relayed has none).
  std::optional<Relayed> byMessageId(Poco::Data::Session& s, const std::string& inbox_id,
                                     const std::string& message_id, std::int64_t now_us);
  /// Records bounces of a message in the caller's transaction: a recipient already recorded
  /// keeps its first bounce (also when another process records it at the same moment). When
  /// any is new, the message becomes `bounced` and `email.bounced` is published. @return the
  /// recipients newly recorded.
  std::vector<std::string> record(Poco::Data::Session& tx, const std::string& message_id,
                                  const std::vector<Bounce>& bounces);
  /// Deletes the tokens older than kTokenLifetimeUs. @return how many.
  std::size_t prune(std::int64_t now_us);

  /// @return the recipients of a message recorded as bounced, first bounced first.
  static std::vector<Bounce> bounces(Poco::Data::Session& s, const std::string& message_id);
  /// @return a message's `bounce` object: {recipients: [{recipient, status, reason, source,
  /// bounced_dt}], bounced_dt (the first)}; null when none of its recipients bounced.
  static Poco::Dynamic::Var json(Poco::Data::Session& s, const std::string& message_id);
  /// The `bounce` objects of a page of messages, read in one query. @return by message id; the
  /// messages without bounces are absent.
  static std::map<std::string, Poco::Dynamic::Var> json(Poco::Data::Session& s,
                                                        const std::vector<std::string>& ids);

 private:
  MailStore& store_;
  sdk::EventBus& events_;
};

}  // namespace svc::plugins::email
