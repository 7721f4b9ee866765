// The lock that lets one svcd at a time migrate a MySQL/MariaDB database, held across every node
// of a Galera cluster (GET_LOCK is per node there) and without trusting machines' clocks: a row.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <Poco/Data/Session.h>

namespace svc::kernel {

/// The lock is the row `svc_migration_lock(name)`: inserting it wins on exactly one node (a unique
/// key; on Galera, certification lets one of concurrent inserts commit). While it holds the lock a
/// thread bumps the row's `beat` every second. A waiter that sees (holder, beat) unchanged for
/// `stale_after_s` seconds of its own steady clock takes the row over with a compare-and-set on
/// (holder, beat): a holder that died does not block migrations for ever, and no two clocks are
/// compared. A holder whose beat finds the row taken over knows it lost the lock (held() false).
class MigrationLock {
 public:
  using Sessions = std::function<Poco::Data::Session()>;
  /// @param sessions gives a session of the database's pool (autocommit).
  MigrationLock(Sessions sessions, std::string name, int stale_after_s = 20);
  ~MigrationLock();  ///< releases the lock if held
  MigrationLock(const MigrationLock&) = delete;
  MigrationLock& operator=(const MigrationLock&) = delete;

  /// Waits for the lock and takes it. @throws std::runtime_error when a database error other than
  /// a passing conflict happens.
  void acquire();
  /// @return whether the lock is still ours (false once another took it over as stale).
  bool held() const { return held_.load(); }
  void release();

 private:
  bool tryInsert();
  bool tryTakeOver(const std::string& holder, long long beat);
  void beatLoop();

  Sessions sessions_;
  std::string name_, me_;
  int stale_after_s_;
  std::atomic<bool> held_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread beater_;
};

}  // namespace svc::kernel
