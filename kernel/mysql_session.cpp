#include "mysql_session.h"

#ifdef SVC_WITH_MYSQL

#include <Poco/Data/MySQL/Binder.h>
#include <Poco/Data/MySQL/Extractor.h>
#include <Poco/Data/MySQL/MySQLException.h>
#include <Poco/Data/MySQL/ResultMetadata.h>
#include <Poco/Data/MySQL/SessionImpl.h>
#include <Poco/Data/MySQL/StatementExecutor.h>
#include <Poco/Data/SessionFactory.h>
#include <Poco/Data/StatementImpl.h>
#include <Poco/String.h>

#include <mysql.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace svc::kernel {

const char* const kMysqlConnector = "svc-mysql";

namespace {

namespace my = Poco::Data::MySQL;

// One statement prepared on a connection, with the buffers its rows are read into.
struct Prepared {
  explicit Prepared(MYSQL* mysql, std::string text) : exec(mysql), sql(std::move(text)) {}
  my::StatementExecutor exec;  // closes the statement on the server when destroyed
  my::ResultMetadata metadata;
  std::string sql;
  bool cached = false;  // held by the connection's cache
  bool in_use = false;  // by a statement now
  bool broken = false;  // failed once: its state is unknown, never executed again
  std::uint64_t last_used = 0;
};

bool startsWith(const std::string& sql, std::initializer_list<const char*> verbs) {
  std::size_t i = sql.find_first_not_of(" \t\r\n(");
  if (i == std::string::npos) return false;
  for (const char* verb : verbs) {
    std::size_t n = std::strlen(verb);
    if (sql.size() > i + n && Poco::icompare(sql, i, n, std::string(verb)) == 0 &&
        std::isspace(static_cast<unsigned char>(sql[i + n]))) {
      return true;
    }
  }
  return false;
}

// Statements that read or change rows are kept prepared; anything else (DDL, settings, locks)
// is prepared, executed and closed as Poco does.
bool keepPrepared(const std::string& sql) {
  return startsWith(sql, {"SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE"});
}

// A change with its values written into its text (nothing bound, nothing read back) is sent as
// one text query: prepared, it would be three commands (prepare, execute, close) and, its text
// being new each time, never executed again.
bool sendAsText(const std::string& sql) {
  return startsWith(sql, {"INSERT", "UPDATE", "DELETE", "REPLACE"});
}

class Session : public my::SessionImpl {
 public:
  Session(const std::string& connection, std::size_t login_timeout)
      : my::SessionImpl(connection, login_timeout) {
    // Poco's setter sends SET autocommit as a prepared statement (three commands) even when
    // nothing changes; transactions here never turn autocommit off.
    addFeature("autoCommit", static_cast<FeatureSetter>(&Session::setAutoCommit),
               static_cast<FeatureGetter>(&Session::getAutoCommit));
    // On a Galera node, a write committed through another node is applied here a moment later:
    // a client that wrote through one svcd and reads through another must see its write, so
    // reads wait for the node to apply what the cluster committed before them (one round of the
    // group's messages per read; writes are certified at commit anyway). Without Galera the
    // setting does nothing; MySQL, which has no such variable, reads the part in the MariaDB
    // comment as a comment. Now, and again by the client after every reconnect.
    static const char* const kSyncWait =
        "SET @svc_session = 1 /*M!100000 , SESSION wsrep_sync_wait = 1 */";
    mysql_options(mysql(), MYSQL_INIT_COMMAND, kSyncWait);
    send(kSyncWait);
  }
  ~Session() override {
    // Before the connection closes: each statement's close goes to its server.
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [sql, p] : cache_) p->cached = false;
    cache_.clear();
  }

  Poco::SharedPtr<Poco::Data::StatementImpl> createStatementImpl() override;

  // One command each. The client's reconnect is off while a transaction is open: a connection
  // lost mid-transaction (the server rolled it back) must fail every statement after it and the
  // COMMIT, never be replaced by a fresh connection whose statements would commit one by one
  // (libmariadb refuses the first reconnect inside a transaction, then allows the next).
  void begin() override {
    if (in_transaction_) throw Poco::InvalidAccessException("Already in transaction.");
    freshen();
    send("BEGIN");
    reconnect(false);
    in_transaction_ = true;
  }
  void commit() override {
    in_transaction_ = false;  // a failed COMMIT has ended it too (or the connection is gone)
    struct Again {
      Session& s;
      ~Again() { s.reconnect(true); }
    } again{*this};
    send("COMMIT");
  }
  void rollback() override {
    in_transaction_ = false;
    struct Again {
      Session& s;
      ~Again() { s.reconnect(true); }
    } again{*this};
    send("ROLLBACK");
  }
  bool isTransaction() const override { return in_transaction_; }

