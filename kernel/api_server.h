// The HTTP listener: connections wait in epoll, not in threads.
//
// An accepted connection (an HttpConnection: a state machine over a non-blocking socket) is parked
// in an epoll set until it is ready for what it waits for. Workers wait on that set themselves (no
// dispatcher thread hands work over): a worker takes one ready connection, advances it as far as
// the socket allows (reading, serving complete requests through the Pipeline, writing; held
// responses go to the StreamHub), and parks it again. A client that is idle, slow to send its
// head or body, or slow to read its answer costs a socket and a small struct, not a thread, and
// ready connections are served in the order they became ready.
//
// Each client address (an IPv6 /64) may hold `max_per_address` connections and the server
// `max_connections` in all, held responses included (so the hub must stop before this server is
// destroyed); one more is answered 503 and closed, so clients cannot take every descriptor.
//
// How many workers serve at once: `concurrency` (about two per core), because every runnable
// thread beyond the cores only lengthens the run queue and the latency tail. A handler may block
// (a database write, an outbound HTTP or DNS call), so a monitor counts workers that have been on
// one request longer than a few milliseconds as stalled and lets as many reserve workers in, up
// to `threads` in all; when the stalls end the extra workers step back.
//
// Once a second the acceptor closes parked connections past their deadline (HttpConnection says
// which); a drain closes those between requests at once and lets the others finish.
#pragma once

#include "http_connection.h"
#include "pipeline.h"

#include <Poco/Net/Context.h>
#include <Poco/Net/ServerSocket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace svc::kernel {

class ApiServer {
 public:
  /// @param socket a bound, listening socket.
  /// @param tls when set, each accepted connection speaks TLS with this context.
  /// @param threads workers in all (the most that serve at once while others are stalled).
  /// @param concurrency workers that serve at once when none is stalled (0: two per core).
  /// @param limits the connections' deadlines and head limits.
  /// @param max_connections connections in all (0: no limit).
  /// @param max_per_address connections one client address (an IPv6 /64) may hold (0: no limit).
  ApiServer(Runtime& runtime, Poco::Net::ServerSocket socket, Poco::Net::Context::Ptr tls,
            int threads, int concurrency, const ConnectionLimits& limits, int max_connections,
            int max_per_address);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  /// Starts accepting and serving.
  void start();
  /// Stops accepting, ends idle connections, waits up to `grace` for busy ones.
  /// @return true when every connection finished in time.
  bool drain(std::chrono::milliseconds grace);
  /// @return the port it listens on.
  Poco::UInt16 port() const { return port_; }
  /// @return connections open (parked or being served; held responses are the hub's).
  int openConnections() const;

 private:
  struct Connection;
  using Clock = std::chrono::steady_clock;

  struct WorkerSlot {
    std::atomic<std::int64_t> busy_since_us{0};  // 0: not serving
    std::condition_variable wake;                // a reserve worker waits here
    bool called = false;                         // under reserve_mutex_: woken to serve
  };
  void acceptLoop();
  void workerLoop(WorkerSlot& slot);
  /// Serves ready connections until this worker is one too many or the server stops.
  void serveWhileAllowed(WorkerSlot& slot);
  void monitorLoop();
  /// Wakes reserve workers, the most recently parked first, while fewer serve than allowed.
  /// The caller holds reserve_mutex_.
  void callReservesLocked();
  void accept();
  std::shared_ptr<Connection> claim(std::uint64_t id);
  void settle(const std::shared_ptr<Connection>& c, HttpConnection::Wait wait);
  /// Removes a connection from the registry and epoll; the caller holds mutex_.
  void unregisterLocked(Connection& c);
  /// Closes parked connections: those past their deadline, or (`drain`) those between requests.
  void closeParked(bool drain);
  /// Makes an eventfd readable for good.
  static void notifyFd(int event_fd);

  Runtime& runtime_;
  Pipeline pipeline_;
  Poco::Net::ServerSocket listener_;
  Poco::Net::Context::Ptr tls_;
  Poco::UInt16 port_;
  int threads_;
  int concurrency_;
  ConnectionLimits limits_;
  int max_connections_;
  int max_per_address_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;         // in the epoll set: workers leave
  int accept_wake_fd_ = -1;  // the acceptor leaves
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};
  std::thread acceptor_;
  std::thread monitor_;
  std::vector<std::thread> workers_;
  std::unique_ptr<WorkerSlot[]> slots_;

  // Workers allowed to serve (concurrency_ + stalled ones) and those serving; the rest wait in
  // reserve_, each on its own slot's condition. running_ changes under reserve_mutex_. The
  // reserve is a stack: the worker parked last is called first, so light traffic keeps to the
  // same few threads and their warm caches and malloc arenas, instead of rotating through all
  // of them (which grew the soak's resident memory by half in ten minutes).
  std::mutex reserve_mutex_;
  std::vector<WorkerSlot*> reserve_;
  int called_ = 0;  // woken from the reserve, not yet serving
  std::condition_variable monitor_cv_;
  std::atomic<int> allowed_{0};
  std::atomic<int> running_{0};

  mutable std::mutex mutex_;
  std::uint64_t next_id_ = 1;  // 0 is the wake-up descriptor
  std::unordered_map<std::uint64_t, std::shared_ptr<Connection>> connections_;
  std::unordered_map<std::string, int> per_address_;
  std::size_t held_ = 0;  // connections handed to the hub and still open
};

}  // namespace svc::kernel
