#include "database.h"

#include "database_errors.h"
#include "migration_lock.h"
#include "mysql_session.h"

#include <svc/sdk/util.h>

#include <Poco/Data/SQLite/Connector.h>
#include <Poco/Exception.h>
#include <Poco/File.h>
#include <Poco/Logger.h>
#include <Poco/Path.h>
#include <Poco/String.h>
#include <Poco/URI.h>
#ifdef SVC_WITH_MYSQL
#include <Poco/Data/MySQL/Connector.h>
#endif

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

using namespace Poco::Data::Keywords;

namespace svc::kernel {

void registerDataConnectors() {
  static std::once_flag once;
  std::call_once(once, [] {
    // SQLite keeps memory statistics behind one global mutex that every allocation of every
    // connection takes; nothing here reads them, and under many readers it is the hottest lock.
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    Poco::Data::SQLite::Connector::registerConnector();
#ifdef SVC_WITH_MYSQL
    Poco::Data::MySQL::Connector::registerConnector();
    registerMysqlConnector();
#endif
  });
}

namespace {

std::string mysqlConnectionString(const std::string& url) {
  Poco::URI uri(url);
  std::string user, password;
  const std::string& info = uri.getUserInfo();
  auto colon = info.find(':');
  std::string raw_user = colon == std::string::npos ? info : info.substr(0, colon);
  std::string raw_pass = colon == std::string::npos ? "" : info.substr(colon + 1);
  Poco::URI::decode(raw_user, user);
  Poco::URI::decode(raw_pass, password);
  std::string db = uri.getPath().substr(1);
  unsigned port = uri.getPort() == 0 ? 3306 : uri.getPort();
  // utf8mb4 from the handshake on: Poco's default "utf8" is MySQL's three-byte UTF-8, which
  // refuses text with emoji.
  return "host=" + uri.getHost() + ";port=" + std::to_string(port) + ";user=" + user +
         ";password=" + password + ";db=" + db +
         ";auto-reconnect=true;secure-auth=true;character-set=utf8mb4";
}

// SQLite settings that belong to each connection, applied as the pool opens it.
class SqlitePool : public Poco::Data::SessionPool {
 public:
  SqlitePool(const std::string& path, int max_sessions, std::string synchronous)
      : SessionPool("SQLite", path, 1, max_sessions, 60), synchronous_(std::move(synchronous)) {}

 protected:
  void customizeSession(Poco::Data::Session& s) override {
    // Per connection, not per database: with FULL a commit is on disk before it is acknowledged,
    // so acknowledged writes survive kill -9 and power loss alike.
    s << "PRAGMA synchronous=" + synchronous_, now;
    // A filing transaction of a few hundred messages dirties more than SQLite's default 2 MiB
    // page cache: it then spills pages to the WAL mid-transaction and reads them back.
    s << "PRAGMA cache_size = -16384", now;  // KiB
    // No memory-mapped reads (PRAGMA mmap_size stays 0): mapped pages count in svcd's resident
    // memory, which then followed the database's size (+14 MiB in a 10-minute soak) instead of
    // what svcd holds; pages read with pread sit in the kernel's page cache all the same.
  }