  std::shared_ptr<Prepared> checkout(const std::string& sql);
  void checkin(const std::shared_ptr<Prepared>& p);

  // Every statement used to begin with a prepare, which is safe to repeat: Poco repeats it once
  // when the connection turns out lost (the server restarted, failed over or killed it), and the
  // client reconnects. A statement kept prepared, or a text query, may change data: it is not
  // repeated. So a connection unused for a second is pinged first (reconnecting when lost, which
  // drops its prepared statements; checkout() sees that); a busy one costs nothing.
  void freshen() {
    if (in_transaction_) return;  // no reconnect inside a transaction (begin())
    const auto now = std::chrono::steady_clock::now();
    if (now - last_command_ > std::chrono::seconds(1)) mysql_ping(mysql());
    last_command_ = now;
  }

 private:
  MYSQL* mysql() { return handle(); }
  void reconnect(bool on) {
    my_bool value = on ? 1 : 0;
    mysql_options(mysql(), MYSQL_OPT_RECONNECT, &value);
  }
  void send(const char* sql) {
    if (mysql_real_query(mysql(), sql, std::strlen(sql)) != 0) {
      throw my::TransactionException(std::string(sql) + " failed", mysql());
    }
  }
  void setAutoCommit(const std::string&, bool on) {
    if (on == autocommit_) return;
    if (mysql_autocommit(mysql(), on) != 0) {
      throw my::TransactionException("SET autocommit failed", mysql());
    }
    autocommit_ = on;
  }
  bool getAutoCommit(const std::string&) const { return autocommit_; }
  void evictIdle(std::size_t keep);

  bool in_transaction_ = false;
  bool autocommit_ = true;
  std::chrono::steady_clock::time_point last_command_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<Prepared>> cache_;
  std::uint64_t clock_ = 0;
};

void Session::evictIdle(std::size_t keep) {
  while (cache_.size() > keep) {
    auto oldest = cache_.end();
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->second->in_use) continue;
      if (oldest == cache_.end() || it->second->last_used < oldest->second->last_used) oldest = it;
    }
    if (oldest == cache_.end()) return;
    oldest->second->cached = false;
    cache_.erase(oldest);
  }
}

std::shared_ptr<Prepared> Session::checkout(const std::string& sql) {
  std::lock_guard<std::mutex> lock(mutex_);
  freshen();
  const bool keep = keepPrepared(sql);
  auto found = keep ? cache_.find(sql) : cache_.end();
  // A reconnect (auto-reconnect) drops the statements prepared on the old connection: the
  // client sets each one back to unprepared (libmariadb 3; older clients detach it instead).
  MYSQL_STMT* stmt =
      found != cache_.end() ? static_cast<MYSQL_STMT*>(found->second->exec) : nullptr;
  if (stmt && (!stmt->mysql || stmt->state == MYSQL_STMT_INITTED) && !found->second->in_use) {
    found->second->cached = false;
    cache_.erase(found);
    found = cache_.end();
  }
  if (found != cache_.end() && !found->second->in_use) {
    found->second->in_use = true;
    found->second->last_used = ++clock_;
    return found->second;
  }
  auto p = std::make_shared<Prepared>(mysql(), sql);
  try {
    p->exec.prepare(sql);
  } catch (const my::MySQLException&) {
    // The server's max_prepared_stmt_count reached (1461): give back what this one keeps.
    if (mysql_errno(mysql()) != 1461 || cache_.empty()) throw;
    evictIdle(0);
    p = std::make_shared<Prepared>(mysql(), sql);
    p->exec.prepare(sql);
  }
  p->metadata.reset();
  p->metadata.init(p->exec);
  if (p->metadata.columnsReturned() > 0) p->exec.bindResult(p->metadata.row());
  p->in_use = true;
  p->last_used = ++clock_;
  if (keep && found == cache_.end()) {
    evictIdle(kPreparedPerConnection - 1);
    p->cached = true;
    cache_.emplace(sql, p);
  }
  return p;
}

void Session::checkin(const std::shared_ptr<Prepared>& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  p->in_use = false;
  if (p->cached && p->broken) {
    p->cached = false;
    cache_.erase(p->sql);
  }
  // Rows not read are read off the connection (no command to the server), ready for the next.
  if (p->cached) mysql_stmt_free_result(p->exec);
}

// Poco's MySQLStatementImpl, with its statement checked out of the connection's cache.
class Statement : public Poco::Data::StatementImpl {
 public:
  explicit Statement(Session& s) : Poco::Data::StatementImpl(s), session_(s) {}
  ~Statement() override {
    if (prepared_) session_.checkin(prepared_);
  }

