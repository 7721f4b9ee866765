// Local users' passwords: scrypt (OpenSSL) with a random salt, in a self-describing string.
#pragma once

#include <string>

namespace svc::plugins::auth {

/// @return `scrypt$N$r$p$<salt>$<hash>` for the password.
std::string hashPassword(const std::string& password);
/// @return true when password matches the stored hash (constant-time comparison).
bool verifyPassword(const std::string& password, const std::string& stored);

}  // namespace svc::plugins::auth
