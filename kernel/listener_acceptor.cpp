#include "listener_acceptor.h"

#include "socket_io.h"

#include <Poco/Net/SocketAddress.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>

namespace svc::kernel::listening {

namespace {

using Clock = std::chrono::steady_clock;

void notifyFd(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
}

}  // namespace

std::shared_ptr<Port> Port::open(const sdk::ListenerOptions& options,
                                 sdk::ConnectionProtocol& protocol) {
  auto port = std::make_shared<Port>(options, protocol);
  if (!options.tls_cert_file.empty() && !options.tls_key_file.empty()) {
    port->tls = new Poco::Net::Context(Poco::Net::Context::TLS_SERVER_USE, options.tls_key_file,
                                       options.tls_cert_file, "", Poco::Net::Context::VERIFY_NONE);
  }
  port->server.bind(Poco::Net::SocketAddress(options.listen), true, false);
  port->server.listen(1024);  // a burst of connections waits here, not in SYN retries
  port->port = port->server.address().port();
  return port;
}

std::optional<sdk::ConnectionProtocol::Refusal> Port::admit(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = per_address_.find(key);
  if (options.max_connections > 0 && open_ >= options.max_connections) {
    return sdk::ConnectionProtocol::Refusal::kTooManyConnections;
  }
  if (options.max_connections_per_address > 0 && it != per_address_.end() &&
      it->second >= options.max_connections_per_address) {
    return sdk::ConnectionProtocol::Refusal::kTooManyFromAddress;
  }
  ++per_address_[key];
  ++open_;
  counts.open.fetch_add(1, std::memory_order_relaxed);
  counts.accepted.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

void Port::leave(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = per_address_.find(key);
  if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
  --open_;
  counts.open.fetch_sub(1, std::memory_order_relaxed);
}

Acceptor::Acceptor(Poco::Logger& logger, Accepted accepted, std::function<void()> tick)
    : logger_(logger), accepted_(std::move(accepted)), tick_(std::move(tick)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::runtime_error("cannot create the listeners' epoll set");
}

Acceptor::~Acceptor() {
  stop();
  ::close(wake_fd_);
}

void Acceptor::stop() {
  stopping_ = true;
  notifyFd(wake_fd_);
  if (thread_.joinable()) thread_.join();
}

void Acceptor::add(const std::shared_ptr<Port>& port) {
  {
    std::lock_guard lock(mutex_);
    if (!started_) {
      started_ = true;
      thread_ = std::thread([this] { loop(); });
    }
    ports_.push_back(port);
  }
  notifyFd(wake_fd_);  // the thread polls it from now on
}

void Acceptor::remove(const std::shared_ptr<Port>& port) {
  {
    std::lock_guard lock(mutex_);
    ports_.erase(std::remove(ports_.begin(), ports_.end(), port), ports_.end());
  }
  notifyFd(wake_fd_);
  port->server.close();
}

void Acceptor::loop() {
  auto last_tick = Clock::now();
  std::vector<pollfd> fds;
  std::vector<std::shared_ptr<Port>> polled;
  while (!stopping_.load()) {
    {
      std::lock_guard lock(mutex_);
      polled = ports_;
    }
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    for (auto& p : polled) fds.push_back(pollfd{p->server.impl()->sockfd(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), 1000);
    if (fds[0].revents & POLLIN) {
      std::uint64_t count;
      [[maybe_unused]] auto r = ::read(wake_fd_, &count, sizeof count);
    }
    if (Clock::now() - last_tick >= std::chrono::seconds(1)) {
      last_tick = Clock::now();
      tick_();
    }
    for (std::size_t i = 1; n > 0 && i < fds.size() && !stopping_.load(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      std::lock_guard lock(mutex_);
      if (std::find(ports_.begin(), ports_.end(), polled[i - 1]) != ports_.end()) {
        accept(polled[i - 1]);
      }
    }
    polled.clear();
  }
}

void Acceptor::accept(const std::shared_ptr<Port>& port) {
  Poco::Net::StreamSocket socket;
  std::string ip, key;
  try {
    Poco::Net::SocketAddress peer;
    socket = port->server.acceptConnection(peer);
    socket.setBlocking(false);
    socket.setNoDelay(true);
    ip = peer.host().toString();
    key = connectionLimitKey(peer.host());
    if (auto refusal = port->admit(key)) {
      port->counts.refused.fetch_add(1, std::memory_order_relaxed);
      const std::string said = port->protocol.refused(*refusal, ip);
      if (!said.empty()) sendSome(socket, false, said.data(), said.size());
      return;  // closing the socket ends the connection
    }
  } catch (const Poco::Exception& e) {
    // Out of descriptors, or the peer reset before we took it: wait a moment, go on.
    logger_.warning("listener accept: %s", e.displayText());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return;
  }
  accepted_(port, std::move(socket), std::move(ip), std::move(key));
}

}  // namespace svc::kernel::listening