 protected:
  std::size_t columnsReturned() const override {
    if (text_) return 0;
    return prepared_ ? prepared_->metadata.columnsReturned() : 0;
  }
  int affectedRowCount() const override {
    if (text_) return affected_;
    return prepared_ ? prepared_->exec.getAffectedRowCount() : 0;
  }
  const Poco::Data::MetaColumn& metaColumn(std::size_t pos) const override {
    return prepared_->metadata.metaColumn(pos);
  }
  bool hasNext() override;
  std::size_t next() override;
  bool canBind() const override {
    return prepared_ && !bindings().empty() && (*bindings().begin())->canBind();
  }
  bool canCompile() const override { return !prepared_ && !text_; }
  void compileImpl() override;
  void bindImpl() override;
  void sendText();
  Poco::Data::AbstractExtractor::Ptr extractor() override { return extractor_; }
  Poco::Data::AbstractBinder::Ptr binder() override { return binder_; }

 private:
  enum class Next { kDontKnow, kYes, kNo };
  Session& session_;
  std::shared_ptr<Prepared> prepared_;
  my::Binder::Ptr binder_ = new my::Binder;
  my::Extractor::Ptr extractor_;
  Next next_ = Next::kDontKnow;
  bool text_ = false;  // sent as a text query, not prepared
  int affected_ = 0;
};

Poco::SharedPtr<Poco::Data::StatementImpl> Session::createStatementImpl() {
  return new Statement(*this);
}

void Statement::compileImpl() {
  const std::string sql = toString();
  if (prepared_ && prepared_->sql == sql) return;
  if (!prepared_ && bindings().empty() && extractions().empty() && sendAsText(sql)) {
    text_ = true;
    return;
  }
  text_ = false;
  if (prepared_) {
    session_.checkin(prepared_);
    prepared_.reset();
  }
  try {
    prepared_ = session_.checkout(sql);
  } catch (const my::MySQLException& e) {
    session_.setLastError(e.code());
    throw;
  }
  extractor_ = new my::Extractor(prepared_->exec, prepared_->metadata);
  session_.setLastError(0);
}

void Statement::sendText() {
  const std::string sql = toString();
  session_.freshen();
  MYSQL* mysql = session_.handle();
  if (mysql_real_query(mysql, sql.data(), sql.size()) != 0) {
    const unsigned code = mysql_errno(mysql);
    session_.setLastError(static_cast<int>(code));
    throw my::StatementException(
        "[mysql_real_query error]: [mysql_error]: " + std::string(mysql_error(mysql)) +
        " [mysql_errno]: " + std::to_string(code) + " [statement]: " + sql);
  }
  // A change returns no rows; should one (INSERT ... RETURNING), they are read and dropped.
  if (mysql_field_count(mysql) > 0) mysql_free_result(mysql_store_result(mysql));
  affected_ = static_cast<int>(mysql_affected_rows(mysql));
  session_.setLastError(0);
}

void Statement::bindImpl() {
  if (text_) {
    sendText();
    return;
  }
  std::size_t pos = 0;
  for (auto it = bindings().begin(); it != bindings().end() && (*it)->canBind(); ++it) {
    (*it)->bind(pos);
    pos += (*it)->numOfColumnsHandled();
  }
  try {
    prepared_->exec.bindParams(binder_->getBindArray(), binder_->size());
    prepared_->exec.execute();
  } catch (const my::MySQLException& e) {
    prepared_->broken = true;
    session_.setLastError(e.code());
    throw;
  }
  next_ = Next::kDontKnow;
  session_.setLastError(0);
}

bool Statement::hasNext() {
  if (text_) return false;
  if (next_ == Next::kDontKnow) {
    if (prepared_->metadata.columnsReturned() == 0) return false;
    try {
      next_ = prepared_->exec.fetch() ? Next::kYes : Next::kNo;
    } catch (...) {
      prepared_->broken = true;
      throw;
    }
  }
  return next_ == Next::kYes;
}

std::size_t Statement::next() {
  if (!hasNext()) throw my::StatementException("No data received");
  std::size_t pos = 0;
  for (auto& extraction : extractions()) {
    extraction->extract(pos);
    pos += extraction->numOfColumnsHandled();
  }
  next_ = Next::kDontKnow;
  return 1;
}

class Connector : public Poco::Data::Connector {
 public:
  const std::string& name() const override {
    static const std::string name = kMysqlConnector;
    return name;
  }
  Poco::AutoPtr<Poco::Data::SessionImpl> createSession(const std::string& connection,
                                                       std::size_t login_timeout) override {
    return Poco::AutoPtr<Poco::Data::SessionImpl>(new Session(connection, login_timeout));
  }
};

}  // namespace

void registerMysqlConnector() {
  static std::once_flag once;
  std::call_once(once, [] { Poco::Data::SessionFactory::instance().add(new Connector); });
}

}  // namespace svc::kernel

#endif
