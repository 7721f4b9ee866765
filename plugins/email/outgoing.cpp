#include "outgoing.h"

#include "auth/authentication.h"

#include "request_scope.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/rate_limit.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/String.h>

#include <set>
#include <stdexcept>
#include <tuple>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

Mailbox parseRecipient(const std::string& field, const std::string& raw) {
  if (sdk::hasControlCharacter(raw)) {
    throw sdk::HttpError::invalid(field,
                                  "an address must not contain line breaks or control "
                                  "characters");
  }
  auto boxes = parseAddressList(raw);
  if (boxes.size() != 1 || !sdk::isValidEmailAddress(boxes.front().address)) {
    throw sdk::HttpError::invalid(field, "'" + raw + "' is not a valid email address");
  }
  return boxes.front();
}

std::string replySubject(const std::string& subject, const char* prefix) {
  std::string trimmed = Poco::trim(subject);
  std::string lower = Poco::toLower(trimmed);
  std::string p = Poco::toLower(std::string(prefix));
  if (lower.compare(0, p.size(), p) == 0) return trimmed;
  if (std::string(prefix) == "Fwd:" && lower.compare(0, 3, "fw:") == 0) return trimmed;
  return std::string(prefix) + " " + trimmed;
}

std::size_t dedupeRecipients(Draft& d) {
  std::set<std::string> seen;
  auto dedupe = [&](std::vector<Mailbox>& list) {
    std::vector<Mailbox> out;
    for (auto& m : list) {
      if (seen.insert(Poco::toLower(m.address)).second) out.push_back(m);
    }
    list = out;
  };
  dedupe(d.to);
  dedupe(d.cc);
  dedupe(d.bcc);
  return seen.size();
}

std::string forwardedContent(const std::string& note, const MessageRow& parent) {
  return note + "\n\n---------- Forwarded message ---------\nFrom: " + parent.from_email +
         "\nDate: " + sdk::isoTimestamp(parent.created_us) + "\nSubject: " + parent.subject +
         "\nTo: " + Poco::cat(std::string(", "), parent.to.begin(), parent.to.end()) + "\n\n" +
         parent.content;
}

Outgoing::Outgoing(sdk::Database& database, MailStore& store, BlobStore& blobs, Relay& relay,
                   BounceStore& bounces, const Domains& domains, Inboxes& inboxes,
                   Messages& messages, const DkimSigner* dkim, const EmailConfig& config,
                   RuleCache& rules)
    : database_(database),
      store_(store),
      blobs_(blobs),
      relay_(relay),
      bounces_(bounces),
      domains_(domains),
      inboxes_(inboxes),
      messages_(messages),
      dkim_(dkim),
      rules_(rules),
      max_attachment_bytes_(config.max_attachment_bytes),
      limits_(config.sending),
      hostname_(config.smtp.hostname) {}

std::vector<Mailbox> Outgoing::recipients(const sdk::Request& r, const std::string& field) {
  std::vector<Mailbox> out;
  for (const auto& raw : r.stringListField(field)) out.push_back(parseRecipient(field, raw));
  return out;
}

std::vector<AttachmentRecord> Outgoing::requestedAttachments(const sdk::Request& r,
                                                             const Inbox& inbox) {
  std::vector<AttachmentRecord> out;
  Poco::Data::Session s = database_.session();
  for (const auto& uuid : r.stringListField("attachment_uuids")) {
    auto a = store_.attachment(s, uuid);
    if (!a || a->account_id != inbox.account_id ||
        (!a->identity_uuid.empty() && a->identity_uuid != inbox.identity_uuid)) {
      throw sdk::HttpError::invalid("attachment_uuids", "no attachment " + uuid +
                                                            " for this identity; upload it "
                                                            "with POST /api/email-attachments/");
    }
    out.push_back(*a);
  }
  return out;
}

