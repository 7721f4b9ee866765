// The kernel's database: a Poco SessionPool on SQLite (WAL) or MySQL/MariaDB, transactions, and
// the per-plugin migration runner with its record table `svc_migrations`.
#pragma once

#include "database_errors.h"

#include <svc/sdk/storage.h>

#include <atomic>

#include <Poco/Data/SessionPool.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace svc::kernel {

class SqlDatabase : public sdk::Database {
 public:
  /// @param url `sqlite:PATH` or `mysql://user:pass@host:port/db`.
  /// @param pool_size the most sessions open at once.
  /// @param sqlite_synchronous SQLite's `synchronous` for every connection: `full` (a commit is on
  /// disk before it is acknowledged), `normal` or `off` (no fsync: a commit survives svcd's crash
  /// but not the machine's; for tests that do not check durability). Ignored on MySQL.
  /// @throws std::runtime_error when the database cannot be opened, or for another value.
  SqlDatabase(const std::string& url, int pool_size,
              const std::string& sqlite_synchronous = "full");
  ~SqlDatabase() override;

  sdk::Dialect dialect() const override { return dialect_; }
  Poco::Data::Session session() override;
  /// Retries the whole transaction (hooks and serial afresh) on what a retry resolves: conflicts
  /// (isTransientDatabaseError) and a lost or refused connection before COMMIT, as the retry
  /// policy says; the last failure is rethrown. @throws CommitOutcomeUnknown when the connection
  /// broke during COMMIT (never retried: it may have been applied).
  void transaction(const std::function<void(Poco::Data::Session&)>& work) override;
  void transaction(const RetryPolicy& policy,
                   const std::function<void(Poco::Data::Session&)>& work);
  void setRetryPolicy(const RetryPolicy& policy) { retry_ = policy; }
  /// @return how many attempts of transactions were retried since the start.
  std::uint64_t retries() const { return retries_.load(); }
  /// @return a number naming the transaction this thread is in (never reused), or 0 for none.
  std::uint64_t transactionSerial() const;
  /// Runs `fn` with the transaction's session as the last work of the transaction this thread is
  /// in, before it commits. @throws std::logic_error outside a transaction.
  void beforeCommit(std::function<void(Poco::Data::Session&)> fn);
  /// Runs `fn` once the transaction this thread is in commits (never when it rolls back), or now
  /// when the thread is in none.
  void afterCommit(std::function<void()> fn);
  bool ping() override;

  /// Applies a plugin's missing migrations, each in its own transaction, and records them.
  /// @param plugin the plugin's name (`kernel` for the kernel's own).
  /// @throws std::runtime_error naming the migration when one fails (it was rolled back).
  void migrate(const std::string& plugin, const std::vector<sdk::Migration>& migrations);

  /// Pool figures for /metrics.
  int poolCapacity() const;
  int poolUsed() const;
  int poolIdle() const;

 private:
  std::vector<std::function<void()>> attempt_transaction(
      const std::function<void(Poco::Data::Session&)>& work);
  bool migrationApplied(const std::string& plugin, int version);
  void migrateOnce(const std::string& plugin, const std::vector<sdk::Migration>& migrations);
  void applySqliteMigration(const std::string& plugin, const sdk::Migration& m);
  void applyMysqlMigration(const std::string& plugin, const sdk::Migration& m);

  sdk::Dialect dialect_;
  bool galera_ = false;
  RetryPolicy retry_;
  std::atomic<std::uint64_t> retries_{0};
  std::unique_ptr<Poco::Data::SessionPool> pool_;
  std::mutex sqlite_writer_;  // SQLite allows one writer; serialize ours instead of retrying.
};

/// Registers the Poco Data connectors once.
void registerDataConnectors();

}  // namespace svc::kernel
