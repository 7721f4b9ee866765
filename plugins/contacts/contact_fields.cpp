#include "contact_fields.h"

#include "contact_search.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/String.h>
#include <Poco/UTF8String.h>

#include <map>
#include <vector>

namespace svc::plugins::contacts {

ContactFields readContactFields(const Poco::JSON::Object::Ptr& body) {
  ContactFields out;
  std::map<std::string, std::string> errors;  // field -> problem
  auto read = [&](const char* name) -> std::optional<std::string> {
    if (!body || !body->has(name)) return std::nullopt;
    const Poco::Dynamic::Var v = body->get(name);
    if (v.isEmpty()) return std::string();  // null clears
    if (!v.isString()) {
      errors[name] = "must be a string or null";
      return std::nullopt;
    }
    return Poco::trim(v.extract<std::string>());
  };
  if (auto email = read("email")) {
    if (!email->empty() && !sdk::isValidEmailAddress(*email)) {
      errors["email"] = "must be an email address such as name@example.com";
    } else {
      out.email = *email;
    }
  }
  if (auto phone = read("phone_number")) {
    if (phone->empty()) {
      out.phone_number = "";
    } else if (auto e164 = sdk::normalizeE164(*phone)) {
      out.phone_number = *e164;
    } else {
      errors["phone_number"] = "must be a phone number in E.164 form, such as +12025550123";
    }
  }
  for (auto [name, slot] : {std::make_pair("display_name", &out.display_name),
                            std::make_pair("nickname", &out.nickname)}) {
    auto text = read(name);
    if (!text) continue;
    if (!sdk::isValidUtf8(*text) || sdk::hasControlCharacter(*text) ||
        characterCount(*text) > kMaxNameCharacters) {
      errors[name] = "must be at most " + std::to_string(kMaxNameCharacters) +
                     " characters of UTF-8 text without control characters";
    } else {
      *slot = *text;
    }
  }
  sdk::FieldErrors all;
  for (const auto& [field, problem] : errors) all.add(field, problem);
  all.throwIfAny();
  return out;
}

std::string foldCase(std::string_view text) {
  return Poco::UTF8::toLower(std::string(text));
}

}  // namespace svc::plugins::contacts
