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

// A protected field: a string of at most max bytes; line breaks and tabs only where allowed.
void checkProtected(sdk::FieldErrors& errors, const std::string& field, const std::string& value,
                    std::size_t max, bool multiline) {
  if (!sdk::isValidUtf8(value)) {
    errors.add(field, "must be valid UTF-8");
  } else if (value.size() > max) {
    errors.add(field, "at most " + std::to_string(max) + " bytes");
  } else if (multiline ? sdk::hasControlCharacter(Poco::translate(value, "\r\n", "  "), true)
                       : sdk::hasControlCharacter(value)) {
    errors.add(field, multiline ? "must not contain control characters other than line breaks "
                                  "and tabs"
                                : "must not contain control characters");
  }
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
  EntryFields f;
  sdk::FieldErrors errors;
  const bool replace = kind == EntryWrite::kReplace;
  const std::string required =
      replace ? "this field is required (PUT replaces every field; use PATCH to change some)"
              : "this field is required";
  auto read = [&](const char* name, std::optional<std::string>& into, bool needed) {
    errors.collect([&] { into = r.stringField(name); });
    if (!into && needed && (!r.json || !r.json->has(name) || r.json->isNull(name))) {
      errors.add(name, required);
    }
  };
  read("domain", f.domain, kind != EntryWrite::kPatch);
  read("username", f.username, replace);
  read("password", f.password, replace);
  read("notes", f.notes, replace);
  // In a PATCH, null clears what may be empty and is refused where a value is needed.
  auto isNull = [&](const char* name) {
    return r.json && r.json->has(name) && r.json->isNull(name);
  };
  if (kind == EntryWrite::kPatch) {
    for (const char* name : {"username", "notes"}) {
      if (isNull(name)) (name[0] == 'u' ? f.username : f.notes) = std::string();
    }
    for (const char* name : {"domain", "password"}) {
      if (isNull(name)) errors.add(name, "must not be null");
    }
  }
  if (f.domain) {
    errors.collect([&] { f.domain = normalizeDomain(*f.domain); });
  }
  if (f.username) checkProtected(errors, "username", *f.username, kMaxUsernameBytes, false);
  if (f.password) {
    if (f.password->empty()) {
      errors.add("password", kind == EntryWrite::kCreate
                                 ? "must not be empty (leave it out to have one generated)"
                                 : "must not be empty");
    } else {
      checkProtected(errors, "password", *f.password, kMaxPasswordBytes, false);
    }
  }
  if (f.notes) checkProtected(errors, "notes", *f.notes, kMaxNotesBytes, true);
  errors.throwIfAny();
  return f;
}

}  // namespace svc::plugins::passwords
