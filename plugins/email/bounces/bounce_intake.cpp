#include "bounces/bounce_intake.h"

#include "bounces/verp.h"
#include "domains.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

#include <algorithm>

namespace svc::plugins::email {

std::vector<Bounce> reportedBounces(const DeliveryReport& report,
                                    const std::vector<std::string>& recipients, std::int64_t at) {
  std::vector<std::string> ours;
  for (const auto& r : recipients) {
    std::string l = Poco::toLower(r);
    if (std::find(ours.begin(), ours.end(), l) == ours.end()) ours.push_back(l);
  }
  auto isOurs = [&](const std::string& a) {
    return !a.empty() && std::find(ours.begin(), ours.end(), a) != ours.end();
  };
  std::vector<Bounce> out;
  for (const auto& r : report.recipients) {
    if (!r.failed()) continue;
    std::string who = isOurs(r.original_recipient) ? r.original_recipient
                      : isOurs(r.final_recipient)  ? r.final_recipient
                      : ours.size() == 1           ? ours.front()
                                                   : std::string();
    if (who.empty()) continue;
    if (std::any_of(out.begin(), out.end(), [&](const Bounce& b) { return b.recipient == who; }))
      continue;
    Bounce b;
    b.recipient = who;
    b.status = r.status.empty() ? "5.0.0" : r.status;
    b.reason = r.diagnostic;
    if (b.reason.empty()) {
      const std::string meaning = statusMeaning(b.status);
      b.reason = meaning.empty() ? "the message could not be delivered" : meaning;
    }
    if (!r.final_recipient.empty() && r.final_recipient != who) {
      b.reason += " (as " + r.final_recipient + ")";
    }
    b.source = "dsn";
    b.bounced_us = at;
    out.push_back(std::move(b));
  }
  return out;
}

BounceIntake::BounceIntake(MailStore& store, BounceStore& bounces, Poco::Logger& logger)
    : store_(store), bounces_(bounces), logger_(logger) {}

bool BounceIntake::acceptsVerpAddress(Poco::Data::Session& s, const std::string& address) {
  auto token = verpToken(address);
  if (!token) return false;
  auto message = bounces_.messageOfToken(s, *token);
  if (!message) return false;
  auto inbox = store_.inboxById(s, message->inbox_id);
  return inbox && domainOf(inbox->address) == Poco::toLower(domainOf(address));
}

std::optional<Inbox> BounceIntake::atVerpAddress(Poco::Data::Session& tx,
                                                 const std::string& address,
                                                 const std::optional<DeliveryReport>& report) {
  auto token = verpToken(address);
  if (!token) return std::nullopt;
  auto message = bounces_.messageOfToken(tx, *token);
  if (!message) return std::nullopt;
  auto inbox = store_.inboxById(tx, message->inbox_id);
  if (!inbox || domainOf(inbox->address) != Poco::toLower(domainOf(address))) return std::nullopt;
  // A report that returns another message's Message-ID is not about this one.
  if (report &&
      (report->original_message_id.empty() || report->original_message_id == message->message_id)) {
    consume(tx, *message, *report, "its VERP address");
    return std::nullopt;
  }
  return inbox;
}

bool BounceIntake::atInbox(Poco::Data::Session& tx, const Inbox& inbox,
                           const std::optional<DeliveryReport>& report) {
  if (!report || report->original_message_id.empty()) return false;
  auto message = bounces_.outgoingMessage(tx, inbox.id, report->original_message_id);
  if (!message) return false;
  consume(tx, *message, *report, "its sender's inbox");
  return true;
}

void BounceIntake::consume(Poco::Data::Session& tx, const MessageRow& message,
                           const DeliveryReport& report, const char* via) {
  std::vector<std::string> recipients = message.to;
  recipients.insert(recipients.end(), message.cc.begin(), message.cc.end());
  recipients.insert(recipients.end(), message.bcc.begin(), message.bcc.end());
  const auto bounces = reportedBounces(report, recipients, sdk::nowMicros());
  const auto added = bounces_.record(tx, message.id, bounces);
  logger_.information(
      "delivery report from %s about message %s (to %s): %s",
      report.reporting_mta.empty() ? std::string("?") : report.reporting_mta, message.id,
      std::string(via),
      added.empty() ? std::string("no new failed recipient; nothing changed")
                    : "bounced for " + Poco::cat(std::string(", "), added.begin(), added.end()));
}

}  // namespace svc::plugins::email
