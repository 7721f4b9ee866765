#include "identity_shapes.h"

#include <stdexcept>

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

// The SDK declares no body for an action (IdentityCapability::actions is a list of names), so
// there is nothing the kernel could check a field against: the route takes no field at all rather
// than pass unchecked input to a plugin. An action that needs input is its plugin's own route.
Schema otherActionSchema(const std::vector<std::string>& actions) {
  std::string declared;
  for (const auto& a : actions) declared += (declared.empty() ? "" : ", ") + a;
  return Schema::object("IdentityActionInput")
      .describe(
          "No fields (an empty object or no body): the SDK declares no body for another "
          "plugin's action, so none is checked or passed on. " +
          (declared.empty() ? std::string("No enabled plugin declares an action on this "
                                          "server: every name answers 404.")
                            : "Actions the enabled plugins declare: " + declared + "."));
}

}  // namespace

IdentityShapes composeShapes(const std::vector<sdk::IdentityCapability>& capabilities) {
  Schema identity = identitySchema(), create = identityCreateSchema(),
         update = identityUpdateSchema();
  std::vector<std::string> actions;
  for (const auto& c : capabilities) {
    if (contractPart(c.name)) continue;
    actions.insert(actions.end(), c.actions.begin(), c.actions.end());
    Schema part =
        c.view ? *c.view
               : Schema::any().describe("The part the plugin providing `" + c.name + "` adds.");
    identity.required(c.name, part.nullable());
    for (const auto& f : c.create_fields) {
      create.optional(f.name, fieldSchema(f));
      if (f.updatable) update.optional(f.name, fieldSchema(f));
    }
  }
  return {identity, create, update, update.partial("IdentityPatch"), otherActionSchema(actions)};
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

ContractAction contractAction(const std::string& action) {
  if (action == "provision-phone") {
    // The country's rule is the phone plugin's (a 400 naming country_code), as on create: without
    // that plugin the answer is feature_not_enabled whatever the code.
    return {"Give an identity a phone number {country_code?}; answers the identity with it.",
            Schema::object("ProvisionPhoneInput")
                .optional("country_code",
                          Schema::string()
                              .nullable()
                              .describe("The number's country, ISO 3166 alpha-2 (default US).")
                              .example("US")),
            200,
            {{409, "phone_exists", "the identity has a phone number (it can have one)"},
             {409, "conflict", "the account holds as many numbers as this server allows"},
             {503, "service_unavailable",
              "no phone number can be had now (Retry-After says when to try)"}}};
  }
  throw std::logic_error("the contract's identity action '" + action +
                         "' has no route shape in the identities plugin");
}

}  // namespace svc::plugins::identities
