#include "email_routes.h"

#include "email_schemas.h"

#include <map>
#include <optional>
#include <utility>

namespace svc::plugins::email {

std::vector<std::string> emailPaths() {
  return {"/api/domains/", "/api/email/", "/api/email-inbox/", "/api/email-messages/",
          "/api/email-attachments/"};
}

namespace {

using sdk::AuthNeed;
using sdk::Param;
using sdk::RouteError;
using sdk::Schema;

std::vector<Param> pagedWith(std::vector<Param> more) {
  std::vector<Param> out = sdk::pageParams();
  for (auto& p : more) out.push_back(std::move(p));
  return out;
}

Param uuidParam(const char* name, const char* description) {
  return {name, Schema::string().minLength(1).format("uuid"), false, description};
}

// The errors of sending (compose, reply, reply-all, forward) besides the kernel's.
std::vector<RouteError> sendingErrors() {
  return {
      {413, "payload_too_large", "the attachments add up to more than a message may carry"},
      {422, "relay_not_configured",
       "a recipient is at another server and this server has no mail relay (email.relay.host): "
       "send to this server's own addresses, or ask the operator to configure a relay"},
      {429, "throttled", "the identity reached its sending limit (Retry-After)"},
  };
}

}  // namespace

std::vector<Param> threadListQuery() {
  return pagedWith({uuidParam("inbox", "Only this inbox's threads."),
                    {"has_unread", Schema::boolean(), false,
                     "true: threads with unread messages; false: the others."},
                    {"quarantined", Schema::oneOf({"false", "true", "include"}), false,
                     "Threads of DMARC-quarantined mail (each such message has its own): left "
                     "out by default (false); true: only them; include: with the rest."}});
}

std::vector<Param> messageListQuery() {
  return pagedWith({{"created_after", Schema::string().minLength(1).format("date-time"), false,
                     "Only messages created strictly after this time (a cursor: the last "
                     "created_dt seen)."},
                    {"direction", Schema::oneOf({"incoming", "outgoing"}), false,
                     "Only incoming or only outgoing messages."},
                    {"is_read", Schema::boolean(), false, "Only read (true) or unread (false)."},
                    uuidParam("thread_id", "Only this thread's messages."),
                    {"from_email", Schema::string(), false, "Only messages from this address."},
                    uuidParam("inbox", "Only this inbox's messages."),
                    {"authenticated", Schema::boolean(), false,
                     "true: only mail whose authentication verdict is pass (DMARC, or SPF or "
                     "DKIM aligned with From, or sent by an identity here); false: only mail "
                     "without a pass."},
                    {"quarantined", Schema::oneOf({"false", "true", "include"}), false,
                     "Mail DMARC quarantined: left out by default (false); true: only it; "
                     "include: with the rest."}});
}

void registerEmailRoutes(sdk::RouteRegistry& routes, const EmailHandlers& h) {
  const sdk::JsonRoutes add(routes);
  const Schema domain = domainSchema(), inbox = inboxSchema(), message = messageSchema(),
               attachment = attachmentSchema();

  Domains& d = h.domains;
  add("GET", "/api/domains/", AuthNeed::kAnyKey, "Platform and custom email domains.",
      sdk::bindHandler(d, &Domains::list), std::nullopt, sdk::pageParams(),
      {{200, sdk::pageOf(domain, "DomainList")}});
  add("POST", "/api/domains/", AuthNeed::kAccount,
      "Add a custom domain (pending until verified); answers the TXT record to publish.",
      sdk::bindHandler(d, &Domains::add), domainInputSchema(), {}, {{201, domain}},
      {{409, "conflict", "the domain is a platform domain, or this account added it already"}});
  add("GET", "/api/domains/{name}/", AuthNeed::kAnyKey, "One domain.",
      sdk::bindHandler(d, &Domains::one), std::nullopt, {}, {{200, domain}});
  add("DELETE", "/api/domains/{name}/", AuthNeed::kAccount, "Remove a custom domain.",
      sdk::bindHandler(d, &Domains::remove), std::nullopt, {}, {{204, Schema::any()}},
      {{409, "conflict", "inboxes still have addresses on the domain"}});
  add("POST", "/api/domains/{name}/verify/", AuthNeed::kAccount,
      "Verify a custom domain by its DNS TXT record.", sdk::bindHandler(d, &Domains::verify),
      std::nullopt, {}, {{200, domain}},
      {{400, "invalid", "the TXT record was not found (errors.dns_record): publish it and retry"},
       {409, "conflict", "another account verified the domain first"},
       {503, "service_unavailable", "the DNS lookup failed (Retry-After)"}});

  Inboxes& i = h.inboxes;
  add("GET", "/api/email/", AuthNeed::kAnyKey, "Inboxes, newest first.",
      sdk::bindHandler(i, &Inboxes::list), std::nullopt, sdk::pageParams(),
      {{200, sdk::pageOf(inbox, "InboxList")}});
  add("POST", "/api/email/", AuthNeed::kAnyKey,
      "Add an inbox to an identity (an address asked for, or one generated).",
      sdk::bindHandler(i, &Inboxes::create), inboxInputSchema(), {}, {{201, inbox}},
      {{400, "identity_required", "no identity is named (body, identity= or an identity key)"},
       {404, "not_found", "the identity named in the body is not this account's"},
       {402, "subscription_required", "the account has no active plan"},
       {409, "email_taken", "another inbox has the address"},
       {503, "service_unavailable", "no free address could be generated now (Retry-After)"}});
  add("GET", "/api/email/check-availability/", AuthNeed::kAnyKey,
      "Whether an address is free for this account.", sdk::bindHandler(i, &Inboxes::availability),
      std::nullopt,
      {{"email", Schema::string().minLength(1), true,
        "A local part (on the default domain) or a full address."}},
      {{200, availabilitySchema()}});
  add("GET", "/api/email/{id}/", AuthNeed::kAnyKey, "One inbox.",
      sdk::bindHandler(i, &Inboxes::one), std::nullopt, {}, {{200, inbox}});

  Messages& m = h.messages;
  add("GET", "/api/email-inbox/", AuthNeed::kAnyKey, "Threads, newest first.",
      sdk::bindHandler(m, &Messages::listThreads), std::nullopt, threadListQuery(),
      {{200, sdk::pageOf(threadSchema(), "EmailThreadList")}});
  add("GET", "/api/email-inbox/{id}/", AuthNeed::kAnyKey, "A thread with its messages.",
      sdk::bindHandler(m, &Messages::oneThread), std::nullopt, {}, {{200, threadDetailSchema()}});
  add("GET", "/api/email-messages/", AuthNeed::kAnyKey,
      "Messages, oldest first (by created_dt, then id), without their bodies.",
      sdk::bindHandler(m, &Messages::list), std::nullopt, messageListQuery(),
      {{200, sdk::pageOf(message, "EmailMessageList")}});

  Outgoing& o = h.outgoing;
  auto errors = sendingErrors();
  errors.insert(errors.begin(), {{400, "identity_required",
                                  "no sender is named (identity=, inbox= or an identity key)"},
                                 {404, "not_found", "inbox= names no inbox this request may see"}});
  add("POST", "/api/email-messages/compose/", AuthNeed::kAnyKey,
      "Send a new message from the identity's primary inbox (or inbox=).",
      sdk::bindHandler(o, &Outgoing::compose), composeSchema(),
      {uuidParam("inbox", "Send from this inbox instead of the identity's primary one.")},
      {{201, message}}, errors);
  const auto one = sdk::bindHandler(m, &Messages::one);
  add("GET", "/api/email-messages/{id}/", AuthNeed::kAnyKey, "One message, with its bodies.", one,
      std::nullopt, {}, {{200, message}});
  add("PUT", "/api/email-messages/{id}/", AuthNeed::kAnyKey, "Set a message's is_read.", one,
      messageInputSchema(), {}, {{200, message}});
  add("PATCH", "/api/email-messages/{id}/", AuthNeed::kAnyKey,
      "Change a message's is_read (any subset of its mutable fields).", one,
      messageInputSchema().partial("EmailMessagePatch"), {}, {{200, message}});
  add(
      "POST", "/api/email-messages/{id}/reply/", AuthNeed::kAnyKey,
      "Reply to the sender (its Reply-To, else its From), threaded.",
      [&o](sdk::Request& r) { return o.reply(r, false); }, replySchema(), {}, {{201, message}},
      sendingErrors());
  add(
      "POST", "/api/email-messages/{id}/reply-all/", AuthNeed::kAnyKey,
      "Reply to the sender and every recipient but this inbox, threaded.",
      [&o](sdk::Request& r) { return o.reply(r, true); }, replySchema(), {}, {{201, message}},
      sendingErrors());
  add("POST", "/api/email-messages/{id}/forward/", AuthNeed::kAnyKey,
      "Forward a message, with its attachments, to new recipients.",
      sdk::bindHandler(o, &Outgoing::forward), forwardSchema(), {}, {{201, message}},
      sendingErrors());

  Attachments& a = h.attachments;
  // A multipart form (field `file`) or the raw bytes: no JSON body to declare.
  routes.add({"POST",
              "/api/email-attachments/",
              AuthNeed::kAnyKey,
              sdk::BodyKind::kAny,
              a.maxBodyBytes(),
              "Upload an attachment: multipart field `file`, or the bytes as the body with "
              "Content-Type and ?filename=.",
              sdk::bindHandler(a, &Attachments::upload),
              std::nullopt,
              std::vector<Param>{
                  {"filename", Schema::string(), false, "The file's name, for a raw body."}},
              {{201, attachment}},
              {}});
  add("GET", "/api/email-attachments/{uuid}/", AuthNeed::kAnyKey, "An attachment's record.",
      sdk::bindHandler(a, &Attachments::record), std::nullopt, {}, {{200, attachment}});
  add("GET", "/api/email-attachments/{uuid}/download/", AuthNeed::kAnyKey,
      "An attachment's bytes, with its media type.", sdk::bindHandler(a, &Attachments::download),
      std::nullopt, {},
      {{200, Schema::bytes("*/*").describe("The file's bytes, with its own media type.")}});
}

}  // namespace svc::plugins::email
