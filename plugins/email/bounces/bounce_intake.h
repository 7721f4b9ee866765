// What SMTP ingest does with delivery reports (RFC 3464) about the mail this server sent. A
// report arrives at a message's VERP address (the envelope sender the relay used) or, from a
// server that answers the From instead, at the sending inbox's own address. Either way it is
// matched to one outgoing message of that inbox only (by the token, or by the Message-ID it
// returns), so a report sent to one account's inbox never touches another's message. A matched
// report is consumed, not filed as mail, when it names a recipient the message was relayed to
// (local delivery cannot bounce): its failed recipients are recorded as bounces; delayed,
// delivered or relayed recipients change nothing. The report itself is not kept (what it says is,
// in the bounce). A report that matches nothing is ordinary mail: it is filed as any other. At
// the inbox's own address only a report from the null reverse-path counts.
#pragma once

#include "bounces/bounce_store.h"
#include "bounces/dsn.h"
#include "mail_store.h"

#include <Poco/Logger.h>

#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// @param report a delivery report. @param relayed the recipients the message was relayed to.
/// @param at when it came. @param only_recipient_fallback whether a failed recipient the report
/// names by another address (forwarded mail) is the message's one relayed recipient, when it had
/// one (at the VERP address only, which only those it was relayed to know), unless that address
/// is in not_relayed (the message's recipients delivered here, which cannot bounce).
/// @return a bounce for each failed recipient among them, named by its Original-Recipient, else
/// its Final-Recipient. Recipients the message was not relayed to are left out.
std::vector<Bounce> reportedBounces(const DeliveryReport& report,
                                    const std::vector<std::string>& relayed, std::int64_t at,
                                    bool only_recipient_fallback,
                                    const std::vector<std::string>& not_relayed = {});
/// @return true when the report names a recipient the message was relayed to (any action).
bool namesRelayedRecipient(const DeliveryReport& report, const std::vector<std::string>& relayed);

class BounceIntake {
 public:
  /// @param verp whether relayed mail leaves from VERP addresses (`email.relay.verp`): then a
  /// report of ours comes to the VERP address of the one recipient it may bounce, and one at the
  /// inbox's own address is ordinary mail (a recipient who has the message and its Message-ID
  /// could otherwise bounce the others).
  BounceIntake(MailStore& store, BounceStore& bounces, Poco::Logger& logger, bool verp);

  /// @param address a VERP address (verpToken() finds its token).
  /// @return true when it names a message of this server, on that message's domain, made in the
  /// last 30 days.
  bool acceptsVerpAddress(Poco::Data::Session& s, const std::string& address);
  /// @return the inbox that sent the message a VERP address names (as acceptsVerpAddress finds
  /// it): mail there that is not consumed is that inbox's, judged by its sender rules.
  std::optional<Inbox> verpInbox(Poco::Data::Session& s, const std::string& address);
  /// Mail for a VERP address. @param report the message's delivery report, if it is one.
  /// @return the inbox to file it into as ordinary mail (the sending inbox: an auto-reply, or a
  /// report about another message or naming no relayed recipient); nullopt when it was consumed
  /// (or the address is unknown).
  std::optional<Inbox> atVerpAddress(Poco::Data::Session& tx, const std::string& address,
                                     const std::optional<DeliveryReport>& report);
  /// Mail for an inbox. @param null_sender whether it came from `MAIL FROM:<>`, as reports do.
  /// @return true when it is a report about a message this inbox relayed, naming a recipient it
  /// was relayed to, and was consumed (never with VERP on); false: file it.
  bool atInbox(Poco::Data::Session& tx, const Inbox& inbox,
               const std::optional<DeliveryReport>& report, bool null_sender);

 private:
  /// Records what the report says. @return false when it names no relayed recipient (not
  /// consumed: file it).
  bool consume(Poco::Data::Session& tx, const Relayed& relayed, const DeliveryReport& report,
               bool only_recipient_fallback, const char* via);

  MailStore& store_;
  BounceStore& bounces_;
  Poco::Logger& logger_;
  bool verp_;
};

}  // namespace svc::plugins::email
