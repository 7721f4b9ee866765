// What a database failure means for the request that met it: a conflict a retry resolves, a
// database this server cannot reach (both leave nothing applied), or a commit whose outcome is
// unknown. SqlDatabase::transaction retries the first two; the pipeline answers them 503.
#pragma once

#include <stdexcept>
#include <string>

namespace svc::kernel {

/// @param message an exception's text (Poco's displayText()). @return whether it is a database
/// condition that passes and that rolled the transaction back: a deadlock's victim, a Galera
/// certification failure (both MySQL 1213), a lock waited for too long (1205), a Galera node not
/// (yet) taking queries (1047, "WSREP has not yet prepared node"), or SQLite busy.
bool isTransientDatabaseError(const std::string& message);

/// @return whether the message says the database server could not be reached or the connection
/// to it was lost (MySQL client errors 2002, 2003, 2006, 2013), or the pool had no session.
bool isDatabaseUnreachableError(const std::string& message);

/// @return the text of an exception: Poco's displayText(), what() otherwise.
std::string databaseErrorText(const std::exception& e);

/// Thrown by SqlDatabase::transaction when the connection was lost while COMMIT was on its way:
/// the database may have applied the transaction or not. Never retried (it might apply twice).
class CommitOutcomeUnknown : public std::runtime_error {
 public:
  explicit CommitOutcomeUnknown(const std::string& why)
      : std::runtime_error(
            "the connection to the database was lost during COMMIT; whether the "
            "transaction was applied is unknown: " +
            why) {}
};

/// How SqlDatabase::transaction retries: attempts in all, and the pause before attempt n (n >= 2),
/// exponential with full jitter: uniformly random in [0, min(cap, base * 2^(n-2))].
struct RetryPolicy {
  int attempts = 6;
  int base_ms = 8;
  int cap_ms = 250;
  int pauseMillis(int attempt) const;
};

}  // namespace svc::kernel
