#include "event_sequencer.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Logger.h>

#include <vector>

using namespace Poco::Data::Keywords;

namespace svc::kernel {

namespace {

constexpr int kBatch = 500;
constexpr auto kBeatEvery = std::chrono::seconds(1);

// The unnumbered events this session's snapshot sees, oldest insert first.
std::vector<Poco::Int64> unnumbered(Poco::Data::Session& s) {
  std::vector<Poco::Int64> ids;
  int limit = kBatch;
  s << "SELECT row_id FROM svc_events WHERE seq IS NULL ORDER BY row_id LIMIT ?", use(limit),
      into(ids), now;
  return ids;
}

// Every value is a number this process read or computed: the statement is built, not bound, so
// a batch is one statement whatever its size.
std::string numberingStatement(const std::vector<Poco::Int64>& ids, Poco::Int64 after) {
  std::string cases, list;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    cases += " WHEN " + std::to_string(ids[i]) + " THEN " +
             std::to_string(after + 1 + static_cast<Poco::Int64>(i));
    list += (i ? "," : "") + std::to_string(ids[i]);
  }
  // By primary key alone: a condition on seq could have the server walk the unique index's NULL
  // range, locking the gaps publishers insert into. The counter row's lock keeps every other
  // leader out, and the row count is checked.
  return "UPDATE svc_events SET seq = CASE row_id" + cases + " END WHERE row_id IN (" + list + ")";
}

// A conflict with another would-be leader, or the database out of reach: look again soon.
void failed(Poco::Logger& log, const std::string& why) {
  if (isTransientDatabaseError(why)) {
    log.debug("event log: " + why);
  } else {
    log.warning("event log: numbering: " + why);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

}  // namespace

EventSequencer::EventSequencer(SqlDatabase& db, std::function<void()> numbered)
    : db_(db), numbered_(std::move(numbered)), me_(sdk::newUuid()) {}

EventSequencer::~EventSequencer() {
  stop();
}

void EventSequencer::start() {
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void EventSequencer::stop() {
  if (running_.exchange(false)) {
    wake();
    thread_.join();
  }
  release();
}

void EventSequencer::wake() {
  {
    std::lock_guard lock(wake_mutex_);
    woken_ = true;
  }
  wake_cv_.notify_one();
}

std::size_t EventSequencer::runOnce() {
  if (!leading_ && !tryToLead()) return 0;
  return numberBatch();
}

bool EventSequencer::tryToLead() {
  std::string holder;
  Poco::Int64 beat = 0;
  {
    Poco::Data::Session s = db_.session();
    s << "SELECT holder, beat FROM svc_event_counter WHERE name = 'events'", into(holder),
        into(beat), now;
  }
  const auto at = std::chrono::steady_clock::now();
  if (holder == me_) {
    // Taken by a takeover whose answer was lost on the way: this process holds it already.
    leading_ = true;
    last_beat_ = at;
    return true;
  }
  if (beat != seen_beat_) {
    seen_beat_ = beat;
    seen_since_ = at;
  }
  if (!holder.empty() && at - seen_since_ < std::chrono::seconds(kLeaseSeconds)) return false;
  std::size_t taken = 0;
  db_.transaction([&](Poco::Data::Session& tx) {
    std::string me = me_, was = holder;
    Poco::Int64 seen = beat;
    Poco::Data::Statement take = (tx << "UPDATE svc_event_counter SET holder = ?, beat = beat + 1 "
                                        "WHERE name = 'events' AND holder = ? AND beat = ?",
                                  use(me), use(was), use(seen));
    taken = take.execute();
  });
  if (taken == 0) return false;
  leading_ = true;
  last_beat_ = at;
  Poco::Logger::get("svcd").information(
      holder.empty() ? "event log: this svcd numbers the log"
                     : "event log: this svcd numbers the log (the last holder stopped beating)");
  return true;
}

std::size_t EventSequencer::numberBatch() {
  const auto at = std::chrono::steady_clock::now();
  {
    // Most rounds find nothing: one read, no transaction, unless the beat is due.
    Poco::Data::Session s = db_.session();
    if (unnumbered(s).empty() && at - last_beat_ < kBeatEvery) return 0;
  }
  bool lost = false;
  std::size_t numbered = 0;
  db_.transaction([&](Poco::Data::Session& tx) {
    lost = false;
    numbered = 0;
    Poco::Int64 counter = 0;
    std::string holder;
    tx << "SELECT seq, holder FROM svc_event_counter WHERE name = 'events' FOR UPDATE",
        into(counter), into(holder), now;
    if (holder != me_) {
      lost = true;
      return;
    }
    // Read after the lock: no other leader numbers anything while this transaction holds it.
    const std::vector<Poco::Int64> ids = unnumbered(tx);
    if (!ids.empty()) {
      Poco::Data::Statement update = (tx << numberingStatement(ids, counter));
      numbered = update.execute();
      if (numbered != ids.size()) throw std::runtime_error("event log: a batch changed under us");
    }
    Poco::Int64 next = counter + static_cast<Poco::Int64>(numbered);
    tx << "UPDATE svc_event_counter SET seq = ?, beat = beat + 1 WHERE name = 'events'", use(next),
        now;
  });
  if (lost) {
    leading_ = false;
    seen_beat_ = -1;
    Poco::Logger::get("svcd").information("event log: another svcd numbers the log now");
    return 0;
  }
  last_beat_ = at;
  if (numbered > 0 && numbered_) numbered_();
  return numbered;
}

void EventSequencer::release() {
  if (!leading_.exchange(false)) return;
  try {
    db_.transaction([&](Poco::Data::Session& tx) {
      std::string me = me_;
      tx << "UPDATE svc_event_counter SET holder = '', beat = beat + 1 "
            "WHERE name = 'events' AND holder = ?",
          use(me), now;
    });
  } catch (const std::exception& e) {
    // Another svcd takes over once the beat has stood still long enough.
    Poco::Logger::get("svcd").warning(std::string("event log: could not hand over: ") + e.what());
  }
}

void EventSequencer::run() {
  Poco::Logger& log = Poco::Logger::get("svcd");
  while (running_) {
    {
      std::unique_lock lock(wake_mutex_);
      const auto wait =
          leading_ ? std::chrono::milliseconds(kLeaderPollMillis) : std::chrono::milliseconds(500);
      wake_cv_.wait_for(lock, wait, [this] { return woken_; });
      woken_ = false;
    }
    if (!running_) break;
    try {
      // A full batch: there may be more waiting.
      while (running_ && runOnce() == static_cast<std::size_t>(kBatch)) {
      }
    } catch (const std::exception& e) {
      failed(log, databaseErrorText(e));
    }
  }
}

}  // namespace svc::kernel
