#include "entry_shapes.h"

#include "password_generator.h"

namespace svc::plugins::passwords {

using sdk::Schema;

namespace {

// A host name or a URL-ish label; spaces around it are dropped (normalizeDomain).
Schema domain() {
  return Schema::string()
      .pattern("^\\s*[^\\s\\x00-\\x1f\\x7f]+\\s*$",
               "must be a host name or URL without spaces or control characters")
      .describe("A host name or URL (at most 253 characters), compared lower-case.")
      .example("example.com");
}

// A protected field: the vault keeps it; its length is bounded in bytes as sent (a sealed
// `e2e::` value included), which the handler checks.
Schema protectedText(bool multiline) {
  return multiline ? Schema::string().pattern(
                         "^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]*$",
                         "must not contain control characters other than line breaks and tabs")
                   : Schema::string().pattern("^[^\\x00-\\x1f\\x7f]*$",
                                              "must not contain control characters");
}

}  // namespace

Schema entryInputSchema(EntryWrite kind) {
  const auto username = protectedText(false).describe(
      "Up to 4,096 bytes; once the account has end-to-end encryption, an `e2e::` sealed box.");
  const auto password =
      protectedText(false).minLength(1).describe("Up to 4,096 bytes, not empty; sealed likewise.");
  const auto notes = protectedText(true).describe("Up to 65,536 bytes; sealed likewise.");
  switch (kind) {
    case EntryWrite::kCreate:
      return Schema::object("PasswordEntryInput")
          .required("domain", domain())
          .optional("username", username)
          .optional("password",
                    Schema(password).describe(
                        "Left out: a generated one is stored and answered (accounts without "
                        "end-to-end encryption only)."))
          .optional("notes", notes);
    case EntryWrite::kReplace:
      return Schema::object("PasswordEntryReplace")
          .required("domain", domain())
          .required("username", username)
          .required("password", password)
          .required("notes", notes);
    case EntryWrite::kPatch:
      break;
  }
  return Schema::object("PasswordEntryPatch")
      .optional("domain", domain())
      .optional("username", Schema(username).nullable())
      .optional("password", password)
      .optional("notes", Schema(notes).nullable());
}

Schema entrySchema() {
  const auto omitted = [](const char* what) {
    return Schema::string().describe(std::string(what) + " Absent from a names-only list.");
  };
  return Schema::object("PasswordEntry")
      .required("uuid", Schema::string().format("uuid"))
      .required("identity", Schema::string().format("uuid"))
      .required("domain", Schema::string())
      .optional("username", omitted("\"\" when none."))
      .optional("password", omitted(""))
      .optional("notes", omitted("\"\" when none."))
      .required("created_dt", Schema::string().format("date-time"))
      .required("updated_dt", Schema::string().format("date-time"));
}

Schema entryNamesSchema() {
  return Schema::object()
      .required("uuid", Schema::string().format("uuid"))
      .required("identity", Schema::string().format("uuid"))
      .required("domain", Schema::string())
      .required("created_dt", Schema::string().format("date-time"))
      .required("updated_dt", Schema::string().format("date-time"))
      .describe("The entry without username, password and notes.");
}

std::vector<sdk::Param> listParams() {
  std::vector<sdk::Param> out = sdk::pageParams();
  out.push_back({"domain", Schema::string(), false, "Exactly this domain (any case)."});
  out.push_back({"search", Schema::string().maxLength(1024), false,
                 "A substring of the domain (any case); the protected fields are not searched."});
  out.push_back({"values", Schema::boolean(), false,
                 "false: names only, nothing decrypted or sent (default true)."});
  return out;
}

std::vector<sdk::Param> generatorParams() {
  std::vector<sdk::Param> out = {
      {"length", Schema::integer().minimum(4).maximum(128), false, "4-128 (default 16)."}};
  for (const char* flag : {"digits", "lowercase", "uppercase", "special"}) {
    out.push_back({flag, Schema::boolean(), false,
                   std::string("Whether it holds ") + flag + " (default true); at least one."});
  }
  out.push_back({"exclude_chars", Schema::string(), false,
                 "Characters no class may use (look-alikes such as 0O1l)."});
  return out;
}

}  // namespace svc::plugins::passwords
