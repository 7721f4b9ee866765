#include "secret_input.h"

#include <svc/sdk/vault.h>

#include <set>
#include <tuple>
#include <vector>

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
  sdk::FieldErrors errors;
  std::set<std::string> bad;
  auto problem = [&](const std::string& field, const std::string& why) {
    errors.add(field, why);
    bad.insert(field);
  };
  // A field: absent, null (for notes: none), or a string; anything else is named.
  auto text = [&](const std::string& name, bool& is_null) -> std::optional<std::string> {
    is_null = false;
    if (!r.json || !r.json->has(name)) return std::nullopt;
    const Poco::Dynamic::Var v = r.json->get(name);
    if (v.isEmpty()) {
      is_null = true;
      return std::nullopt;
    }
    if (!v.isString()) {
      problem(name, "must be a string");
      return std::nullopt;
    }
    return v.extract<std::string>();
  };
  const bool whole = mode != WriteMode::kPatch;
  SecretInput in;
  bool key_null = false, value_null = false, notes_null = false;
  in.key = text("key", key_null);
  in.value = text("value", value_null);
  in.notes = text("notes", notes_null);

  if (in.key && !isValidSecretKey(*in.key)) problem("key", kKeyRule);
  if (in.value && in.value->empty()) {
    problem("value", "must not be empty");
  } else if (in.value) {
    if (auto why = tooLong(*in.value, kMaxValueBytes)) problem("value", *why);
  }
  if (in.notes) {
    if (auto why = tooLong(*in.notes, kMaxNotesBytes)) problem("notes", *why);
  }
  for (const auto& [name, missing, is_null] : {std::make_tuple("key", !in.key, key_null),
                                               std::make_tuple("value", !in.value, value_null)}) {
    if (!missing || bad.count(name)) continue;
    if (whole) {
      problem(name, "this field is required");
    } else if (is_null) {
      problem(name, "must be a string, not null");
    }
  }
  errors.throwIfAny();
  // Null notes clear them; PUT replaces the whole secret, so its absent notes are none.
  if (notes_null || (whole && !in.notes)) in.notes = "";
  return in;
}

}  // namespace svc::plugins::secrets
