#include "webhook_shapes.h"

namespace svc::plugins::webhooks {

namespace {

enum class Shape { kApi, kWithSecret, kEvent };

sdk::Schema webhookMembers(std::string name, Shape shape) {
  using sdk::Schema;
  Schema s = Schema::object(std::move(name));
  s.required("uuid", Schema::string().format("uuid"));
  if (shape == Shape::kEvent) {
    s.required("url_host", Schema::string().describe(
                               "The scheme and host deliveries go to (`https://hooks.example`): "
                               "events never carry the URL's path or query, which may hold a "
                               "token."));
  } else {
    s.required("url", Schema::string().describe("Where deliveries are POSTed."));
  }
  s.required(
       "event_types",
       Schema::array(Schema::string()).describe("The event types it receives; empty: every type."))
      .required("identity", Schema::string().format("uuid").nullable().describe(
                                "The identity whose events it receives; null: the account's."))
      .required("enabled", Schema::boolean())
      .required("description", Schema::string())
      .required("disabled_reason",
                Schema::string().nullable().describe(
                    "Why svcd disabled it (deliveries failing for 24 hours), or null."));
  if (shape == Shape::kWithSecret) {
    s.required("secret", Schema::string().describe(
                             "`whsec_` and base64 of 32 bytes: the key of the signatures. Shown "
                             "only here; keep it."));
  }
  s.required("created_dt", Schema::string().format("date-time"))
      .required("updated_dt", Schema::string().format("date-time"));
  return s;
}

}  // namespace

sdk::Schema webhookInputSchema(const std::vector<std::string>& types) {
  using sdk::Schema;
  Schema type = types.empty() ? Schema::string() : Schema::oneOf(types);
  return Schema::object("WebhookInput")
      .required(
          "url",
          Schema::string()
              .maxLength(2048)
              .pattern("^[Hh][Tt][Tt][Pp][Ss]?://[^ ]+$", "must be an absolute http or https URL")
              .describe("An absolute http(s) URL on a public address, without credentials.")
              .example("https://example.com/hooks/svc"))
      .optional("event_types",
                Schema::array(type).maxItems(200).describe(
                    "The event types to receive (the API description lists them); empty or "
                    "absent: every type."))
      .optional("description", Schema::string().maxLength(kMaxDescription))
      .optional("enabled", Schema::boolean().describe(
                               "false: deliveries already made wait, events meanwhile are not "
                               "delivered; true resumes and clears disabled_reason."));
}

sdk::Schema webhookSchema() {
  return webhookMembers("Webhook", Shape::kApi);
}

sdk::Schema webhookWithSecretSchema() {
  return webhookMembers("WebhookWithSecret", Shape::kWithSecret);
}

sdk::Schema webhookEventSchema() {
  return webhookMembers("WebhookEvent", Shape::kEvent);
}

sdk::Schema deliverySchema() {
  using sdk::Schema;
  const Schema time = Schema::string().format("date-time");
  return Schema::object("WebhookDelivery")
      .required("id", Schema::string().format("uuid"))
      .required("event_id", Schema::string().format("uuid").describe("Also its `webhook-id`."))
      .required("event_type", Schema::string())
      .required("event_created_dt", time)
      .required("state", Schema::oneOf({"pending", "delivered", "failed"}))
      .required("attempts", Schema::integer().minimum(0))
      .required("last_status_code", Schema::integer().nullable())
      .required("last_error", Schema::string().nullable())
      .required("last_attempt_dt", Schema::string().format("date-time").nullable())
      .required("next_attempt_dt", Schema::string().format("date-time").nullable())
      .required("delivered_dt", Schema::string().format("date-time").nullable())
      .required("created_dt", time);
}

}  // namespace svc::plugins::webhooks