 private:
  std::string synchronous_;  // FULL, NORMAL or OFF
};

}  // namespace

SqlDatabase::SqlDatabase(const std::string& url, int pool_size,
                         const std::string& sqlite_synchronous) {
  registerDataConnectors();
  const std::string synchronous = Poco::toUpper(sqlite_synchronous);
  if (synchronous != "FULL" && synchronous != "NORMAL" && synchronous != "OFF") {
    throw std::runtime_error("db.sqlite.synchronous must be full, normal or off, not '" +
                             sqlite_synchronous + "'");
  }
  try {
    if (url.rfind("sqlite:", 0) == 0) {
      dialect_ = sdk::Dialect::kSqlite;
      std::string path = url.substr(7);
      Poco::File(Poco::Path(path).makeAbsolute().parent()).createDirectories();
      pool_ = std::make_unique<SqlitePool>(path, pool_size, synchronous);
      Poco::Data::Session s = pool_->get();
      // WAL lets readers run beside the writer (the mode is the database file's, kept).
      s << "PRAGMA journal_mode=WAL", now;
      // All sessions' page caches together: past 32 MiB SQLite reuses pages instead of growing
      // (cache_size alone bounds each of up to db.pool_size sessions, not their sum).
      s << "PRAGMA soft_heap_limit = 33554432", now;
    } else if (url.rfind("mysql://", 0) == 0) {
#ifdef SVC_WITH_MYSQL
      dialect_ = sdk::Dialect::kMysql;
      pool_ = std::make_unique<Poco::Data::SessionPool>(kMysqlConnector, mysqlConnectionString(url),
                                                        1, pool_size, 60);
      Poco::Data::Session s = pool_->get();
      // A Galera node (wsrep_on): reads wait until the node has applied what the cluster
      // committed before them (below), and readiness asks whether the node takes queries.
      std::string variable, wsrep;  // no row on a server built without Galera
      s << "SHOW VARIABLES LIKE 'wsrep_on'", into(variable), into(wsrep), now;
      galera_ = wsrep == "ON";
      // Tables made from now on hold any UTF-8 (MySQL's "utf8" stops at three bytes). Needs
      // ALTER on the database; without it, text beyond the Basic Multilingual Plane is refused.
      try {
        s << "ALTER DATABASE CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", now;
      } catch (const Poco::Exception& e) {
        Poco::Logger::get("svcd").warning("cannot make the database utf8mb4: " + e.displayText());
      }
#else
      throw std::runtime_error("this svcd was built without MySQL support");
#endif
    } else {
      throw std::runtime_error("db.url must start with sqlite: or mysql://");
    }
  } catch (const Poco::Exception& e) {
    throw std::runtime_error("cannot open database: " + e.displayText());
  }
}

SqlDatabase::~SqlDatabase() {
  if (pool_) pool_->shutdown();
}

Poco::Data::Session SqlDatabase::session() {
  Poco::Data::Session s = pool_->get();
  // Per connection: wait for another process's writer instead of failing at once. (MySQL's
  // connections are utf8mb4 from the connection string on, and on a Galera node their reads wait
  // for the node to apply what the cluster committed before them: mysql_session.cpp.)
  if (dialect_ == sdk::Dialect::kSqlite) s.setConnectionTimeout(5);
  return s;
}

namespace {

// The transaction this thread is in, if any, and what waits for its commit.
struct ThreadTransaction {
  bool active = false;
  std::uint64_t serial = 0;
  std::vector<std::function<void(Poco::Data::Session&)>> before_commit;
  std::vector<std::function<void()>> after_commit;
  void clear() {
    active = false;
    serial = 0;
    before_commit.clear();
    after_commit.clear();
  }
};
thread_local ThreadTransaction this_thread_transaction;
std::atomic<std::uint64_t> transaction_serials{0};

}  // namespace

std::uint64_t SqlDatabase::transactionSerial() const {
  return this_thread_transaction.active ? this_thread_transaction.serial : 0;
}

void SqlDatabase::beforeCommit(std::function<void(Poco::Data::Session&)> fn) {
  if (!this_thread_transaction.active) {
    throw std::logic_error("Database::beforeCommit() called outside a transaction");
  }
  this_thread_transaction.before_commit.push_back(std::move(fn));
}

void SqlDatabase::afterCommit(std::function<void()> fn) {
  if (this_thread_transaction.active) {
    this_thread_transaction.after_commit.push_back(std::move(fn));
  } else {
    fn();
  }
}

void SqlDatabase::transaction(const std::function<void(Poco::Data::Session&)>& work) {
  transaction(retry_, work);
}

void SqlDatabase::transaction(const RetryPolicy& policy,
                              const std::function<void(Poco::Data::Session&)>& work) {
  // A transaction inside another on the same thread would wait for itself on SQLite (one writer)
  // and can deadlock on row locks on MySQL: refuse it loudly on both.
  if (this_thread_transaction.active) {
    throw std::logic_error("Database::transaction() called inside another transaction");
  }
  for (int attempt = 1;; ++attempt) {
    std::vector<std::function<void()>> after;
    try {
      after = attempt_transaction(work);
    } catch (const CommitOutcomeUnknown&) {
      throw;
    } catch (const std::exception& e) {
      // What a retry resolves left nothing applied: the database rolled the transaction back
      // (a conflict), or the connection was lost before COMMIT was sent (the server rolls back
      // what a closed connection had begun). The work runs again from the start, with hooks
      // and serial of its own.
      // Only the database's own exceptions (Poco's) say what the database did.
      const auto* poco = dynamic_cast<const Poco::Exception*>(&e);
      const std::string why = poco ? poco->displayText() : std::string();
      if (!poco || attempt >= policy.attempts ||
          !(isTransientDatabaseError(why) || isDatabaseUnreachableError(why))) {
        throw;
      }
      retries_.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::milliseconds(policy.pauseMillis(attempt + 1)));
      continue;
    }
    // Committed: the hooks run outside the transaction (they may start one of their own).
    for (auto& fn : after) fn();
    return;
  }
}

