#include "database_errors.h"

#include <Poco/Exception.h>

#include <algorithm>
#include <initializer_list>
#include <random>

namespace svc::kernel {

namespace {

bool mentions(const std::string& message, std::initializer_list<const char*> texts) {
  for (const char* text : texts) {
    if (message.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

bool isTransientDatabaseError(const std::string& message) {
  return mentions(message, {"Deadlock found when trying to get lock", "Lock wait timeout exceeded",
                            "WSREP detected deadlock/conflict",
                            "WSREP has not yet prepared node for application use",
                            "database is locked", "database table is locked"});
}

bool isDatabaseUnreachableError(const std::string& message) {
  return mentions(message,
                  {"Can't connect to MySQL server", "Can't connect to server",
                   "Can't connect to local MySQL server", "Can't connect to local server",
                   "MySQL server has gone away", "Server has gone away",
                   "Lost connection to MySQL server", "Lost connection to server",
                   "Connection refused", "No more sessions available from the session pool"});
}

std::string databaseErrorText(const std::exception& e) {
  const auto* poco = dynamic_cast<const Poco::Exception*>(&e);
  return poco ? poco->displayText() : std::string(e.what());
}

int RetryPolicy::pauseMillis(int attempt) const {
  thread_local std::minstd_rand random{std::random_device{}()};
  const int shift = std::clamp(attempt - 2, 0, 16);
  const int ceiling = std::min(cap_ms, base_ms << shift);
  return std::uniform_int_distribution<int>(0, ceiling)(random);
}

}  // namespace svc::kernel
