// What a client may write to a password entry, checked before anything is stored. Every bad
// field is named in one 400. Limits (bytes of the value as sent, a sealed `e2e::` value included):
// domain 253 characters, username and password 4 KiB, notes 64 KiB.
//
// `domain` is a host name or a URL-ish label (`example.com`, `https://example.com/login`): no
// spaces or control characters, compared and stored lower-case. username, password and notes are
// the protected fields (kept by the vault); an empty username or notes means none, a password is
// never empty. username and password carry no control characters; notes may span lines.
#pragma once

#include <svc/sdk/http.h>

#include <optional>
#include <string>

namespace svc::plugins::passwords {

inline constexpr std::size_t kMaxDomainCharacters = 253;
inline constexpr std::size_t kMaxUsernameBytes = 4096;
inline constexpr std::size_t kMaxPasswordBytes = 4096;
inline constexpr std::size_t kMaxNotesBytes = 65536;

/// How a write treats absent fields.
enum class EntryWrite {
  kCreate,   ///< POST: domain required; username and notes default to none; no password: the
             ///< caller generates one.
  kReplace,  ///< PUT: every field required.
  kPatch,    ///< PATCH: only the fields given change.
};

/// The fields a write gives (absent: not given, or null).
struct EntryFields {
  std::optional<std::string> domain, username, password, notes;
};

/// @param request the request with its JSON body. @param kind the kind of write.
/// @return the given fields, checked; domain lower-cased and trimmed.
/// @throws HttpError 400 `invalid` naming every bad or missing field.
EntryFields readEntryFields(const sdk::Request& request, EntryWrite kind);

/// @param raw a domain as a client gave it (a field or the `domain` filter).
/// @return it trimmed and lower-cased. @throws HttpError 400 `invalid` naming `field`.
std::string normalizeDomain(const std::string& raw, const std::string& field = "domain");

}  // namespace svc::plugins::passwords
