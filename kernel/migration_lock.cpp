#include "migration_lock.h"

#include "database_errors.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Logger.h>

#include <chrono>
#include <stdexcept>

using namespace Poco::Data::Keywords;

namespace svc::kernel {

namespace {

// A failed insert or compare-and-set that means "someone else has it", not a broken database.
bool lostRace(const std::exception& e) {
  const std::string why = databaseErrorText(e);
  return why.find("Duplicate entry") != std::string::npos || isTransientDatabaseError(why);
}

}  // namespace

MigrationLock::MigrationLock(Sessions sessions, std::string name, int stale_after_s)
    : sessions_(std::move(sessions)),
      name_(std::move(name)),
      me_(sdk::randomToken(16)),
      stale_after_s_(stale_after_s) {}

MigrationLock::~MigrationLock() {
  try {
    release();
  } catch (...) {
  }
}

bool MigrationLock::tryInsert() {
  try {
    Poco::Data::Session s = sessions_();
    std::string name = name_, me = me_;
    s << "INSERT INTO svc_migration_lock (name, holder, beat) VALUES (?, ?, 0)", use(name), use(me),
        now;
    return true;
  } catch (const std::exception& e) {
    if (lostRace(e)) return false;
    throw;
  }
}

bool MigrationLock::tryTakeOver(const std::string& holder, long long beat) {
  try {
    Poco::Data::Session s = sessions_();
    std::string name = name_, me = me_, old = holder;
    Poco::Int64 old_beat = beat;
    Poco::Data::Statement update(s);
    update << "UPDATE svc_migration_lock SET holder = ?, beat = 0 "
              "WHERE name = ? AND holder = ? AND beat = ?",
        use(me), use(name), use(old), use(old_beat);
    return update.execute() == 1;
  } catch (const std::exception& e) {
    if (lostRace(e)) return false;
    throw;
  }
}

void MigrationLock::acquire() {
  using Clock = std::chrono::steady_clock;
  std::string seen_holder;
  long long seen_beat = -1;
  Clock::time_point seen_since = Clock::now(), logged = Clock::now();
  bool won = false;
  while (!won) {
    if (tryInsert()) {
      won = true;
      break;
    }
    std::string holder;
    Poco::Int64 beat = -1;
    {
      Poco::Data::Session s = sessions_();
      std::string name = name_;
      s << "SELECT holder, beat FROM svc_migration_lock WHERE name = ?", use(name), into(holder),
          into(beat), now;
    }
    if (beat < 0) continue;  // released between our insert and our read: insert again
    const auto now_at = Clock::now();
    if (holder != seen_holder || beat != seen_beat) {
      seen_holder = holder;
      seen_beat = beat;
      seen_since = now_at;
    } else if (now_at - seen_since >= std::chrono::seconds(stale_after_s_)) {
      Poco::Logger::get("svcd").warning(
          "the migration lock's holder has not shown a sign of life "
          "for " +
          std::to_string(stale_after_s_) + " s: taking it over");
      if (tryTakeOver(holder, beat)) {
        won = true;
        break;
      }
      seen_since = now_at;
    }
    if (now_at - logged >= std::chrono::seconds(10)) {
      logged = now_at;
      Poco::Logger::get("svcd").information("waiting for another svcd to finish migrating");
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(100 + (sdk::nowMicros() % 100000) / 1000));
  }
  held_ = true;
  stop_ = false;
  beater_ = std::thread([this] { beatLoop(); });
}

void MigrationLock::beatLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
    lock.unlock();
    try {
      Poco::Data::Session s = sessions_();
      std::string name = name_, me = me_;
      Poco::Data::Statement update(s);
      update << "UPDATE svc_migration_lock SET beat = beat + 1 WHERE name = ? AND holder = ?",
          use(name), use(me);
      if (update.execute() == 0) {
        held_ = false;
        Poco::Logger::get("svcd").error("the migration lock was taken over by another svcd");
      }
    } catch (const std::exception& e) {
      // A beat missed now and then is harmless; waiters give up on us only after many.
      Poco::Logger::get("svcd").warning("migration lock heartbeat: " + databaseErrorText(e));
    }
    lock.lock();
    if (!held_) return;
  }
}

void MigrationLock::release() {
  if (beater_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    beater_.join();
  }
  if (!held_.exchange(false)) return;
  Poco::Data::Session s = sessions_();
  std::string name = name_, me = me_;
  s << "DELETE FROM svc_migration_lock WHERE name = ? AND holder = ?", use(name), use(me), now;
}

}  // namespace svc::kernel
