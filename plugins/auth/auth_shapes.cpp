#include "auth_shapes.h"

#include "user_code.h"

#include <string>

namespace svc::plugins::auth {

using sdk::Schema;

Schema plainText(std::size_t max) {
  return Schema::string().maxLength(max).pattern("^[^\\x00-\\x1f\\x7f]*$",
                                                 "must not contain control characters");
}

namespace {

Schema uuid() {
  return Schema::string().format("uuid");
}

Schema timestamp() {
  return Schema::string().format("date-time");
}

// Named "" where it may be null: a component's name stands for one shape.
Schema userSchema(const std::string& name = "User") {
  return Schema::object(name)
      .required("id", uuid())
      .required("email", Schema::string())
      .required("name", Schema::string());
}

}  // namespace

Schema keySchema() {
  return Schema::object("Key")
      .required("id", uuid())
      .required("kind", Schema::oneOf({"management", "identity"}))
      .required("label", Schema::string())
      .required("prefix", Schema::string()
                              .describe("The key's start, to tell keys apart.")
                              .example("svc_mgmt_4fQa"))
      .required("identity", uuid().nullable().describe("An identity key's identity."))
      .required("created_dt", timestamp())
      .required("last_used_dt", timestamp().nullable());
}

Schema newKeySchema() {
  return Schema::object("NewKey")
      .required("id", uuid())
      .required("key", Schema::string().describe(
                           "The key: shown this once, keep it (only its hash is stored)."))
      .required("kind", Schema::oneOf({"management", "identity"}))
      .optional("identity", uuid().describe("An identity key's identity."))
      .required("label", Schema::string())
      .required("prefix", Schema::string())
      .required("created_dt", timestamp());
}

Schema deviceLoginSchema() {
  const std::string letters = kUserCodeAlphabet;
  return Schema::object("DeviceLogin")
      .required("device_code",
                Schema::string().describe("Poll POST /api/auth/device/token/ with it."))
      .required("user_code",
                Schema::string()
                    .pattern("^[" + letters + "]{4}-[" + letters + "]{4}$", "XXXX-XXXX")
                    .describe("What the person confirms at verification_uri.")
                    .example("BDFG-HJKL"))
      .required("verification_uri", Schema::string().format("uri"))
      .required("verification_uri_complete", Schema::string().format("uri"))
      .required("expires_in", Schema::integer().minimum(1).describe("Seconds the code lives."))
      .required("interval", Schema::integer().minimum(0).describe("Seconds between polls."));
}

Schema deviceTokensSchema() {
  return Schema::object("DeviceTokens")
      .required("access", Schema::string().describe("A JWT access token (1 hour)."))
      .required("refresh", Schema::string().describe("A refresh token, rotated on every use."))
      .required("management_key", Schema::string().describe("A management key of the account."))
      .required("user", userSchema())
      .required("access_token", Schema::string().describe("access, as OAuth clients read it."))
      .required("refresh_token", Schema::string().describe("refresh, as OAuth clients read it."))
      .required("token_type", Schema::oneOf({"Bearer"}))
      .required("expires_in", Schema::integer().minimum(1));
}

Schema refreshInputSchema() {
  return Schema::object("RefreshInput")
      .required("refresh", Schema::string().minLength(1).maxLength(200).describe(
                               "A refresh token (`svc_rt_...`)."));
}

Schema tokenPairSchema() {
  return Schema::object("TokenPair")
      .required("access", Schema::string().describe("A new JWT access token (1 hour)."))
      .required("refresh", Schema::string().describe(
                               "The next refresh token; the one presented no longer works."));
}

Schema jwksSchema() {
  return Schema::object("Jwks").required("keys",
                                         Schema::array(Schema::object("Jwk")
                                                           .required("kty", Schema::string())
                                                           .required("use", Schema::string())
                                                           .required("alg", Schema::string())
                                                           .required("kid", Schema::string())
                                                           .required("n", Schema::string())
                                                           .required("e", Schema::string())));
}

Schema whoamiSchema() {
  return Schema::object("WhoAmI")
      .required("kind", Schema::oneOf({"user", "management", "identity"}))
      .required("account", Schema::object().required("id", uuid()))
      .required("user", userSchema("").nullable())
      .required("identity",
                Schema::object()
                    .required("uuid", uuid())
                    .required("name", Schema::string())
                    .nullable()
                    .describe("The identity the credential acts for (an identity key's own)."))
      .required("key", Schema::object()
                           .required("id", uuid())
                           .required("label", Schema::string())
                           .required("prefix", Schema::string())
                           .nullable()
                           .describe("The key presented; null for an access token."));
}

}  // namespace svc::plugins::auth
