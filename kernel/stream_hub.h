// Held responses without held threads.
//
// A handler that returns Response::hold() gets its connection taken from Poco's HTTP server
// (HTTPServerRequestImpl::detachSocket) and adopted here. One thread waits on all held sockets with
// epoll: it notices peers that go away, flushes queued bytes as sockets drain, and fires timers.
// Writes from any thread go straight to the non-blocking socket when it has room, so a stream
// costs a socket, a small struct and its queued bytes, not a worker.
#pragma once

#include <svc/sdk/http.h>

#include <Poco/Net/StreamSocket.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace svc::kernel {

class HeldStream;

class StreamHub {
 public:
  /// @param max_buffer bytes queued for one peer before it is disconnected as too slow.
  /// @param send_timeout how long queued bytes may wait with none taken before the peer is
  /// disconnected as stalled (server.send_timeout_seconds).
  explicit StreamHub(std::size_t max_buffer,
                     std::chrono::milliseconds send_timeout = std::chrono::seconds(30));
  ~StreamHub();
  StreamHub(const StreamHub&) = delete;
  StreamHub& operator=(const StreamHub&) = delete;

  void start();
  /// Closes every held stream and stops the thread.
  void stop();

  /// Takes a connection. @param socket the detached socket. @param request_id its X-Request-Id.
  /// @param on_done called once when the stream closes, with the status it answered (0: none).
  std::shared_ptr<sdk::Stream> adopt(Poco::Net::StreamSocket socket, std::string request_id,
                                     std::function<void(int status)> on_done);
  /// @return held streams now open.
  std::size_t openCount() const { return open_.load(); }
  /// @return timers not yet fired (a closed stream leaves none).
  std::size_t timerCount() const;

 private:
  friend class HeldStream;
  using Clock = std::chrono::steady_clock;
  void run();
  void wantWrite(int fd, bool on);
  void forget(int fd);
  using TimerKey = std::pair<Clock::time_point, std::uint64_t>;
  /// @return the key that cancelTimer() takes.
  TimerKey addTimer(Clock::time_point when, std::weak_ptr<HeldStream> stream);
  /// Drops a timer that has not fired (a stream that closed or set another).
  void cancelTimer(const TimerKey& key);
  /// Closes streams whose queued bytes have waited send_timeout with none taken.
  void closeStalled();
  void wake();
  static void refuseForStop(HeldStream& stream);

  std::size_t max_buffer_;
  std::chrono::milliseconds send_timeout_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> running_{false};
  std::atomic<std::size_t> open_{0};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<int, std::shared_ptr<HeldStream>> streams_;
  bool stopped_ = false;                                  // guarded by mutex_
  std::map<TimerKey, std::weak_ptr<HeldStream>> timers_;  // by when, then a unique number
  std::uint64_t next_timer_ = 0;
};

}  // namespace svc::kernel
