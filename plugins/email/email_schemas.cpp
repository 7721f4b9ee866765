#include "email_schemas.h"

#include "inboxes.h"
#include "outgoing.h"

namespace svc::plugins::email {

namespace {

using sdk::Schema;

Schema uuid() {
  return Schema::string().format("uuid");
}

Schema timestamp() {
  return Schema::string().format("date-time");
}

Schema addresses() {
  return Schema::array(Schema::string());
}

// An address field of a request: one address or a list of them. The schema language the SDK
// builds has no "string or array", so the handler checks the type (400 naming the field).
Schema recipients(const char* what) {
  const auto address = [] { return Schema::string().minLength(1).maxLength(998); };
  return Schema::anyOf({address(), Schema::array(address()).maxItems(kMaxRecipients)})
      .describe(std::string(what) +
                ": an address (`name@example.com` or `Name <name@example.com>`) "
                "or a list of them; at most " +
                std::to_string(kMaxRecipients) + " recipients in all.")
      .example("bob@example.com");
}

Schema attachmentUuids() {
  return Schema::array(uuid()).nullable().describe(
      "Attachments uploaded with POST /api/email-attachments/, by uuid.");
}

Schema content() {
  return Schema::string().describe("The plain-text body.");
}

}  // namespace

Schema domainSchema() {
  return Schema::object("Domain")
      .required("name", Schema::string().example("example.org"))
      .required("kind", Schema::oneOf({"platform", "custom"})
                            .describe("platform: this server's own; custom: an account's."))
      .required("status", Schema::oneOf({"verified", "pending"})
                              .describe("pending until verify/ finds the TXT record."))
      .required("created_dt", timestamp().nullable().describe("null for a platform domain."))
      .optional("dns_record", Schema::object()
                                  .required("type", Schema::oneOf({"TXT"}))
                                  .required("name", Schema::string())
                                  .required("value", Schema::string())
                                  .describe("Custom domains: the TXT record that proves them."));
}

Schema inboxSchema() {
  return Schema::object("Inbox")
      .required("id", uuid())
      .required("address", Schema::string().format("email").example("support-bot-k7m2@agents.test"))
      .required("identity", uuid())
      .required("is_primary",
                Schema::boolean().describe("The identity's own address (its `email`)."))
      .required("created_dt", timestamp());
}

Schema availabilitySchema() {
  return Schema::object("EmailAvailability")
      .required("available",
                Schema::boolean().describe("true: free, on a domain this account may use."))
      .required("email", Schema::string().format("email").describe("The full address checked."));
}

Schema threadSchema() {
  return Schema::object("EmailThread")
      .required("thread_id", uuid())
      .required("inbox", uuid())
      .required("identity", uuid())
      .required("subject", Schema::string())
      .required("preview", Schema::string().describe("The start of the newest message."))
      .required("message_count", Schema::integer().minimum(0))
      .required("unread_count", Schema::integer().minimum(0))
      .required("attachment_names", Schema::array(Schema::string()))
      .required("participants", addresses())
      .required("latest_dt", timestamp())
      .required("quarantined", Schema::boolean().describe(
                                   "A DMARC-quarantined message's own thread: left out of the "
                                   "list unless quarantined= asks."));
}

Schema attachmentSchema() {
  return Schema::object("EmailAttachment")
      .required("uuid", uuid())
      .required("filename", Schema::string().example("invoice.pdf"))
      .required("content_type", Schema::string().example("application/pdf"))
      .required("size", Schema::integer().minimum(0).describe("In bytes."));
}

Schema authenticationSchema() {
  const auto result = [] {
    return Schema::oneOf({"pass", "fail", "softfail", "neutral", "none", "temperror", "permerror"})
        .describe("An RFC 8601 result.");
  };
  return Schema::object("EmailAuthentication")
      .required("verdict", Schema::oneOf({"pass", "fail", "none"})
                               .describe("pass: the From domain is authenticated (DMARC pass, or "
                                         "SPF or DKIM aligned with it, or sent by an identity "
                                         "here); fail: its checks say it is not the sender; "
                                         "none: nothing says either way."))
      .required("reason", Schema::string().describe("Why, in a few words."))
      .required("source", Schema::oneOf({"smtp", "local"})
                              .describe("smtp: received over SMTP and checked; local: sent by "
                                        "an identity of this server through the API."))
      .required("spf", Schema::object("EmailSpfResult")
                           .required("result", result())
                           .required("domain", Schema::string().describe(
                                                   "The domain checked: the envelope sender's, "
                                                   "or the HELO name's for a bounce."))
                           .required("client_ip", Schema::string())
                           .required("helo", Schema::string())
                           .required("mail_from", Schema::string().describe("The envelope sender."))
                           .nullable()
                           .describe("null when not checked."))
      .required("dkim", Schema::array(Schema::object("EmailDkimResult")
                                          .required("domain", Schema::string())
                                          .required("selector", Schema::string())
                                          .required("result", result()))
                            .describe("Each DKIM-Signature, in order."))
      .required(
          "dmarc",
          Schema::object("EmailDmarcResult")
              .required("result", result().describe("none: the domain publishes no DMARC "
                                                    "record."))
              .required("policy", Schema::oneOf({"none", "quarantine", "reject"})
                                      .nullable()
                                      .describe("The policy that applies; null without "
                                                "a record."))
              .required("from_domain", Schema::string())
              .required("spf_aligned",
                        Schema::boolean().describe("SPF passed for a domain aligned with From."))
              .required("dkim_aligned",
                        Schema::boolean().describe("A DKIM signature of a domain aligned with "
                                                   "From passed."))
              .nullable()
              .describe("null when not checked."))
      .required("header", Schema::string().describe(
                              "The Authentication-Results header stored with the message."));
}

Schema bounceSchema() {
  return Schema::object("EmailBounce")
      .required(
          "recipients",
          Schema::array(
              Schema::object("EmailBouncedRecipient")
                  .required("recipient", Schema::string().example("nobody@example.com"))
                  .required("status",
                            Schema::string().describe("The RFC 3463 status code.").example("5.1.1"))
                  .required("reason",
                            Schema::string().describe("The remote server's words: the report's "
                                                      "Diagnostic-Code or the relay's answer."))
                  .required("source", Schema::oneOf({"relay", "dsn"})
                                          .describe("relay: the relay refused it; dsn: a "
                                                    "delivery report came back."))
                  .required("bounced_dt", timestamp()))
              .describe("Each recipient that will not get the message, first bounced "
                        "first; the others may have got it."))
      .required("bounced_dt", timestamp().describe("When the first recipient bounced."))
      .nullable()
      .describe("Outgoing messages that bounced; null otherwise.");
}

Schema messageSchema() {
  const char* whole = "Absent from lists and events.";
  return Schema::object("EmailMessage")
      .required("id", uuid())
      .required("thread_id", uuid())
      .required("inbox", uuid())
      .required("identity", uuid())
      .required("direction", Schema::oneOf({"incoming", "outgoing"}))
      .required("from_email", Schema::string())
      .required("to_email", addresses())
      .required("cc", addresses())
      .optional("bcc", addresses().describe("Outgoing messages only."))
      .required("subject", Schema::string())
      .required("extracted_code",
                Schema::string()
                    .nullable()
                    .describe("A verification code found in the message, or null.")
                    .example("482913"))
      .required("message_id", Schema::string().describe("The RFC 5322 Message-ID."))
      .required("in_reply_to", Schema::string().nullable())
      .required("is_read", Schema::boolean())
      .required("status", Schema::oneOf({"queued", "sent", "failed", "bounced"})
                              .nullable()
                              .describe("Outgoing: queued for the relay, sent, failed (the "
                                        "relay refused the sender, or was not reached at any "
                                        "attempt), or "
                                        "bounced (at least one recipient will not get it: see "
                                        "`bounce`); incoming: null."))
      .required("bounce", bounceSchema())
      .required("created_dt", timestamp())
      .required("updated_dt", timestamp())
      .required("authentication",
                authenticationSchema().nullable().describe(
                    "Incoming mail: what SPF, DKIM and DMARC said, and the verdict; null for "
                    "outgoing mail and mail received before the checks existed."))
      .required("quarantined",
                Schema::boolean().describe("DMARC failed under p=quarantine: kept, but left out of "
                                           "lists unless quarantined= asks."))
      .optional("content", Schema::string().describe(std::string("The text body. ") + whole))
      .optional("html", Schema::string().nullable().describe(std::string("The HTML body, or "
                                                                         "null. ") +
                                                             whole))
      .optional("reply_to", addresses().describe(whole))
      .optional("references", Schema::array(Schema::string()).describe(whole))
      .optional("attachments", Schema::array(attachmentSchema()).describe(whole));
}

Schema threadDetailSchema() {
  return Schema::object("EmailThreadDetail")
      .required("thread_id", uuid())
      .required("subject", Schema::string())
      .required("messages", Schema::array(messageSchema()).describe("Oldest first."));
}

Schema domainInputSchema() {
  return Schema::object("DomainInput")
      .required("name", Schema::string()
                            .describe("A domain this account owns; any case.")
                            .example("example.org"));
}

Schema inboxInputSchema() {
  return Schema::object("InboxInput")
      .optional("identity", uuid().describe("The identity, unless the request names it already."))
      .optional("email", Schema::string().minLength(1).describe(
                             "A local part (on the default domain) or a full address on a "
                             "domain of this account; omitted: generated."));
}

Schema messageInputSchema() {
  return Schema::object("EmailMessageInput")
      .required("is_read", Schema::boolean().describe("Marks the message read or unread."));
}

Schema composeSchema() {
  return Schema::object("EmailCompose")
      .required("to_email", recipients("To"))
      .required("subject", Schema::string()
                               .maxLength(998)
                               .pattern("^[^\\x00-\\x1f\\x7f]*$",
                                        "must be one line without control characters")
                               .example("Your order"))
      .required("content", content())
      .optional("cc", recipients("Cc").nullable())
      .optional("bcc", recipients("Bcc").nullable())
      .optional("attachment_uuids", attachmentUuids());
}

Schema replySchema() {
  return Schema::object("EmailReply")
      .required("content", content())
      .optional("cc", recipients("Cc, besides those the reply keeps").nullable())
      .optional("bcc", recipients("Bcc").nullable())
      .optional("attachment_uuids", attachmentUuids());
}

Schema forwardSchema() {
  return Schema::object("EmailForward")
      .required("to_email", recipients("To"))
      .required("content", content().describe("A note above the forwarded message."))
      .optional("cc", recipients("Cc").nullable())
      .optional("bcc", recipients("Bcc").nullable())
      .optional("attachment_uuids", attachmentUuids());
}

}  // namespace svc::plugins::email