Inbox Outgoing::senderInbox(const sdk::Request& r) {
  if (auto inbox = r.queryParam("inbox")) return inboxes_.visibleInbox(r, *inbox);
  if (!r.identity) {
    throw sdk::HttpError(400, "identity_required",
                         "Name the sender with ?identity=<uuid> or ?inbox=<id>, or use an "
                         "identity key.");
  }
  Poco::Data::Session s = database_.session();
  auto inbox = store_.primaryInbox(s, Poco::toLower(r.identity->uuid));
  if (!inbox) throw sdk::HttpError::notFound("inbox");
  return *inbox;
}

sdk::Response Outgoing::compose(sdk::Request& r) {
  Draft d;
  d.inbox = senderInbox(r);
  d.to = recipients(r, "to_email");
  if (d.to.empty()) throw sdk::HttpError::invalid("to_email", "at least one recipient is required");
  d.subject = r.requiredString("subject");
  d.content = r.requiredString("content");
  d.cc = recipients(r, "cc");
  d.bcc = recipients(r, "bcc");
  d.attachments = requestedAttachments(r, d.inbox);
  return send(d);
}

// The part of a reply or forward that comes from the parent: the sender's inbox and threading.
Draft Outgoing::replyDraft(Poco::Data::Session& s, const MessageRow& parent) {
  Draft d;
  auto inbox = store_.inboxById(s, parent.inbox_id);
  if (!inbox) throw sdk::HttpError::notFound("inbox");
  d.inbox = *inbox;
  d.in_reply_to = parent.message_id;
  d.references = parent.references;
  if (!parent.message_id.empty()) d.references.push_back(parent.message_id);
  d.thread_id = parent.thread_id;
  return d;
}

sdk::Response Outgoing::reply(sdk::Request& r, bool all) {
  Poco::Data::Session s = database_.session();
  MessageRow parent = messages_.visibleMessage(r, s);
  Draft d = replyDraft(s, parent);
  d.content = r.requiredString("content");
  std::vector<std::string> to;
  if (parent.direction == "outgoing") {
    to = parent.to;  // replying to one's own message writes to its recipients again
  } else {
    to = parent.reply_to.empty() ? std::vector<std::string>{parent.from_email} : parent.reply_to;
  }
  std::vector<std::string> cc;
  if (all) {
    if (parent.direction == "incoming") to.insert(to.end(), parent.to.begin(), parent.to.end());
    cc = parent.cc;
  }
  // Drop the inbox's own address and duplicates, case-insensitively.
  std::set<std::string> seen{d.inbox.address};
  auto keep = [&](const std::vector<std::string>& list, std::vector<Mailbox>& out) {
    for (const auto& a : list) {
      if (seen.insert(Poco::toLower(a)).second && sdk::isValidEmailAddress(a))
        out.push_back({"", a});
    }
  };
  keep(to, d.to);
  keep(cc, d.cc);
  for (auto& m : recipients(r, "cc")) {
    if (seen.insert(Poco::toLower(m.address)).second) d.cc.push_back(m);
  }
  d.bcc = recipients(r, "bcc");
  if (d.to.empty() && d.cc.empty() && d.bcc.empty()) {
    throw sdk::HttpError::invalid("to_email", "the message has no one to reply to");
  }
  if (d.to.empty()) {  // everyone else was this inbox: cc becomes to
    d.to = d.cc;
    d.cc.clear();
  }
  d.subject = replySubject(parent.subject, "Re:");
  d.attachments = requestedAttachments(r, d.inbox);
  return send(d);
}

sdk::Response Outgoing::forward(sdk::Request& r) {
  Poco::Data::Session s = database_.session();
  MessageRow parent = messages_.visibleMessage(r, s);
  Draft d = replyDraft(s, parent);
  d.to = recipients(r, "to_email");
  if (d.to.empty()) throw sdk::HttpError::invalid("to_email", "at least one recipient is required");
  std::string note = r.requiredString("content");
  d.cc = recipients(r, "cc");
  d.bcc = recipients(r, "bcc");
  d.subject = replySubject(parent.subject, "Fwd:");
  d.content = forwardedContent(note, parent);
  d.attachments = store_.messageAttachments(s, parent.id);
  auto extra = requestedAttachments(r, d.inbox);
  d.attachments.insert(d.attachments.end(), extra.begin(), extra.end());
  return send(d);
}

