// Keeps svcd's resident memory to what it uses.
//
// glibc's malloc gives threads arenas of their own (up to eight per core) and hands freed memory
// back to the system only from the top of an arena. svcd's workers take turns (a reserve wakes
// while others block), so over hours more threads, and more arenas, take part, and the footprint
// grows long after the traffic has settled: the 10-minute soak grew by 12 MiB while the live heap
// grew by about one (measured with heaptrack). Two measures, as long-running servers on glibc
// take them (MALLOC_ARENA_MAX, periodic trimming):
//   - limitMallocArenas() caps the arenas at one per core;
//   - a MemoryRelease thread calls malloc_trim once a minute, which returns every whole free page
//     of every arena (not only the top) to the system.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace svc::kernel {

/// Caps malloc's arenas at one per core (at least two). Call before any thread starts.
void limitMallocArenas();

/// A thread that returns malloc's free pages to the system at a fixed interval.
class MemoryRelease {
 public:
  /// @param every how often to trim.
  explicit MemoryRelease(std::chrono::seconds every = std::chrono::seconds(60));
  ~MemoryRelease();
  MemoryRelease(const MemoryRelease&) = delete;
  MemoryRelease& operator=(const MemoryRelease&) = delete;

  /// Starts the thread.
  void start();
  /// Stops and joins the thread; safe to call twice.
  void stop();

 private:
  void run();

  std::chrono::seconds every_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace svc::kernel
