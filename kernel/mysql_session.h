// MySQL/MariaDB sessions that cost few round trips: Poco's MySQL session, with statements that stay
// prepared on their connection (executed again without a new prepare and close) and transactions
// begun and ended with one command each (BEGIN, COMMIT, ROLLBACK) instead of switching autocommit.
// Registered as the Poco Data connector named kMysqlConnector; plugins' code is unchanged.
#pragma once

#ifdef SVC_WITH_MYSQL

#include <string>

namespace svc::kernel {

/// The connector's name for Poco::Data::Session and SessionPool.
extern const char* const kMysqlConnector;

/// Registers the connector (once; registerDataConnectors() calls it).
void registerMysqlConnector();

/// The most statements one connection keeps prepared (the least recently used is closed first).
constexpr std::size_t kPreparedPerConnection = 64;

}  // namespace svc::kernel

#endif
