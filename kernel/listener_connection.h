// What the kernel's listeners (listeners.h) keep of each connection (its port:
// listener_acceptor.h). The connection is also the handle a plugin's handler talks to
// (sdk::Connection): what it asks, from any thread, is recorded under the connection's mutex and
// picked up by the thread that holds the connection (the one that took it out of epoll); every
// other member belongs to that thread.
#pragma once

#include "listener_acceptor.h"
#include "listeners.h"
#include "socket_io.h"

#include <Poco/Net/StreamSocket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace svc::kernel::listening {

using Clock = std::chrono::steady_clock;

// What a parked connection waits for; kHold: nothing but its handler (reading is paused, or
// output waits for TLS), though a hang-up still wakes it.
enum class Wait { kRead, kWrite, kHold, kClose };

/// One accepted connection. Everything but the mutex-guarded part is touched only by the thread
/// holding it (the one that set parked to false).
struct Conn final : sdk::Connection {
  Conn(ListenerLoop::Impl& l, std::shared_ptr<Port> p, Poco::Net::StreamSocket s, std::string ip,
       std::string k, std::uint64_t i)
      : loop(l),
        port(std::move(p)),
        socket(std::move(s)),
        fd(socket.impl()->sockfd()),
        peer_(std::move(ip)),
        key(std::move(k)),
        id(i),
        timeout(port->options.timeout) {}

  const std::string& peer() const override { return peer_; }
  void send(std::string bytes) override {
    if (bytes.empty()) return;
    {
      std::lock_guard lock(mutex);
      if (closed || close_wanted) return;
      if (queued.empty()) {
        queued.swap(bytes);
      } else {
        queued += bytes;
      }
    }
    kick();
  }
  void close() override {
    {
      std::lock_guard lock(mutex);
      close_wanted = true;
    }
    kick();
  }
  void startTls() override {
    {
      std::lock_guard lock(mutex);
      if (tls_wanted) return;
      tls_wanted = true;
      tls_mark = queued.size();
    }
    kick();
  }
  void pauseReading(bool paused_now) override {
    bool resumed;
    {
      std::lock_guard lock(mutex);
      resumed = paused && !paused_now;
      paused = paused_now;
    }
    if (resumed) kick();
  }
  void setTimeout(std::chrono::seconds t) override {
    std::lock_guard lock(mutex);
    timeout = t;
    deadline = Clock::now() + t;
  }
  void wake() override {
    {
      std::lock_guard lock(mutex);
      wake_wanted = true;
    }
    kick();
  }

  /// Moves queued bytes to `out`: all of them, or while TLS is due those before startTls().
  /// The caller holds mutex.
  void gatherLocked() {
    if (queued.empty()) return;
    if (tls_wanted) {
      out.append(queued, 0, tls_mark);
      queued.erase(0, tls_mark);
      tls_mark = 0;
    } else if (out.empty()) {
      out.swap(queued);  // the usual case: no copy
    } else {
      out += queued;
      queued.clear();
    }
  }
  /// @return true when there is work for whoever holds it. The caller holds mutex.
  bool busyLocked() const {
    return wake_wanted || close_wanted || (tls_wanted && !secure) ||
           (!queued.empty() && !(tls_wanted && tls_mark == 0));
  }
  /// Sends `out` as far as the socket takes it. @return kSocketFailed, kWantsRead, 0
  /// when the socket is full, 1 when all is out.
  long flush() {
    while (sent < out.size()) {
      long n = sendSome(socket, secure, out.data() + sent, out.size() - sent);
      if (n < 0) return n;
      if (n == 0) return 0;
      sent += static_cast<std::size_t>(n);
    }
    out.clear();
    sent = 0;
    return 1;
  }

  void kick();

  ListenerLoop::Impl& loop;
  const std::shared_ptr<Port> port;
  Poco::Net::StreamSocket socket;
  const int fd;
  const std::string peer_;
  const std::string key;  // what the per-address limit counts
  const std::uint64_t id;
  std::unique_ptr<sdk::ConnectionHandler> handler;
  bool secure = false;
  bool hangup = false;  // the last event said the peer is gone
  std::string out;      // taken from queued, not yet sent
  std::size_t sent = 0;

  std::mutex mutex;  // guards what follows
  std::string queued;
  std::size_t tls_mark = 0;  // bytes of queued to send before TLS starts
  bool tls_wanted = false, close_wanted = false, paused = false, wake_wanted = false;
  std::chrono::seconds timeout;
  Clock::time_point deadline;
  bool parked = false, woken = false, closed = false;
  Wait parked_for = Wait::kWrite;
};

}  // namespace svc::kernel::listening