void Outgoing::checkSendingLimit(Poco::Data::Session& s, const std::string& identity) {
  sdk::enforceSendingLimits(limits_.per_hour, limits_.per_day, "messages",
                            [&](std::int64_t since_us, int limit) {
                              std::vector<Poco::Int64> times;
                              std::string id = identity;
                              Poco::Int64 since = since_us;
                              s << "SELECT created_us FROM email_messages WHERE identity_uuid = ? "
                                   "AND direction = 'outgoing' AND created_us > ? ORDER BY "
                                   "created_us DESC LIMIT ?",
                                  use(id), use(since), use(limit), into(times), now;
                              return std::vector<std::int64_t>(times.begin(), times.end());
                            });
}

// What send() refuses before it looks at the database.
void Outgoing::checkDraft(Draft& d) {
  if (sdk::hasControlCharacter(d.subject)) {
    throw sdk::HttpError::invalid("subject", "must be one line without control characters");
  }
  if (d.subject.size() > 998) throw sdk::HttpError::invalid("subject", "at most 998 characters");
  if (dedupeRecipients(d) > kMaxRecipients) {
    throw sdk::HttpError::invalid("to_email", "at most 50 recipients in all (to, cc and bcc)");
  }
  std::int64_t total = 0;
  for (const auto& a : d.attachments) total += a.size;
  if (total > static_cast<std::int64_t>(max_attachment_bytes_)) {
    throw sdk::HttpError(413, "payload_too_large",
                         "The attachments add up to more than the " +
                             std::to_string(max_attachment_bytes_) + " bytes a message may carry.");
  }
}

// Which recipients live here, and whether they exist.
Outgoing::Route Outgoing::route(Poco::Data::Session& s, const Draft& d) {
  Route out;
  for (const auto* list : {&d.to, &d.cc, &d.bcc}) {
    const char* field = list == &d.to ? "to_email" : list == &d.cc ? "cc" : "bcc";
    for (const auto& m : *list) {
      if (domains_.isLocal(s, domainOf(m.address))) {
        auto inbox = store_.inboxByAddress(s, m.address);
        if (!inbox) {
          throw sdk::HttpError::invalid(field,
                                        "no inbox at this server has the address " + m.address);
        }
        // Mail between this server's inboxes obeys the recipient's sender rules as mail over
        // SMTP does; refused here, the sender learns it at once (as a 550 would tell). The
        // sending inbox's address is both its envelope sender and its From (no null sender,
        // no other From), so this one judgement is RCPT's and the end of DATA's.
        const SenderVerdict verdict =
            rules_.judge(inbox->account_id, inbox->identity_uuid, d.inbox.address);
        if (!verdict.accepted) {
          throw sdk::HttpError::invalid(field, m.address + " refuses this message: " +
                                                   verdict.reason + " (its sender rules)");
        }
        out.local.emplace_back(m, *inbox);
      } else {
        out.remote.push_back(m.address);
      }
    }
  }
  return out;
}

// The bytes, as the relay will send them (and as a local copy would have been received).
OutgoingMail Outgoing::outgoingMail(const Draft& d, bool with_attachments) {
  OutgoingMail out;
  out.from = {"", d.inbox.address};
  out.to = d.to;
  out.cc = d.cc;
  out.subject = d.subject;
  out.content = d.content;
  out.message_id = "<" + sdk::newUuid() + "@" + domainOf(d.inbox.address) + ">";
  out.in_reply_to = d.in_reply_to;
  out.references = d.references;
  out.date_us = sdk::nowMicros();
  if (with_attachments) {
    for (const auto& a : d.attachments) {
      auto bytes = blobs_.get(a.sha256);
      if (!bytes) throw std::runtime_error("attachment bytes missing for " + a.uuid);
      out.attachments.push_back({a.filename, a.content_type, std::move(*bytes)});
    }
  }
  return out;
}

std::string Outgoing::signedMessage(const OutgoingMail& out) {
  std::string raw = buildMessage(out);
  if (!dkim_) return raw;
  return dkim_->sign(raw, domainOf(out.from.address), out.date_us / 1000000);
}

