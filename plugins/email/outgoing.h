// Sending: compose, reply, reply-all and forward build a draft; send() checks it (recipients,
// attachments, the identity's sending limits), files the sent copy, delivers to inboxes here in
// the same transaction and queues the rest for the relay.
#pragma once

#include "blob_store.h"
#include "bounces/bounce_store.h"
#include "dkim.h"
#include "domains.h"
#include "email_config.h"
#include "inboxes.h"
#include "mail_store.h"
#include "messages.h"
#include "mime.h"
#include "relay.h"
#include "rules/rule_cache.h"

#include <svc/sdk/http.h>
#include <svc/sdk/storage.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// A message about to be sent.
struct Draft {
  Inbox inbox;  ///< The sender.
  std::vector<Mailbox> to, cc, bcc;
  std::string subject, content, in_reply_to, thread_id;
  std::vector<std::string> references;
  std::vector<AttachmentRecord> attachments;
};

/// Most recipients of one message, to, cc and bcc together.
constexpr std::size_t kMaxRecipients = 50;

/// @param field the field named in errors. @param raw `a@b.example` or `Name <a@b.example>`.
/// @return the mailbox. @throws HttpError 400 on field when it is not one valid address.
Mailbox parseRecipient(const std::string& field, const std::string& raw);
/// @param subject the parent's subject. @param prefix `Re:` or `Fwd:`. @return the subject with
/// the prefix, unless it carries it already (any case; `Fw:` counts as `Fwd:`).
std::string replySubject(const std::string& subject, const char* prefix);
/// Drops repeated addresses (any case) across to, cc and bcc; the first mention wins.
/// @return how many recipients are left.
std::size_t dedupeRecipients(Draft& d);
/// @param parent the forwarded message. @param note what the sender writes above it.
/// @return the forward's body: the note, then the parent's headers and text.
std::string forwardedContent(const std::string& note, const MessageRow& parent);

class Outgoing {
 public:
  /// @param dkim signs mail for the relay; null: unsigned.
  /// @param bounces gives relayed mail its envelope sender (a VERP address).
  /// @param rules the sender rules local delivery obeys, as SMTP's RCPT does.
  Outgoing(sdk::Database& database, MailStore& store, BlobStore& blobs, Relay& relay,
           BounceStore& bounces, const Domains& domains, Inboxes& inboxes, Messages& messages,
           const DkimSigner* dkim, const EmailConfig& config, RuleCache& rules);

  sdk::Response compose(sdk::Request& r);
  sdk::Response reply(sdk::Request& r, bool all);
  sdk::Response forward(sdk::Request& r);

 private:
  // Who receives the message: inboxes here, and addresses for the relay.
  struct Route {
    std::vector<std::pair<Mailbox, Inbox>> local;
    std::vector<std::string> remote;
  };

  sdk::Response send(Draft& d);
  void checkDraft(Draft& d);
  void checkSendingLimit(Poco::Data::Session& s, const std::string& identity);
  Route route(Poco::Data::Session& s, const Draft& d);
  OutgoingMail outgoingMail(const Draft& d, bool with_attachments);
  MessageRow commit(const Draft& d, const NewMessage& sent, const Route& route,
                    const OutgoingMail& out);
  std::string signedMessage(const OutgoingMail& out);
  Draft replyDraft(Poco::Data::Session& s, const MessageRow& parent);
  Inbox senderInbox(const sdk::Request& r);
  std::vector<Mailbox> recipients(const sdk::Request& r, const std::string& field);
  std::vector<AttachmentRecord> requestedAttachments(const sdk::Request& r, const Inbox& inbox);

  sdk::Database& database_;
  MailStore& store_;
  BlobStore& blobs_;
  Relay& relay_;
  BounceStore& bounces_;
  const Domains& domains_;
  Inboxes& inboxes_;
  Messages& messages_;
  const DkimSigner* dkim_;
  RuleCache& rules_;
  std::size_t max_attachment_bytes_;
  SendingLimits limits_;
  std::string hostname_;  // names this server in Authentication-Results
};

}  // namespace svc::plugins::email
