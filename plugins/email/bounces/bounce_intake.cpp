#include "bounces/bounce_intake.h"

#include "bounces/verp.h"
#include "domains.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

#include <algorithm>

namespace svc::plugins::email {

namespace {

std::vector<std::string> lowered(const std::vector<std::string>& list) {
  std::vector<std::string> out;
  for (const auto& r : list) {
    std::string l = Poco::toLower(r);
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  }
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& a) {
  return !a.empty() && std::find(list.begin(), list.end(), a) != list.end();
}

}  // namespace

std::vector<Bounce> reportedBounces(const DeliveryReport& report,
                                    const std::vector<std::string>& relayed, std::int64_t at,
                                    bool only_recipient_fallback,
                                    const std::vector<std::string>& not_relayed) {
  const std::vector<std::string> ours = lowered(relayed), others = lowered(not_relayed);
  std::vector<Bounce> out;
  for (const auto& r : report.recipients) {
    if (!r.failed()) continue;
    std::string who = contains(ours, r.original_recipient) ? r.original_recipient
                      : contains(ours, r.final_recipient)  ? r.final_recipient
                      : only_recipient_fallback && ours.size() == 1 &&
                              !contains(others, r.final_recipient) &&
                              !contains(others, r.original_recipient)
                          ? ours.front()
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

bool namesRelayedRecipient(const DeliveryReport& report, const std::vector<std::string>& relayed) {
  const std::vector<std::string> ours = lowered(relayed);
  return std::any_of(report.recipients.begin(), report.recipients.end(), [&](const auto& r) {
    return contains(ours, r.original_recipient) || contains(ours, r.final_recipient);
  });
}

BounceIntake::BounceIntake(MailStore& store, BounceStore& bounces, Poco::Logger& logger, bool verp)
    : store_(store), bounces_(bounces), logger_(logger), verp_(verp) {}

bool BounceIntake::acceptsVerpAddress(Poco::Data::Session& s, const std::string& address) {
  return verpInbox(s, address).has_value();
}

std::optional<Inbox> BounceIntake::verpInbox(Poco::Data::Session& s, const std::string& address) {
  auto token = verpToken(address);
  if (!token) return std::nullopt;
  auto relayed = bounces_.byToken(s, *token, sdk::nowMicros());
  if (!relayed) return std::nullopt;
  auto inbox = store_.inboxById(s, relayed->message.inbox_id);
  if (!inbox || domainOf(inbox->address) != Poco::toLower(domainOf(address))) return std::nullopt;
  return inbox;
}

std::optional<Inbox> BounceIntake::atVerpAddress(Poco::Data::Session& tx,
                                                 const std::string& address,
                                                 const std::optional<DeliveryReport>& report) {
  auto token = verpToken(address);
  if (!token) return std::nullopt;
  auto relayed = bounces_.byToken(tx, *token, sdk::nowMicros());
  if (!relayed) return std::nullopt;
  auto inbox = store_.inboxById(tx, relayed->message.inbox_id);
  if (!inbox || domainOf(inbox->address) != Poco::toLower(domainOf(address))) return std::nullopt;
  // A report that returns another message's Message-ID is not about this one. Only the token's
  // holders (the relayed recipients' servers) write here, so a report that names none of them
  // (forwarded mail) is the one relayed recipient's, when there was one.
  if (report &&
      (report->original_message_id.empty() ||
       report->original_message_id == relayed->message.message_id) &&
      consume(tx, *relayed, *report, true, "its VERP address")) {
    return std::nullopt;
  }
  return inbox;
}

bool BounceIntake::atInbox(Poco::Data::Session& tx, const Inbox& inbox,
                           const std::optional<DeliveryReport>& report, bool null_sender) {
  // Reports come from the null reverse-path (RFC 5321 section 4.5.5); anyone may write to an
  // inbox, so a report from a mailbox is ordinary mail. With VERP, ours come to VERP addresses.
  if (verp_ || !null_sender || !report || report->original_message_id.empty()) return false;
  auto relayed = bounces_.byMessageId(tx, inbox.id, report->original_message_id, sdk::nowMicros());
  if (!relayed) return false;
  return consume(tx, *relayed, *report, false, "its sender's inbox");
}

bool BounceIntake::consume(Poco::Data::Session& tx, const Relayed& relayed,
                           const DeliveryReport& report, bool only_recipient_fallback,
                           const char* via) {
  // The message's other recipients (delivered here) are never the forwarded address.
  std::vector<std::string> all = relayed.message.to;
  all.insert(all.end(), relayed.message.cc.begin(), relayed.message.cc.end());
  all.insert(all.end(), relayed.message.bcc.begin(), relayed.message.bcc.end());
  const auto bounces =
      reportedBounces(report, relayed.recipients, sdk::nowMicros(), only_recipient_fallback, all);
  // A report that names no recipient this message was relayed to says nothing about it: it is
  // ordinary mail (a local recipient cannot bounce, and a forged one must not vanish unseen).
  if (bounces.empty() && !namesRelayedRecipient(report, relayed.recipients)) return false;
  const auto added = bounces_.record(tx, relayed.message.id, bounces);
  logger_.information(
      "delivery report from %s about message %s (to %s): %s",
      report.reporting_mta.empty() ? std::string("?") : report.reporting_mta, relayed.message.id,
      std::string(via),
      added.empty() ? std::string("no new failed recipient; nothing changed")
                    : "bounced for " + Poco::cat(std::string(", "), added.begin(), added.end()));
  return true;
}

}  // namespace svc::plugins::email
