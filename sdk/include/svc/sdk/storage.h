// Storage: pooled database sessions, transactions and per-plugin migrations.
//
// The kernel owns one pool (SQLite by default, MySQL/MariaDB by URL). A plugin names its
// migrations, ordered by version, with one statement list per SQL dialect where they differ; the
// kernel applies the missing ones at start, each in a transaction, and records them per plugin.
// Portable column choices: ids CHAR(36), times BIGINT microseconds since the epoch, booleans
// SMALLINT, indexed strings VARCHAR(n), large text TEXT (LONGTEXT on MySQL).
#pragma once

#include <Poco/Data/Session.h>

#include <functional>
#include <string>
#include <vector>

namespace svc::sdk {

/// The SQL dialect of the configured database.
enum class Dialect { kSqlite, kMysql };

/// One schema step of a plugin.
struct Migration {
  int version = 0;                  ///< 1, 2, 3... applied in order, each once.
  std::string description;          ///< What it does, for the log.
  std::vector<std::string> sqlite;  ///< Statements for SQLite, executed in order.
  std::vector<std::string> mysql;   ///< Statements for MySQL/MariaDB, executed in order.

  /// A migration whose statements are the same in both dialects.
  /// @param version its number. @param description what it does. @param statements the SQL.
  /// @return the migration.
  static Migration portable(int version, std::string description,
                            std::vector<std::string> statements);
  /// As portable(), but MySQL/MariaDB makes each CREATE TABLE in utf8mb4 with binary collation:
  /// text holds any character (MySQL's "utf8" cannot store emoji) and compares byte for byte, as
  /// on SQLite. @param version its number. @param description what it does. @param statements
  /// the SQL. @return the migration.
  static Migration portableUtf8(int version, std::string description,
                                std::vector<std::string> statements);
};

/// The kernel's database.
class Database {
 public:
  virtual ~Database();
  /// @return the dialect, for the few queries that must differ.
  virtual Dialect dialect() const = 0;
  /// @return a session from the pool (returned to the pool when the last copy goes away).
  /// @throws Poco::Data::SessionPoolExhaustedException when none frees up in time.
  virtual Poco::Data::Session session() = 0;
  /// Runs work in a transaction: commits when it returns, rolls back and rethrows when it throws.
  /// On SQLite, write transactions from this process are serialized (SQLite allows one writer).
  /// Transactions do not nest: calling this from inside work throws std::logic_error.
  /// When the database gives the transaction up in a way a retry resolves (a deadlock, a lock
  /// wait timeout, a cluster's certification conflict, a connection lost before COMMIT), it is
  /// rolled back and work runs again from the start, a few times at most: work must set, not
  /// add to, what it hands back, and leave effects outside the database to after the commit.
  /// @param work the statements to run, given the transaction's session.
  virtual void transaction(const std::function<void(Poco::Data::Session&)>& work) = 0;
  /// @return true when a trivial query succeeds.
  virtual bool ping() = 0;
};

}  // namespace svc::sdk
