// What a contact is made of, as clients send it: reading and checking the fields of a create or
// PATCH body (every bad field named in one 400, nothing half-read), and the folding that makes
// email addresses and search case-insensitive.
#pragma once

#include <svc/sdk/schema.h>

#include <Poco/JSON/Object.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace svc::plugins::contacts {

/// The most characters a display name or nickname may have.
inline constexpr std::size_t kMaxNameCharacters = 200;

/// The fields a body sets: nullopt leaves a field as it is; an empty string clears it (the body
/// said null, or ""). Present values are checked and normalized: the email trimmed, the phone
/// number in E.164, the names trimmed.
struct ContactFields {
  std::optional<std::string> email, phone_number, display_name, nickname;
};

/// @return what create and PATCH take: the kernel checks bodies against it before the handler
/// runs, naming every bad field at once.
sdk::Schema contactInputSchema();
/// @return a contact as the API answers it and the contact.* events carry it.
sdk::Schema contactSchema();

/// Reads a create or PATCH body that passed contactInputSchema(). @param body the JSON body
/// (null reads as empty). @return its fields, in their normal form.
ContactFields readContactFields(const Poco::JSON::Object::Ptr& body);

/// @param text valid UTF-8. @return it lower-cased (Unicode simple case folding), as stored for
/// case-insensitive comparison and search.
std::string foldCase(std::string_view text);

}  // namespace svc::plugins::contacts