// Files the sender's copy and every local recipient's, and queues the relay's, in one
// transaction.
MessageRow Outgoing::commit(const Draft& d, const NewMessage& sent, const Route& route,
                            const OutgoingMail& out) {
  MessageRow row;
  database_.transaction([&](Poco::Data::Session& tx) {
    row = store_.file(tx, d.inbox, sent);
    std::set<std::string> delivered;
    for (const auto& [mailbox, inbox] : route.local) {
      if (!delivered.insert(inbox.id).second) continue;
      NewMessage in = sent;
      in.direction = "incoming";
      in.bcc.clear();  // a recipient never learns who else was blind-copied
      in.is_read = false;
      in.status.clear();
      in.thread_id.clear();
      in.created_us = out.date_us;
      in.attachments.clear();
      // Never over SMTP, so nothing for SPF or DKIM to check: the sender is an identity that
      // proved itself to this server's API, which is what a pass means (see localAuthentication).
      const Authentication local = localAuthentication(sent.from.address, hostname_);
      in.authentication = authenticationText(local);
      in.auth_verdict = local.verdict;
      for (const auto& a : d.attachments) {
        in.attachments.push_back(store_.insertAttachment(tx, inbox.account_id, inbox.identity_uuid,
                                                         a.filename, a.content_type, a.size,
                                                         a.sha256));
      }
      store_.file(tx, inbox, std::move(in));
    }
    if (!route.remote.empty()) {
      // Reports of non-delivery come back to each recipient's VERP address, which names this
      // message and that recipient; the relay makes the envelopes (BounceStore::envelopes).
      bounces_.makeTokens(tx, row.id, route.remote);
      std::string raw = signedMessage(out), id = row.id, sender = d.inbox.address,
                  rcpts = jsonList(route.remote), empty;
      Poco::Int64 at = out.date_us;
      int zero = 0;
      tx << "INSERT INTO email_outbox (message_id, sender, recipients, raw, attempts, "
            "next_attempt_us, last_error, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
          use(id), use(sender), use(rcpts), use(raw), use(zero), use(at), use(empty),
          bind(out.date_us), now;
    }
  });
  return row;
}

sdk::Response Outgoing::send(Draft& d) {
  checkDraft(d);
  Route to;
  {
    Poco::Data::Session s = database_.session();
    checkSendingLimit(s, d.inbox.identity_uuid);
    to = route(s, d);
  }
  if (!to.remote.empty() && !relay_.configured()) {
    // Permanent until the operator configures a relay: a 4xx, so agents do not retry it.
    throw sdk::HttpError(
        422, "relay_not_configured",
        "This server has no mail relay configured (email.relay.host), so it delivers only to "
        "its own addresses (" +
            Poco::cat(std::string(", "), domains_.platform().begin(), domains_.platform().end()) +
            "), not to " + to.remote.front() +
            "; nothing was sent. Send to this server's addresses, or ask its operator to "
            "configure a relay.");
  }
  const OutgoingMail out = outgoingMail(d, !to.remote.empty());
  auto addresses = [](const std::vector<Mailbox>& list) {
    std::vector<std::string> v;
    for (const auto& m : list) v.push_back(m.address);
    return v;
  };
  NewMessage sent;
  sent.direction = "outgoing";
  sent.from = out.from;
  sent.to = addresses(d.to);
  sent.cc = addresses(d.cc);
  sent.bcc = addresses(d.bcc);
  sent.subject = d.subject;
  sent.content = d.content;
  sent.message_id = out.message_id;
  sent.in_reply_to = d.in_reply_to;
  sent.references = d.references;
  sent.is_read = true;
  sent.status = to.remote.empty() ? "sent" : "queued";
  sent.thread_id = d.thread_id;
  sent.attachments = d.attachments;
  sent.created_us = out.date_us;
  MessageRow row = commit(d, sent, to, out);
  if (!to.remote.empty()) relay_.wake();
  Poco::Data::Session s = database_.session();
  return sdk::Response::json(201, store_.messageJson(s, row, true));
}

}  // namespace svc::plugins::email
