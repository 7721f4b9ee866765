// Bounces of the mail this server sent: the token each relayed recipient's envelope sender
// carries (verp.h), and per recipient that will not get a message, why. A token is made per
// recipient, not per message: every recipient sees its own as the Return-Path, so a recipient
// can report only on itself there, never bounce another recipient of the same message. Recording a
// bounce marks the message `bounced` (whichever recipients did get it) and publishes
// `email.bounced`; the message's views show the recipients as its `bounce` object. Tables:
// email_bounce_tokens and email_bounces (mail_store_schema.cpp, migration 6).
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

/// A relayed message as its token rows know it.
struct Relayed {
  MessageRow message;
  std::vector<std::string> recipients;  ///< Those a report may bounce (lower case): by a token,
                                        ///< its one recipient; by Message-ID, every recipient
                                        ///< the relay was given (local delivery cannot bounce).
};

/// One SMTP transaction of a relayed message: its envelope sender and recipients.
struct Envelope {
  std::string sender;
  std::vector<std::string> recipients;
};

/// @param sender the outbox row's sender. @param recipients those to send to now. @param token_of
/// each recipient's token, by its lower-case address. @return the recipients grouped by envelope
/// sender, in the order they come: each recipient's VERP address, or sender when it has no token.
std::vector<Envelope> envelopesByToken(const std::string& sender,
                                       const std::vector<std::string>& recipients,
                                       const std::map<std::string, std::string>& token_of);

class BounceStore {
 public:
  BounceStore(MailStore& store, sdk::EventBus& events);

  /// Makes and stores a token for each recipient a message is about to be relayed to, in the
  /// caller's transaction. Kept with VERP off too: together they say whom a report at the
  /// sender's own address may name.
  void makeTokens(Poco::Data::Session& tx, const std::string& message_id,
                  const std::vector<std::string>& relayed_to);
  /// @param sender the outbox row's sender: the sending inbox's address (or, in rows queued
  /// when a message had one token, its VERP address). @param recipients those to send to now.
  /// @param verp email.relay.verp; false: the plain sender (relays that require the envelope
  /// sender to be the logged-in mailbox). @return the transactions to send them in: with VERP,
  /// recipients grouped by envelope sender (each its own VERP address, so one transaction each);
  /// without, one from sender to all.
  std::vector<Envelope> envelopes(Poco::Data::Session& s, const std::string& message_id,
                                  const std::string& sender,
                                  const std::vector<std::string>& recipients, bool verp);
  /// @param token a token from a VERP address. @param now_us now. @return the message it was
  /// made for, with the one recipient it was made for, unless older than kTokenLifetimeUs.
  std::optional<Relayed> byToken(Poco::Data::Session& s, const std::string& token,
                                 std::int64_t now_us);
  /// @param inbox_id an inbox. @param message_id an RFC 5322 Message-ID (`<...>`).
  /// @return the relayed outgoing message of that inbox with that Message-ID, with every
  /// recipient it was relayed to, unless its tokens are older than kTokenLifetimeUs (a message
  /// never relayed has none).
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
