// Cuts a delivery attempt that runs past its deadline.
//
// A socket timeout bounds each read, not an attempt: a receiver that trickles its answer a byte
// at a time, each within the timeout, would hold a delivery worker (and its webhook's lease) for
// as long as it likes. A sender arms this watchdog with its socket and the attempt's deadline;
// when the deadline passes (or stop() is called) the watchdog shuts the socket down, so the read
// in flight returns at once and the attempt fails.
#pragma once

#include <Poco/Net/Socket.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace svc::plugins::webhooks {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;

  Watchdog();
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Watches socket until deadline. @return a token for disarm().
  std::uint64_t arm(poco_socket_t socket, Clock::time_point deadline);
  /// Stops watching (call before the socket is closed). @return whether the watchdog shut the
  /// socket down (the deadline passed, or stop()).
  bool disarm(std::uint64_t token);
  /// Shuts every watched socket down now and every socket armed from now on.
  void stop();

 private:
  void loop();

  struct Watch {
    poco_socket_t socket;
    Clock::time_point deadline;
    bool fired = false;
  };
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::uint64_t, Watch> watches_;
  std::uint64_t next_ = 1;
  bool stopping_ = false, quit_ = false;
  std::thread thread_;
};

}  // namespace svc::plugins::webhooks
