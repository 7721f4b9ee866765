#include "entry_input.h"

#include <svc/sdk/http.h>

#include <svc/sdk/util.h>

#include <Poco/String.h>
#include <Poco/UTF8String.h>

namespace svc::plugins::passwords {

namespace {

std::size_t characters(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

bool hasSpace(const std::string& text) {
  return text.find_first_of(" \t\r\n\v\f") != std::string::npos;
}

// A protected field's bound, in bytes of the value as sent.
void checkProtected(sdk::FieldErrors& errors, const std::string& field, const std::string& value,
                    std::size_t max) {
  if (value.size() > max) errors.add(field, "at most " + std::to_string(max) + " bytes");
}

}  // namespace

std::string normalizeDomain(const std::string& raw, const std::string& field) {
  const std::string domain = Poco::trim(raw);
  if (domain.empty()) throw sdk::HttpError::invalid(field, "must not be empty");
  if (!sdk::isValidUtf8(domain)) throw sdk::HttpError::invalid(field, "must be valid UTF-8");
  if (sdk::hasControlCharacter(domain) || hasSpace(domain)) {
    throw sdk::HttpError::invalid(field,
                                  "a host name or URL, without spaces or control characters");
  }
  if (characters(domain) > kMaxDomainCharacters) {
    throw sdk::HttpError::invalid(field, "at most 253 characters");
  }
  return Poco::UTF8::toLower(domain);
}

EntryFields readEntryFields(const sdk::Request& r, EntryWrite kind) {
  // Presence, types and characters are the route's declaration's (entryInputSchema(kind));
  // what is left: the domain's normal form, and the protected fields' bounds in bytes as sent.
  EntryFields f;
  sdk::FieldErrors errors;
  f.domain = r.stringField("domain");
  f.username = r.stringField("username");
  f.password = r.stringField("password");
  f.notes = r.stringField("notes");
  // In a PATCH, null clears what may be empty (the declaration refuses it elsewhere).
  if (kind == EntryWrite::kPatch && r.json) {
    if (r.json->has("username") && r.json->isNull("username")) f.username = std::string();
    if (r.json->has("notes") && r.json->isNull("notes")) f.notes = std::string();
  }
  if (f.domain) {
    errors.collect([&] { f.domain = normalizeDomain(*f.domain); });
  }
  if (f.username) checkProtected(errors, "username", *f.username, kMaxUsernameBytes);
  if (f.password) checkProtected(errors, "password", *f.password, kMaxPasswordBytes);
  if (f.notes) checkProtected(errors, "notes", *f.notes, kMaxNotesBytes);
  errors.throwIfAny();
  return f;
}

}  // namespace svc::plugins::passwords
