// Numbers the event log after commit, so that no write of an account waits on another's.
//
// On MySQL/MariaDB (one server or a Galera cluster) a publishing transaction inserts its event
// with no sequence (`seq` NULL) beside its own change: writes of different accounts touch no
// common row, so they neither wait for each other's locks nor fail each other's certification.
// One svcd at a time, the leader, numbers what has committed: in one transaction it locks the
// counter row, reads the unnumbered events it can see, gives them the next sequences in the order
// they were inserted, and moves the counter. Its transactions commit one after another, so the log
// is still read by sequence (a reader that has seen N has seen everything below N, on every node),
// and an event's number is given once: a stored sequence never changes.
//
// Leadership is held in the counter row (`holder`, `beat`) without comparing clocks: the leader
// bumps `beat` with every batch and at least every second; another svcd that sees the same beat
// for kLeaseSeconds of its own steady clock takes the row over with a compare-and-set on the beat.
// A leader that paused and lost the row notices at its next batch (the row names another holder)
// and numbers nothing more. A leader that stops releases the row, so another takes it at once.
//
// On SQLite (one svcd, one writer) the publishing transaction numbers its event itself and no
// sequencer runs.
#pragma once

#include "database.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace svc::kernel {

class EventSequencer {
 public:
  /// How long a beat may stay the same before another svcd takes leadership.
  static constexpr int kLeaseSeconds = 3;
  /// How often the leader looks for other processes' events (its own wake it at once).
  static constexpr int kLeaderPollMillis = 20;

  /// @param numbered called (on the sequencer's thread) after a batch committed.
  EventSequencer(SqlDatabase& db, std::function<void()> numbered);
  ~EventSequencer();

  void start();
  /// Stops the thread and, when leading, releases leadership.
  void stop();
  /// Has the sequencer look now (after a local commit of an event).
  void wake();
  /// @return whether this process numbers the log now.
  bool leading() const { return leading_.load(); }
  /// One round as the thread does it. @return the events numbered. For tests.
  std::size_t runOnce();

 private:
  void run();
  bool tryToLead();
  std::size_t numberBatch();
  void release();

  SqlDatabase& db_;
  std::function<void()> numbered_;
  const std::string me_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  bool woken_ = false;
  // What this process saw of the holder's beat, and since when (its own steady clock).
  std::int64_t seen_beat_ = -1;
  std::chrono::steady_clock::time_point seen_since_{};
  std::chrono::steady_clock::time_point last_beat_{};
};

}  // namespace svc::kernel
