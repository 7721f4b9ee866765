#include "stop_signals.h"

#include <signal.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace svc::kernel::stop_signals {

namespace {
std::mutex mutex;
std::condition_variable asked;
bool serving_now = false;
bool requested = false;
}  // namespace

void install() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGQUIT);
  // Poco's convention: SIGINT is the debugger's when POCO_ENABLE_DEBUGGER is set.
  if (!std::getenv("POCO_ENABLE_DEBUGGER")) sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      std::lock_guard lock(mutex);
      if (!serving_now || requested) std::_Exit(128 + sig);
      requested = true;
      asked.notify_all();
    }
  }).detach();
}

void serving() {
  std::lock_guard lock(mutex);
  serving_now = true;
}

void wait() {
  std::unique_lock lock(mutex);
  asked.wait(lock, [] { return requested; });
}

}  // namespace svc::kernel::stop_signals