std::vector<std::function<void()>> SqlDatabase::attempt_transaction(
    const std::function<void(Poco::Data::Session&)>& work) {
  ThreadTransaction& current = this_thread_transaction;
  current.clear();
  current.active = true;
  current.serial = ++transaction_serials;
  struct Reset {
    ThreadTransaction& t;
    ~Reset() { t.clear(); }
  } reset{current};
  std::unique_lock<std::mutex> lock(sqlite_writer_, std::defer_lock);
  if (dialect_ == sdk::Dialect::kSqlite) lock.lock();
  Poco::Data::Session s = session();
  // Poco's MySQL session begins a transaction by turning autocommit off and never turns it back
  // on: the pooled session's next plain SELECT would open an implicit transaction whose
  // REPEATABLE READ snapshot lives on, and every later read through it would see old data.
  struct AutoCommit {
    Poco::Data::Session& s;
    bool mysql;
    ~AutoCommit() {
      if (!mysql) return;
      try {
        s.setFeature("autoCommit", true);
      } catch (...) {
      }
    }
  } restore{s, dialect_ == sdk::Dialect::kMysql};
  s.begin();
  bool committing = false;
  try {
    work(s);
    for (std::size_t i = 0; i < current.before_commit.size(); ++i) current.before_commit[i](s);
    committing = true;
    s.commit();
  } catch (const std::exception& e) {
    try {
      s.rollback();
    } catch (...) {
    }
    // A COMMIT the server refused (a certification failure) is known to be rolled back; one
    // whose connection broke may have been applied before the answer was lost.
    if (committing && dialect_ == sdk::Dialect::kMysql &&
        isDatabaseUnreachableError(databaseErrorText(e))) {
      throw CommitOutcomeUnknown(databaseErrorText(e));
    }
    throw;
  } catch (...) {
    try {
      s.rollback();
    } catch (...) {
    }
    throw;
  }
  return std::move(current.after_commit);
}

bool SqlDatabase::ping() {
  try {
    Poco::Data::Session s = session();
    if (galera_) {
      // A node that lost its cluster's quorum (or is still joining) answers queries with error
      // 1047: it is connected, not ready.
      std::string variable, ready;
      s << "SHOW STATUS LIKE 'wsrep_ready'", into(variable), into(ready), now;
      return ready == "ON";
    }
    int one = 0;
    s << "SELECT 1", into(one), now;
    return one == 1;
  } catch (const Poco::Exception&) {
    return false;
  } catch (const std::exception&) {
    return false;
  }
}

bool SqlDatabase::migrationApplied(const std::string& plugin, int version) {
  Poco::Data::Session s = session();
  std::string name = plugin;
  int applied = 0;
  s << "SELECT COUNT(*) FROM svc_migrations WHERE plugin = ? AND version = ?", use(name),
      use(version), into(applied), now;
  return applied != 0;
}

void SqlDatabase::migrate(const std::string& plugin,
                          const std::vector<sdk::Migration>& migrations) {
  // Migrating is resumable (each migration is recorded once done, a MySQL one statement by
  // statement): a read or a lock meeting a passing conflict, as svcd started side by side on a
  // cluster's nodes do while one of them changes the schema, starts it over.
  for (int attempt = 1;; ++attempt) {
    try {
      migrateOnce(plugin, migrations);
      return;
    } catch (const Poco::Exception& e) {
      const std::string why = e.displayText();
      if (attempt >= retry_.attempts ||
          !(isTransientDatabaseError(why) || isDatabaseUnreachableError(why))) {
        throw std::runtime_error("migrating " + plugin + ": " + why);
      }
      Poco::Logger::get("svcd").warning("migrating " + plugin + " again: " + why);
      std::this_thread::sleep_for(std::chrono::milliseconds(retry_.pauseMillis(attempt + 1)));
    }
  }
}

