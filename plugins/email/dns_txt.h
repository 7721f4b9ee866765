// DNS TXT lookups for custom-domain verification, through the system's resolver or a named
// server (`host:port`, for tests against a DNS server on loopback).
#pragma once

#include <string>
#include <vector>

namespace svc::plugins::email {

/// @param name the record's name. @param server `host:port` (IPv4) or empty for the system's.
/// @return the TXT strings (each record's character-strings joined); empty when none exist.
/// @throws std::runtime_error when the lookup itself fails (no answer, server failure).
std::vector<std::string> lookupTxt(const std::string& name, const std::string& server);

}  // namespace svc::plugins::email
