#include "database.h"

#include "mysql_session.h"

#include <svc/sdk/util.h>

#include <Poco/Data/SQLite/Connector.h>
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
#include <stdexcept>

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

bool isTransientDatabaseError(const std::string& message) {
  for (const char* transient : {"Deadlock found when trying to get lock",
                                "Lock wait timeout exceeded", "database is locked"}) {
    if (message.find(transient) != std::string::npos) return true;
  }
  return false;
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
      s << "SELECT 1", now;
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
  // connections are utf8mb4 from the connection string on.)
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
  // A transaction inside another on the same thread would wait for itself on SQLite (one writer)
  // and can deadlock on row locks on MySQL: refuse it loudly on both.
  ThreadTransaction& current = this_thread_transaction;
  if (current.active) {
    throw std::logic_error("Database::transaction() called inside another transaction");
  }
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
  try {
    work(s);
    for (std::size_t i = 0; i < current.before_commit.size(); ++i) current.before_commit[i](s);
    s.commit();
  } catch (...) {
    try {
      s.rollback();
    } catch (...) {
    }
    throw;
  }
  // Committed: the hooks run outside the transaction (they may start one of their own).
  auto after = std::move(current.after_commit);
  current.clear();
  if (lock.owns_lock()) lock.unlock();
  for (auto& fn : after) fn();
}

bool SqlDatabase::ping() {
  try {
    Poco::Data::Session s = session();
    int one = 0;
    s << "SELECT 1", into(one), now;
    return one == 1;
  } catch (const Poco::Exception&) {
    return false;
  } catch (const std::exception&) {
    return false;
  }
}

void SqlDatabase::migrate(const std::string& plugin,
                          const std::vector<sdk::Migration>& migrations) {
  {
    Poco::Data::Session s = session();
    s << "CREATE TABLE IF NOT EXISTS svc_migrations (plugin VARCHAR(64) NOT NULL, "
         "version INT NOT NULL, description VARCHAR(255) NOT NULL, applied_us BIGINT NOT NULL, "
         "PRIMARY KEY (plugin, version))",
        now;
  }
  // Several svcd processes may start at once on one MySQL database: one migrates at a time.
  std::unique_ptr<Poco::Data::Session> lock_session;
  if (dialect_ == sdk::Dialect::kMysql) {
    lock_session = std::make_unique<Poco::Data::Session>(session());
    int got = 0;
    *lock_session << "SELECT GET_LOCK('svc_migrations', 60)", into(got), now;
    if (got != 1) throw std::runtime_error("could not take the migration lock within 60 s");
  }
  struct Unlock {
    Poco::Data::Session* s;
    ~Unlock() {
      if (!s) return;
      try {
        int released = 0;
        *s << "SELECT RELEASE_LOCK('svc_migrations')", into(released), now;
      } catch (...) {
      }
    }
  } unlock{lock_session.get()};

  int previous = 0;
  for (const auto& m : migrations) {
    if (m.version <= previous) {
      throw std::runtime_error("migration " + std::to_string(m.version) + " of plugin '" + plugin +
                               "' is out of order");
    }
    previous = m.version;
    int applied = 0;
    {
      Poco::Data::Session s = session();
      std::string name = plugin;
      int version = m.version;
      s << "SELECT COUNT(*) FROM svc_migrations WHERE plugin = ? AND version = ?", use(name),
          use(version), into(applied), now;
    }
    if (applied) continue;
    const auto& statements = dialect_ == sdk::Dialect::kSqlite ? m.sqlite : m.mysql;
    std::size_t index = 0;
    try {
      transaction([&](Poco::Data::Session& s) {
        for (index = 0; index < statements.size(); ++index) {
          s << statements[index], now;
        }
        std::string name = plugin, description = m.description;
        int version = m.version;
        Poco::Int64 at = sdk::nowMicros();
        s << "INSERT INTO svc_migrations (plugin, version, description, applied_us) "
             "VALUES (?, ?, ?, ?)",
            use(name), use(version), use(description), use(at), now;
      });
    } catch (const Poco::Exception& e) {
      throw std::runtime_error("migration " + std::to_string(m.version) + " (" + m.description +
                               ") failed at statement " + std::to_string(index + 1) + ": " +
                               e.displayText() + "; rolled back");
    }
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
