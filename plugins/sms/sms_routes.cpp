#include "sms_routes.h"

#include "sms_schemas.h"

#include <map>
#include <optional>
#include <utility>

namespace svc::plugins::sms {

std::vector<std::string> smsPaths() {
  return {"/api/phone/", "/api/messages/", "/api/sms-inbox/", "/api/sms/"};
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

Param phoneParam(const char* description) {
  return {"phone", Schema::string().minLength(1).format("uuid"), false, description};
}

}  // namespace

void registerSmsRoutes(sdk::RouteRegistry& routes, Phones& p, SmsMessages& m, SmsOutgoing& o) {
  const sdk::JsonRoutes add(routes);
  const Schema phone = phoneSchema(), message = smsMessageSchema();

  add("GET", "/api/phone/", AuthNeed::kAnyKey, "Phone numbers, newest first.",
      sdk::bindHandler(p, &Phones::list), std::nullopt, sdk::pageParams(),
      {{200, sdk::pageOf(phone, "PhoneList")}});
  add("GET", "/api/phone/{id}/", AuthNeed::kAnyKey, "One phone number.",
      sdk::bindHandler(p, &Phones::one), std::nullopt, {}, {{200, phone}});

  add("POST", "/api/messages/send/", AuthNeed::kIdentity,
      "Send an SMS from the identity's number; answers the message as the carrier left it.",
      sdk::bindHandler(o, &SmsOutgoing::send), sendSchema(), {}, {{201, message}},
      {{400, "identity_required", "a management key named no identity (identity=)"},
       {404, "no_phone",
        "the identity has no phone number: POST /api/identities/{uuid}/provision-phone/ first"},
       {429, "throttled", "the identity reached its sending limit (Retry-After)"}});
  add("GET", "/api/messages/", AuthNeed::kAnyKey,
      "SMS messages, newest first (oldest first after created_after, a cursor).",
      sdk::bindHandler(m, &SmsMessages::list), std::nullopt,
      pagedWith({{"created_after", Schema::string().minLength(1).format("date-time"), false,
                  "Only messages created strictly after this time, oldest first."},
                 {"direction", Schema::oneOf({"incoming", "outgoing"}), false,
                  "Only incoming or only outgoing messages."},
                 phoneParam("Only this phone's messages."),
                 {"is_read", Schema::boolean(), false, "Only read (true) or unread (false)."}}),
      {{200, sdk::pageOf(message, "SmsMessageList")}});
  const auto one = sdk::bindHandler(m, &SmsMessages::one);
  add("GET", "/api/messages/{id}/", AuthNeed::kAnyKey, "One SMS message.", one, std::nullopt, {},
      {{200, message}});
  add("PUT", "/api/messages/{id}/", AuthNeed::kAnyKey, "Set an SMS message's is_read.", one,
      smsMessageInputSchema(), {}, {{200, message}});
  add("PATCH", "/api/messages/{id}/", AuthNeed::kAnyKey,
      "Change an SMS message's is_read (any subset of its mutable fields).", one,
      smsMessageInputSchema().partial("SmsMessagePatch"), {}, {{200, message}});

  add("GET", "/api/sms-inbox/", AuthNeed::kAnyKey, "SMS conversations, newest first.",
      sdk::bindHandler(m, &SmsMessages::inbox), std::nullopt,
      pagedWith({phoneParam("Only this phone's conversations."),
                 {"has_unread", Schema::boolean(), false,
                  "true: conversations with unread messages; false: the others."}}),
      {{200, sdk::pageOf(conversationSchema(), "SmsConversationList")}});
  add("GET", "/api/sms-inbox/{id}/", AuthNeed::kAnyKey,
      "A conversation (id `{phone_id}_{other_number}`) with its messages, oldest first.",
      sdk::bindHandler(m, &SmsMessages::conversation), std::nullopt, {},
      {{200, conversationDetailSchema()}},
      {{400, "invalid_conversation_id",
        "the id is not `{phone_id}_{other_number}` as conversation_id shows it"}});

  add("POST", "/admin/sms/inject/", AuthNeed::kOperator,
      "Deliver an inbound SMS to a number of this server, as a carrier would.",
      sdk::bindHandler(o, &SmsOutgoing::inject), injectSchema(), {}, {{201, message}},
      {{404, "not_found", "no identity of this server holds `to`"}});
}

}  // namespace svc::plugins::sms
