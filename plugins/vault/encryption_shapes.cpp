#include "encryption_shapes.h"

namespace svc::plugins::vault {

using sdk::Schema;

namespace {

// Canonical, padded standard base64 of exactly n bytes, as sdk::base64 writes it: the unused bits
// of the last character are zero, so it has one spelling.
Schema base64Of(int chars, const char* last, const char* padding, const char* what) {
  return Schema::string().pattern(
      "^[A-Za-z0-9+/]{" + std::to_string(chars - 1) + "}[" + last + "]" + padding + "$",
      std::string("must be standard base64 (with padding) of ") + what);
}

constexpr const char* kTwoBitsFree = "AEIMQUYcgkosw048";  // a byte and a third left over
constexpr const char* kFourBitsFree = "AQgw";             // a third of a byte left over

Schema kdfSchema() {
  return Schema::object()
      .optional("alg", Schema::oneOf({"argon2id"}))
      .optional("t", Schema::integer().minimum(3).maximum(100).describe(
                         "crypto_pwhash opslimit (default 3, never less)."))
      .optional("m", Schema::integer()
                         .minimum(65536)
                         .maximum(4 * 1024 * 1024)
                         .describe("memlimit in KiB (default 65536: 64 MiB, never less)."))
      .optional("p", Schema::integer().minimum(1).maximum(1));
}

}  // namespace

Schema encryptionInputSchema() {
  return Schema::object("EncryptionInput")
      // 16 bytes: 22 characters and two of padding.
      .required("salt", base64Of(22, kFourBitsFree, "==", "16 bytes")
                            .describe("The Argon2id salt: 16 random bytes."))
      // 32 bytes: 43 characters and one of padding.
      .required("public_key", base64Of(43, kTwoBitsFree, "=", "32 bytes (an X25519 key)")
                                  .describe("The X25519 public key values are sealed to."))
      // A sealed box of `svc-e2e-verify`: 62 bytes, 83 characters and one of padding.
      .required("verifier",
                base64Of(83, kTwoBitsFree, "=", "a sealed box of `svc-e2e-verify` (62 bytes)")
                    .describe("A sealed box of `svc-e2e-verify` to public_key."))
      .optional("kdf", kdfSchema().nullable().describe(
                           "Larger Argon2id parameters than the defaults, stored and returned."))
      .optional("rekey_token", Schema::string().describe("A passphrase change: the token POST "
                                                         "/api/encryption/rekey/ answered."))
      .optional("records",
                Schema::array(
                    Schema::object("RekeyedRecord")
                        .required("holder", Schema::string())
                        .required("uuid", Schema::string())
                        .required("fields",
                                  Schema::object().additional(Schema::string().nullable().describe(
                                      "`e2e::<base64>` sealed to the new public_key; null drops a "
                                      "value listed as null (it does not decrypt)."))))
                    .nullable()
                    .describe("With rekey_token: every value the lease listed, sealed to the new "
                              "key."));
}

Schema encryptionSchema() {
  return Schema::object("Encryption")
      .required("salt", Schema::string())
      .required("public_key", Schema::string())
      .required("verifier", Schema::string())
      .required("kdf", Schema::object()
                           .required("alg", Schema::oneOf({"argon2id"}))
                           .required("t", Schema::integer())
                           .required("m", Schema::integer())
                           .required("p", Schema::integer()))
      .required("created_dt", Schema::string().format("date-time"))
      .required("updated_dt", Schema::string().format("date-time"))
      .required("rekey", Schema::object()
                             .required("expires_dt", Schema::string().format("date-time"))
                             .nullable()
                             .describe("A passphrase change holding the vault, until it ends."));
}

Schema rekeySchema() {
  return Schema::object("RekeyLease")
      .required("rekey_token", Schema::string().describe("Send it back with PUT, or DELETE."))
      .required("expires_dt", Schema::string().format("date-time"))
      .required("records",
                Schema::array(Schema::object("RekeyRecord")
                                  .required("holder", Schema::string())
                                  .required("uuid", Schema::string())
                                  .required("identity", Schema::string().nullable())
                                  .required("fields", Schema::object().additional(
                                                          Schema::string().nullable().describe(
                                                              "The value as stored (null: it "
                                                              "does not decrypt)."))))
                    .describe("Every protected value of the account, to seal to the new key."));
}

Schema rekeyEndSchema() {
  return Schema::object("RekeyEnd")
      .required("rekey_token", Schema::string().minLength(1).describe(
                                   "The token POST /api/encryption/rekey/ answered: only the "
                                   "lease's own client ends it."));
}

Schema rotationSchema() {
  return Schema::object("KeyRotation")
      .required("key_id", Schema::string())
      .required("reencrypted", Schema::integer())
      .required("failed", Schema::integer())
      .required("retired", Schema::array(Schema::string()));
}

}  // namespace svc::plugins::vault
