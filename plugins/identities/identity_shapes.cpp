#include "identity_shapes.h"

namespace svc::plugins::identities {

using sdk::Schema;

namespace {

Schema name() {
  return Schema::string()
      .minLength(1)
      .maxLength(100)
      .pattern("^[^\\x00-\\x1f\\x7f]*$", "must not contain control characters")
      .describe("1-100 characters; leading and trailing spaces are dropped.")
      .example("Support agent");
}

bool contractPart(const std::string& name) {
  for (const auto& c : sdk::contractIdentityCapabilities()) {
    if (c.name == name) return true;
  }
  return false;
}

Schema fieldSchema(const sdk::IdentityField& f) {
  Schema s = f.schema                                       ? *f.schema
             : f.type == sdk::IdentityField::Type::kBoolean ? Schema::boolean()
                                                            : Schema::string();
  return s.nullable();
}

Schema identitySchema() {
  return Schema::object("Identity")
      .required("uuid", Schema::string().format("uuid"))
      .required("name", Schema::string())
      .required("email", Schema::object()
                             .required("id", Schema::string().format("uuid"))
                             .required("address", Schema::string().format("email"))
                             .nullable()
                             .describe("Its inbox; null without the email feature."))
      .required("phone", Schema::object()
                             .required("id", Schema::string().format("uuid"))
                             .required("number", Schema::string().format("e164"))
                             .required("country_code", Schema::string())
                             .nullable()
                             .describe("Its phone number; null until one is provisioned."))
      .required("created_dt", Schema::string().format("date-time"))
      .required("updated_dt", Schema::string().format("date-time"));
}

Schema identityCreateSchema() {
  return Schema::object("IdentityInput")
      .required("name", name())
      .optional("email_identifier",
                Schema::string().nullable().describe(
                    "The inbox's local part: 1-64 of a-z 0-9 . _ -, starting and ending with a "
                    "letter or digit; left out, a readable unique one is made."))
      .optional("domain", Schema::string().nullable().describe(
                              "The inbox's domain, one the server serves (default: its first)."))
      .optional("provision_phone",
                Schema::boolean().nullable().describe("true: give the identity a phone number "
                                                      "too; nothing is created when none can "
                                                      "be had."))
      .optional("country_code", Schema::string().nullable().describe(
                                    "With provision_phone: the number's country, ISO 3166 "
                                    "alpha-2 (default US)."));
}

Schema identityUpdateSchema() {
  return Schema::object("IdentityUpdate").required("name", name());
}

}  // namespace

IdentityShapes composeShapes(const std::vector<sdk::IdentityCapability>& capabilities) {
  Schema identity = identitySchema(), create = identityCreateSchema(),
         update = identityUpdateSchema();
  for (const auto& c : capabilities) {
    if (contractPart(c.name)) continue;
    Schema part =
        c.view ? *c.view
               : Schema::any().describe("The part the plugin providing `" + c.name + "` adds.");
    identity.required(c.name, part.nullable());
    for (const auto& f : c.create_fields) {
      create.optional(f.name, fieldSchema(f));
      if (f.updatable) update.optional(f.name, fieldSchema(f));
    }
  }
  return {identity, create, update, update.partial("IdentityPatch")};
}

Schema voiceAgentInputSchema() {
  return Schema::object("VoiceAgentInput")
      .required("response_url",
                Schema::string().format("uri").maxLength(2048).describe(
                    "Where the identity's calls' speech is posted: http(s), no credentials, "
                    "not a loopback, private or link-local address."))
      .optional("enabled", Schema::boolean().describe("Whether the agent answers (PUT: true "
                                                      "unless given)."));
}

Schema voiceAgentSchema() {
  return Schema::object("VoiceAgent")
      .required("response_url", Schema::string().nullable().describe("null until set."))
      .required("enabled", Schema::boolean())
      .required("updated_dt", Schema::string().format("date-time").nullable());
}

Schema identityActionSchema() {
  return Schema::object("IdentityActionInput")
      .optional("country_code",
                Schema::string().nullable().describe(
                    "provision-phone: the number's country, ISO 3166 alpha-2 (default US)."));
}

}  // namespace svc::plugins::identities
