#include "memory_release.h"

#include <malloc.h>

#include <algorithm>

namespace svc::kernel {

void limitMallocArenas() {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  mallopt(M_ARENA_MAX, std::max(2, cores));
}

MemoryRelease::MemoryRelease(std::chrono::seconds every) : every_(every) {}

MemoryRelease::~MemoryRelease() {
  stop();
}

void MemoryRelease::start() {
  thread_ = std::thread([this] { run(); });
}

void MemoryRelease::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MemoryRelease::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, every_, [this] { return stopping_; })) {
    lock.unlock();
    malloc_trim(0);
    lock.lock();
  }
}

}  // namespace svc::kernel
