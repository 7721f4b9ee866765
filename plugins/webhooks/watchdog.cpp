#include "watchdog.h"

#include <sys/socket.h>

#include <algorithm>

namespace svc::plugins::webhooks {

namespace {

void cut(poco_socket_t socket) {
  // Shut down, not closed: the descriptor stays the sender's (closing it here could close a
  // descriptor reused by another thread meanwhile).
  ::shutdown(socket, SHUT_RDWR);
}

}  // namespace

Watchdog::Watchdog() : thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::uint64_t Watchdog::arm(poco_socket_t socket, Clock::time_point deadline) {
  std::lock_guard lock(mutex_);
  const std::uint64_t token = next_++;
  Watch& w = watches_[token] = Watch{socket, deadline, false};
  if (stopping_) {
    cut(socket);
    w.fired = true;
  }
  wake_.notify_all();
  return token;
}

bool Watchdog::disarm(std::uint64_t token) {
  std::lock_guard lock(mutex_);
  const auto it = watches_.find(token);
  if (it == watches_.end()) return false;
  const bool fired = it->second.fired;
  watches_.erase(it);
  return fired;
}

void Watchdog::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  for (auto& [token, w] : watches_) {
    if (!w.fired) cut(w.socket);
    w.fired = true;
  }
}

void Watchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!quit_) {
    Clock::time_point next = Clock::now() + std::chrono::seconds(1);
    const Clock::time_point now = Clock::now();
    for (auto& [token, w] : watches_) {
      if (w.fired) continue;
      if (w.deadline <= now) {
        cut(w.socket);
        w.fired = true;
      } else {
        next = std::min(next, w.deadline);
      }
    }
    wake_.wait_until(lock, next);
  }
}

}  // namespace svc::plugins::webhooks
