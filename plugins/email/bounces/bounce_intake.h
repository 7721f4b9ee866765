// What SMTP ingest does with delivery reports (RFC 3464) about the mail this server sent. A
// report arrives at a message's VERP address (the envelope sender the relay used) or, from a
// server that answers the From instead, at the sending inbox's own address. Either way it is
// matched to one outgoing message of that inbox only (by the token, or by the Message-ID it
// returns), so a report sent to one account's inbox never touches another's message. A matched
// report is consumed, not filed as mail: its failed recipients are recorded as bounces; delayed,
// delivered or relayed recipients change nothing. The report itself is not kept (what it says is,
// in the bounce). A report that matches nothing is ordinary mail: it is filed as any other.
#pragma once

#include "bounces/bounce_store.h"
#include "bounces/dsn.h"
#include "mail_store.h"

#include <Poco/Logger.h>

#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// @param report a delivery report. @param recipients every recipient of the message it is
/// about (to, cc and bcc). @param at when it came. @return a bounce for each failed recipient
/// among them: named by its Original-Recipient, else its Final-Recipient, else (forwarded mail,
/// which names the address it was forwarded to) the message's one recipient when it had one.
/// Recipients the message did not have are left out.
std::vector<Bounce> reportedBounces(const DeliveryReport& report,
                                    const std::vector<std::string>& recipients, std::int64_t at);

class BounceIntake {
 public:
  BounceIntake(MailStore& store, BounceStore& bounces, Poco::Logger& logger);

  /// @param address a VERP address (verpToken() finds its token).
  /// @return true when it names a message of this server, on that message's domain.
  bool acceptsVerpAddress(Poco::Data::Session& s, const std::string& address);
  /// Mail for a VERP address. @param report the message's delivery report, if it is one.
  /// @return the inbox to file it into as ordinary mail (the sending inbox: an auto-reply, or a
  /// report about another message); nullopt when it was consumed (or the address is unknown).
  std::optional<Inbox> atVerpAddress(Poco::Data::Session& tx, const std::string& address,
                                     const std::optional<DeliveryReport>& report);
  /// Mail for an inbox. @return true when it is a report about a message this inbox sent, and
  /// was consumed; false: file it.
  bool atInbox(Poco::Data::Session& tx, const Inbox& inbox,
               const std::optional<DeliveryReport>& report);

 private:
  void consume(Poco::Data::Session& tx, const MessageRow& message, const DeliveryReport& report,
               const char* via);

  MailStore& store_;
  BounceStore& bounces_;
  Poco::Logger& logger_;
};

}  // namespace svc::plugins::email
