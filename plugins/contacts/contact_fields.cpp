#include "contact_fields.h"

#include "contact_search.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/String.h>
#include <Poco/UTF8String.h>

namespace svc::plugins::contacts {

sdk::Schema contactInputSchema() {
  using sdk::Schema;
  const auto name =
      Schema::string()
          .nullable()
          .maxLength(kMaxNameCharacters)
          .pattern("^[^\\x00-\\x1f\\x7f]*$", "must be text without control characters");
  return Schema::object("ContactInput")
      .optional("email", Schema::string().nullable().format("email").describe(
                             "An email address, unique per identity in any case; null clears."))
      .optional("phone_number",
                Schema::string().nullable().format("e164").describe(
                    "A phone number, stored in E.164 (+14155550100), unique per identity."))
      .optional("display_name", name)
      .optional("nickname", name);
}

sdk::Schema contactSchema() {
  using sdk::Schema;
  const auto text = Schema::string().nullable();
  return Schema::object("Contact")
      .required("uuid", Schema::string().format("uuid"))
      .required("identity", Schema::string().format("uuid"))
      .required("email", text)
      .required("display_name", text)
      .required("nickname", text)
      .required("phone_number", text)
      .required("created_dt", Schema::string().format("date-time"))
      .required("updated_dt", Schema::string().format("date-time"));
}

ContactFields readContactFields(const Poco::JSON::Object::Ptr& body) {
  // The body passed contactInputSchema() (types, formats, lengths, characters): what is left is
  // the normal form.
  ContactFields out;
  auto read = [&](const char* name) -> std::optional<std::string> {
    if (!body || !body->has(name)) return std::nullopt;
    const Poco::Dynamic::Var v = body->get(name);
    if (v.isEmpty()) return std::string();  // null clears
    return Poco::trim(v.convert<std::string>());
  };
  out.email = read("email");
  if (auto phone = read("phone_number")) {
    out.phone_number = phone->empty() ? "" : sdk::normalizeE164(*phone).value_or(*phone);
  }
  out.display_name = read("display_name");
  out.nickname = read("nickname");
  return out;
}

std::string foldCase(std::string_view text) {
  return Poco::UTF8::toLower(std::string(text));
}

}  // namespace svc::plugins::contacts