void SqlDatabase::migrateOnce(const std::string& plugin,
                              const std::vector<sdk::Migration>& migrations) {
  // Several svcd processes may start at once on one MySQL database or on the nodes of a Galera
  // cluster: one migrates at a time, whichever node each is on.
  std::unique_ptr<MigrationLock> lock;
  if (dialect_ == sdk::Dialect::kMysql) {
    transaction([](Poco::Data::Session& s) {
      s << "CREATE TABLE IF NOT EXISTS svc_migration_lock (name VARCHAR(64) NOT NULL PRIMARY KEY, "
           "holder VARCHAR(64) NOT NULL, beat BIGINT NOT NULL)",
          now;
    });
    lock = std::make_unique<MigrationLock>([this] { return session(); }, "migrations");
    lock->acquire();
  }
  transaction([](Poco::Data::Session& s) {
    s << "CREATE TABLE IF NOT EXISTS svc_migrations (plugin VARCHAR(64) NOT NULL, "
         "version INT NOT NULL, description VARCHAR(255) NOT NULL, applied_us BIGINT NOT NULL, "
         "PRIMARY KEY (plugin, version))",
        now;
  });

  int previous = 0;
  for (const auto& m : migrations) {
    if (m.version <= previous) {
      throw std::runtime_error("migration " + std::to_string(m.version) + " of plugin '" + plugin +
                               "' is out of order");
    }
    previous = m.version;
    if (migrationApplied(plugin, m.version)) continue;
    if (lock && !lock->held()) {
      throw std::runtime_error(
          "another svcd took the migration lock over while this one held it "
          "(no sign of life for 20 s); start again");
    }
    if (dialect_ == sdk::Dialect::kSqlite) {
      applySqliteMigration(plugin, m);
    } else {
      applyMysqlMigration(plugin, m);
    }
  }
  if (lock) lock->release();
}

namespace {

void recordMigration(Poco::Data::Session& s, const std::string& plugin, const sdk::Migration& m) {
  std::string name = plugin, description = m.description;
  int version = m.version;
  Poco::Int64 at = sdk::nowMicros();
  s << "INSERT INTO svc_migrations (plugin, version, description, applied_us) "
       "VALUES (?, ?, ?, ?)",
      use(name), use(version), use(description), use(at), now;
}

// What a statement of a migration answers when what it makes is there already: made by an svcd
// that died (or lost the lock) after the statement and before the migration was recorded. Only
// answers that name what exists: a table, a column, an index by name; and for a seed row
// (INSERT ... VALUES), the row. A duplicate met by an index built on existing rows, or by an
// INSERT ... SELECT, is a real failure.
bool madeBefore(const std::string& statement, const std::string& why) {
  for (const char* made : {"already exists", "Duplicate column name", "Duplicate key name"}) {
    if (why.find(made) != std::string::npos) return true;
  }
  const std::string upper = Poco::toUpper(statement);
  return why.find("Duplicate entry") != std::string::npos && upper.rfind("INSERT", 0) == 0 &&
         upper.find(" VALUES") != std::string::npos && upper.find("SELECT") == std::string::npos;
}

std::string migrationName(const sdk::Migration& m) {
  return "migration " + std::to_string(m.version) + " (" + m.description + ")";
}

}  // namespace

void SqlDatabase::applySqliteMigration(const std::string& plugin, const sdk::Migration& m) {
  std::size_t index = 0;
  try {
    // All or nothing: SQLite's DDL is transactional.
    transaction(RetryPolicy{1}, [&](Poco::Data::Session& s) {
      for (index = 0; index < m.sqlite.size(); ++index) s << m.sqlite[index], now;
      recordMigration(s, plugin, m);
    });
  } catch (const Poco::Exception& e) {
    throw std::runtime_error(migrationName(m) + " failed at statement " +
                             std::to_string(index + 1) + ": " + e.displayText() + "; rolled back");
  }
}

void SqlDatabase::applyMysqlMigration(const std::string& plugin, const sdk::Migration& m) {
  // MySQL commits each DDL statement by itself: a migration cannot be rolled back, so it is made
  // resumable. Each statement is retried on a conflict (a Galera node's DDL meets another's) and
  // taken as done when what it makes is there, left by an svcd that stopped half-way through.
  for (std::size_t index = 0; index < m.mysql.size(); ++index) {
    try {
      transaction([&](Poco::Data::Session& s) { s << m.mysql[index], now; });
    } catch (const Poco::Exception& e) {
      if (!madeBefore(m.mysql[index], e.displayText())) {
        throw std::runtime_error(migrationName(m) + " failed at statement " +
                                 std::to_string(index + 1) + ": " + e.displayText() +
                                 "; the statements before it stay applied and are taken as done "
                                 "at the next start");
      }
      Poco::Logger::get("svcd").warning(migrationName(m) + ": statement " +
                                        std::to_string(index + 1) + " was applied before (" +
                                        e.displayText() + "); going on");
    }
  }
  try {
    transaction([&](Poco::Data::Session& s) { recordMigration(s, plugin, m); });
  } catch (const Poco::Exception& e) {
    // Recorded by another svcd meanwhile: done.
    if (e.displayText().find("Duplicate entry") == std::string::npos) throw;
  }
}

int SqlDatabase::poolCapacity() const {
  return pool_->capacity();
}
int SqlDatabase::poolUsed() const {
  return pool_->used();
}
int SqlDatabase::poolIdle() const {
  return pool_->idle();
}

}  // namespace svc::kernel
