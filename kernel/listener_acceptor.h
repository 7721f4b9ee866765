// The accepting side of the kernel's listeners (listeners.h): the ports plugins listen on, with
// their limits, and the one thread that polls them, accepts, refuses what is over a port's limits
// and hands the rest to the loop. The same thread also ticks about once a second, when the loop
// sweeps connections silent past their timeout.
#pragma once

#include <svc/sdk/listeners.h>

#include <Poco/Logger.h>
#include <Poco/Net/Context.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/StreamSocket.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace svc::kernel::listening {

/// One listening socket a plugin opened, with its options, protocol, limits and figures.
struct Port {
  Port(const sdk::ListenerOptions& o, sdk::ConnectionProtocol& p) : options(o), protocol(p) {}
  /// Binds and listens on options.listen (with TLS when it names a certificate and key).
  static std::shared_ptr<Port> open(const sdk::ListenerOptions& options,
                                    sdk::ConnectionProtocol& protocol);

  /// Counts a connection from `key` (connectionLimitKey) in. @return why it is refused, if it is.
  std::optional<sdk::ConnectionProtocol::Refusal> admit(const std::string& key);
  /// Counts out a connection admit() let in.
  void leave(const std::string& key);

  const sdk::ListenerOptions options;
  sdk::ConnectionProtocol& protocol;
  Poco::Net::ServerSocket server;
  Poco::Net::Context::Ptr tls;
  unsigned short port = 0;
  sdk::ListenerCounts counts;
  std::atomic<int> alive{0};  // connections not yet torn down

 private:
  std::mutex mutex_;  // guards what follows; taken last
  int open_ = 0;
  std::unordered_map<std::string, int> per_address_;
};

class Acceptor {
 public:
  /// Gets a connection within its port's limits, on the acceptor's thread, while the port cannot
  /// be closed: the socket (non-blocking), the peer's address and its connectionLimitKey.
  using Accepted = std::function<void(const std::shared_ptr<Port>&, Poco::Net::StreamSocket,
                                      std::string ip, std::string key)>;

  /// @param tick called about once a second on the acceptor's thread.
  Acceptor(Poco::Logger& logger, Accepted accepted, std::function<void()> tick);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  /// Accepts on the port from now on. The thread starts with the first port.
  void add(const std::shared_ptr<Port>& port);
  /// Accepts on the port no more (once this returns, no accept on it is under way) and closes
  /// its socket.
  void remove(const std::shared_ptr<Port>& port);
  /// Stops and joins the thread.
  void stop();

 private:
  void loop();
  void accept(const std::shared_ptr<Port>& port);

  Poco::Logger& logger_;
  const Accepted accepted_;
  const std::function<void()> tick_;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;

  // Held while accepting (a port removed under it is never accepted on again).
  std::mutex mutex_;
  bool started_ = false;
  std::vector<std::shared_ptr<Port>> ports_;
};

}  // namespace svc::kernel::listening
