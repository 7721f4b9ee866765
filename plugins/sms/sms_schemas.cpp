#include "sms_schemas.h"

namespace svc::plugins::sms {

namespace {

using sdk::Schema;

Schema uuid() {
  return Schema::string().format("uuid");
}

Schema timestamp() {
  return Schema::string().format("date-time");
}

Schema e164(const char* what) {
  return Schema::string()
      .minLength(1)
      .format("e164")
      .describe(std::string(what) + ", in E.164: + and 8-15 digits.")
      .example("+12025550123");
}

// What carriers take: 1-1600 characters, never NUL (which no SMS encoding carries).
Schema body() {
  return Schema::string()
      .minLength(1)
      .maxLength(1600)
      .pattern("^[^\\x00]*$", "must not contain NUL characters")
      .describe("The text, 1-1600 characters (long ones are sent in segments).");
}

}  // namespace

Schema phoneSchema() {
  return Schema::object("Phone")
      .required("id", uuid())
      .required("number", Schema::string().format("e164").example("+12025550123"))
      .required("country_code", Schema::string().describe("ISO 3166 alpha-2.").example("US"))
      .required("identity", uuid())
      .required("created_dt", timestamp())
      .required("updated_dt", timestamp());
}

Schema smsMessageSchema() {
  return Schema::object("SmsMessage")
      .required("id", uuid())
      .required("phone", uuid().describe("The identity's phone (GET /api/phone/{id}/)."))
      .required("identity", uuid())
      .required("conversation_id",
                Schema::string().describe("`{phone_id}_{other_number}`: GET /api/sms-inbox/{id}/."))
      .required("direction", Schema::oneOf({"incoming", "outgoing"}))
      .required("from_number", Schema::string())
      .required("to_number", Schema::string())
      .optional("body", Schema::string().describe("The text. Absent from events."))
      .required("segments", Schema::integer().minimum(1).describe("What a carrier bills."))
      .required("encoding", Schema::oneOf({"GSM-7", "UCS-2"}))
      .required("extracted_code", Schema::string()
                                      .nullable()
                                      .describe("A verification code found in the text, or null.")
                                      .example("482913"))
      .required("is_read", Schema::boolean())
      .required("status",
                Schema::oneOf({"received", "queued", "sent", "delivered", "undelivered", "failed"})
                    .describe("Incoming: received; outgoing: queued, then sent, then "
                              "delivered, undelivered or failed."))
      .required("error_code", Schema::string().nullable().describe(
                                  "The carrier's error code when undelivered or failed."))
      .required("error_message",
                Schema::string().nullable().describe("Why it was undelivered or failed, in words."))
      .required("created_dt", timestamp())
      .required("updated_dt", timestamp());
}

namespace {

// A conversation's members, under a component name.
Schema conversation(const char* name) {
  return Schema::object(name)
      .required("conversation_id", Schema::string().describe("`{phone_id}_{other_number}`."))
      .required("phone", uuid())
      .required("identity", uuid())
      .required("phone_number", Schema::string().describe("The other party's number."))
      .required("preview", Schema::string().describe("The start of the newest message."))
      .required("message_count", Schema::integer().minimum(0))
      .required("unread_count", Schema::integer().minimum(0))
      .required("latest_dt", timestamp());
}

}  // namespace

Schema conversationSchema() {
  return conversation("SmsConversation");
}

Schema conversationDetailSchema() {
  return conversation("SmsConversationDetail")
      .required("messages", Schema::array(smsMessageSchema()).describe("Oldest first."));
}

Schema callSchema() {
  return Schema::object("SmsCall")
      .required("id", uuid())
      .required("phone", uuid())
      .required("identity", uuid())
      .required("from_number", Schema::string().describe("The caller, or `anonymous`."))
      .required("to_number", Schema::string())
      .required("created_dt", timestamp());
}

Schema sendSchema() {
  return Schema::object("SmsSend")
      .required("to_number", e164("The recipient"))
      .required("body", body());
}

Schema smsMessageInputSchema() {
  return Schema::object("SmsMessageInput")
      .required("is_read", Schema::boolean().describe("Marks the message read or unread."));
}

Schema injectSchema() {
  return Schema::object("SmsInject")
      .required("to", e164("A number of this server"))
      .required("from", e164("The sender"))
      .required("body", body());
}

}  // namespace svc::plugins::sms
