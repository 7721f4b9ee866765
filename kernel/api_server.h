// The HTTP listener: connections wait in epoll, not in threads.
//
// An accepted connection is parked in an epoll set until it is readable. Workers wait on that set
// themselves (no dispatcher thread hands work over): a worker takes one ready connection, serves
// the requests it has sent with Poco's HTTPServerSession (malformed requests answered in the
// contract's error shape, held responses handed to the StreamHub), and parks it again. Idle
// keep-alive connections and clients that send nothing cost a socket and a small struct, not a
// thread, and ready connections are served in the order they became ready.
//
// How many workers serve at once: `concurrency` (about two per core), because every runnable
// thread beyond the cores only lengthens the run queue and the latency tail. A handler may block
// (a database write, an outbound HTTP or DNS call), so a monitor counts workers that have been on
// one request longer than a few milliseconds as stalled and lets as many reserve workers in, up
// to `threads` in all; when the stalls end the extra workers step back.
//
// Parked connections idle longer than the idle timeout are closed; a drain closes parked ones at
// once and lets busy ones finish.
#pragma once

#include "pipeline.h"

#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/ServerSocket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace svc::kernel {

class ApiServer {
 public:
  /// @param socket a bound, listening socket (plain or TLS).
  /// @param threads workers in all (the most that serve at once while others are stalled).
  /// @param concurrency workers that serve at once when none is stalled (0: two per core).
  /// @param idle_timeout_seconds a connection silent this long between requests is closed.
  ApiServer(Runtime& runtime, Poco::Net::ServerSocket socket, int threads, int concurrency,
            int idle_timeout_seconds);
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
  enum class Outcome { kPark, kClose, kDetached };
  using Clock = std::chrono::steady_clock;

  struct WorkerSlot {
    std::atomic<std::int64_t> busy_since_us{0};  // 0: not serving
  };
  void acceptLoop();
  void workerLoop(WorkerSlot& slot);
  /// Serves ready connections until this worker is one too many or the server stops.
  void serveWhileAllowed(WorkerSlot& slot);
  void monitorLoop();
  std::shared_ptr<Connection> claim(std::uint64_t id);
  Outcome serveReady(Connection& c);
  void sendMalformed(Connection& c, const std::string& why);
  void settle(const std::shared_ptr<Connection>& c, Outcome outcome);
  /// Removes a connection from the registry and epoll; the caller holds mutex_.
  void unregisterLocked(Connection& c);
  /// Closes parked connections: all of them, or those idle since before `cutoff`.
  void closeParked(bool all, Clock::time_point cutoff);
  /// Makes an eventfd readable for good.
  static void notifyFd(int event_fd);

  Runtime& runtime_;
  Pipeline pipeline_;
  Poco::Net::HTTPServerParams::Ptr params_;
  Poco::Net::ServerSocket listener_;
  Poco::UInt16 port_;
  int threads_;
  int concurrency_;
  std::chrono::seconds idle_timeout_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;         // in the epoll set: workers leave
  int accept_wake_fd_ = -1;  // the acceptor leaves
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};
  std::thread acceptor_;
  std::thread monitor_;
  std::vector<std::thread> workers_;
  std::unique_ptr<WorkerSlot[]> slots_;

  // Workers allowed to serve (concurrency_ + stalled ones) and those serving; the rest wait on
  // reserve_cv_. running_ changes under reserve_mutex_.
  std::mutex reserve_mutex_;
  std::condition_variable reserve_cv_;
  std::condition_variable monitor_cv_;
  std::atomic<int> allowed_{0};
  std::atomic<int> running_{0};

  mutable std::mutex mutex_;
  std::uint64_t next_id_ = 1;  // 0 is the wake-up descriptor
  std::unordered_map<std::uint64_t, std::shared_ptr<Connection>> connections_;
};

}  // namespace svc::kernel
