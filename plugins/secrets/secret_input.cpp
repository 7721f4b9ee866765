#include "secret_input.h"

#include <svc/sdk/vault.h>

namespace svc::plugins::secrets {

const char* const kKeyRule =
    "must be 1-128 characters of letters, digits and _ . : / - (case-sensitive)";

bool isValidSecretKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyLength) return false;
  for (const char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
    if (!ok) return false;
  }
  return true;
}

sdk::Schema secretInputSchema() {
  using sdk::Schema;
  return Schema::object("SecretInput")
      .required("key", Schema::string()
                           .pattern(kKeyPattern, kKeyRule)
                           .describe("Unique per identity, case-sensitive.")
                           .example("OPENAI_API_KEY"))
      .required("value", Schema::string().minLength(1).describe(
                             "Up to 65,536 bytes; once the account has end-to-end encryption, an "
                             "`e2e::` sealed box of them."))
      .optional("notes", Schema::string().nullable().describe(
                             "Up to 16,384 bytes, sealed likewise; null or \"\" is none."));
}

sdk::Schema secretSchema() {
  using sdk::Schema;
  return Schema::object("Secret")
      .required("uuid", Schema::string().format("uuid"))
      .required("identity", Schema::string().format("uuid"))
      .required("key", Schema::string())
      .optional("value", Schema::string().describe("Absent from a names-only list."))
      .optional("notes", Schema::string().describe("Absent from a names-only list."))
      .required("created_dt", Schema::string().format("date-time"))
      .required("updated_dt", Schema::string().format("date-time"));
}

sdk::Schema secretNamesSchema() {
  using sdk::Schema;
  return Schema::object()
      .required("uuid", Schema::string().format("uuid"))
      .required("identity", Schema::string().format("uuid"))
      .required("key", Schema::string())
      .required("created_dt", Schema::string().format("date-time"))
      .required("updated_dt", Schema::string().format("date-time"))
      .describe("The secret without its value and notes.");
}

namespace {

// The bound on a protected field as sent: a sealed value is longer than what it seals.
std::optional<std::string> tooLong(const std::string& text, std::size_t max_plain) {
  const bool sealed =
      std::string_view(text).substr(0, sdk::kSealedValuePrefix.size()) == sdk::kSealedValuePrefix;
  const std::size_t max = sealed ? sealedLength(max_plain) : max_plain;
  if (text.size() <= max) return std::nullopt;
  return "must be at most " + std::to_string(max_plain) + " bytes" +
         (sealed ? " before sealing (" + std::to_string(max) + " characters sealed)" : "");
}

}  // namespace

SecretInput readSecretInput(const sdk::Request& r, WriteMode mode) {
  // Presence, types and the key's rule are the route's declaration's (secretInputSchema()); what
  // is left is the bound in bytes of the values as sent.
  SecretInput in;
  in.key = r.stringField("key");
  in.value = r.stringField("value");
  in.notes = r.stringField("notes");
  sdk::FieldErrors errors;
  if (in.value) {
    if (auto why = tooLong(*in.value, kMaxValueBytes)) errors.add("value", *why);
  }
  if (in.notes) {
    if (auto why = tooLong(*in.notes, kMaxNotesBytes)) errors.add("notes", *why);
  }
  errors.throwIfAny();
  // Null notes clear them; PUT replaces the whole secret, so its absent notes are none.
  const bool notes_null = r.json && r.json->has("notes") && r.json->isNull("notes");
  if (notes_null || (mode != WriteMode::kPatch && !in.notes)) in.notes = "";
  return in;
}

}  // namespace svc::plugins::secrets
