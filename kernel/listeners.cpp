#include "listeners.h"

#include "listener_connection.h"

#include "socket_io.h"

#include <Poco/Net/SecureStreamSocket.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace svc::kernel {

using namespace listening;

namespace {

constexpr std::uint64_t kWakeId = 0;
constexpr std::size_t kReadSize = 16384;

constexpr std::uint32_t eventsFor(Wait wait) {
  return wait == Wait::kRead    ? EPOLLIN | EPOLLRDHUP | EPOLLONESHOT
         : wait == Wait::kWrite ? EPOLLOUT | EPOLLONESHOT
                                : EPOLLRDHUP | EPOLLONESHOT;  // held: still notice a hang-up
}
constexpr std::uint32_t kWokenEvents = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLONESHOT;

void notifyFd(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
}

void waitBriefly() {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

class ListenerLoop::Impl {
 public:
  explicit Impl(Poco::Logger& logger);
  ~Impl();
  std::shared_ptr<Port> add(const sdk::ListenerOptions& options, sdk::ConnectionProtocol& protocol);
  void close(const std::shared_ptr<Port>& port);
  /// Another thread changed what a connection has to do (see Conn::kick).
  void kick(Conn& c);

 private:
  void startWorkers();
  /// Takes a connection the acceptor let in: opens its handler and parks it in epoll.
  void accepted(const std::shared_ptr<Port>& port, Poco::Net::StreamSocket socket, std::string ip,
                std::string key);
  void workerLoop();
  std::shared_ptr<Conn> claim(std::uint64_t id, std::uint32_t events);
  Wait advance(Conn& c);
  /// Parks a connection the caller holds. @return false when it must be advanced again.
  bool settle(const std::shared_ptr<Conn>& c, Wait wait);
  /// Gives back a connection the caller holds without advancing it (after a timeout that did not
  /// close it, or an answer sent from another thread).
  void release(Conn& c, Wait wait);
  /// Removes a connection from the registry and epoll. @return true when this call closed it:
  /// the caller then tears it down (once it holds it). The caller holds mutex_.
  bool unregisterLocked(Conn& c);
  /// Closes a connection the caller holds: unregisters it and tears it down.
  void finish(Conn& c);
  /// Sends what is queued as far as the socket takes it, then calls the handler's closed(),
  /// destroys the handler and closes the socket.
  void teardown(Conn& c);
  /// Asks the handlers of parked connections past their deadline whether to close them.
  void sweep();

  Poco::Logger& logger_;
  int epoll_fd_ = -1, wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::once_flag started_;
  std::vector<std::thread> workers_;
  Acceptor acceptor_;

  std::mutex mutex_;  // before any Conn::mutex
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<Conn>> connections_;
};

namespace {
// The connection this thread holds, if any: what its handler asks while it runs is picked up on
// the way out, with no kick.
thread_local Conn* holding = nullptr;

struct Holding {
  explicit Holding(Conn& c) : previous(holding) { holding = &c; }
  ~Holding() { holding = previous; }
  Conn* previous;
};
}  // namespace

void Conn::kick() {
  if (holding != this) loop.kick(*this);
}

// ---------------------------------------------------------------------------------------------

class ListenerHandle : public sdk::Listener {
 public:
  ListenerHandle(std::shared_ptr<ListenerLoop::Impl> loop, std::shared_ptr<Port> port)
      : loop_(std::move(loop)), port_(std::move(port)) {}
  ~ListenerHandle() override { close(); }
  unsigned short port() const override { return port_->port; }
  const sdk::ListenerCounts& counts() const override { return port_->counts; }
  void close() override {
    if (closed_) return;
    closed_ = true;
    loop_->close(port_);
  }

 private:
  std::shared_ptr<ListenerLoop::Impl> loop_;
  std::shared_ptr<Port> port_;
  bool closed_ = false;
};

ListenerLoop::ListenerLoop(Poco::Logger& logger) : impl_(std::make_shared<Impl>(logger)) {}

ListenerLoop::~ListenerLoop() = default;

std::unique_ptr<sdk::Listener> ListenerLoop::open(const sdk::ListenerOptions& options,
                                                  sdk::ConnectionProtocol& protocol) {
  return std::make_unique<ListenerHandle>(impl_, impl_->add(options, protocol));
}

ListenerLoop::Impl::Impl(Poco::Logger& logger)
    : logger_(logger),
      acceptor_(
          logger,
          [this](const std::shared_ptr<Port>& port, Poco::Net::StreamSocket socket, std::string ip,
                 std::string key) {
            accepted(port, std::move(socket), std::move(ip), std::move(key));
          },
          [this] { sweep(); }) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    throw std::runtime_error("cannot create the listeners' epoll set");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered and never read: every waiting worker sees it and leaves
  ev.data.u64 = kWakeId;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

ListenerLoop::Impl::~Impl() {
  stopping_ = true;
  notifyFd(wake_fd_);
  acceptor_.stop();
  for (auto& t : workers_) t.join();
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

void ListenerLoop::Impl::startWorkers() {
  const unsigned workers = std::max(4u, 2 * std::thread::hardware_concurrency());
  for (unsigned i = 0; i < workers; ++i) workers_.emplace_back([this] { workerLoop(); });
}

std::shared_ptr<Port> ListenerLoop::Impl::add(const sdk::ListenerOptions& options,
                                              sdk::ConnectionProtocol& protocol) {
  auto port = Port::open(options, protocol);
  std::call_once(started_, [this] { startWorkers(); });
  acceptor_.add(port);
  return port;
}

void ListenerLoop::Impl::close(const std::shared_ptr<Port>& port) {
  acceptor_.remove(port);
  std::vector<std::shared_ptr<Conn>> closing;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, c] : connections_) {
      if (c->port == port) closing.push_back(c);
    }
    for (auto& c : closing) unregisterLocked(*c);
  }
  for (auto& c : closing) {
    for (;;) {  // a callback still running on it returns first
      {
        std::lock_guard lock(c->mutex);
        if (c->parked) break;
      }
      waitBriefly();
    }
    teardown(*c);
  }
  while (port->alive.load() > 0) waitBriefly();  // those being closed by a worker meanwhile
}

void ListenerLoop::Impl::accepted(const std::shared_ptr<Port>& port, Poco::Net::StreamSocket socket,
                                  std::string ip, std::string key) {
  std::shared_ptr<Conn> c;
  {
    std::lock_guard lock(mutex_);
    port->alive.fetch_add(1);
    c = std::make_shared<Conn>(*this, port, std::move(socket), std::move(ip), std::move(key),
                               next_id_++);
  }
  c->deadline = Clock::now() + c->timeout;
  {
    Holding held(*c);
    try {
      c->handler = port->protocol.open(c);
    } catch (const std::exception& e) {
      logger_.warning("listener connection from %s refused by its protocol: %s", c->peer(),
                      std::string(e.what()));
    }
  }
  if (c->handler) {
    std::lock_guard lock(mutex_);
    std::lock_guard conn_lock(c->mutex);
    epoll_event ev{};
    ev.events = eventsFor(Wait::kWrite);  // the greeting goes out as soon as a worker takes it
    ev.data.u64 = c->id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) == 0) {
      connections_.emplace(c->id, c);
      c->parked = true;
      c->parked_for = Wait::kWrite;
      return;
    }
  }
  finish(*c);  // a connection without a handler, or that epoll cannot wait for, ends at once
}

void ListenerLoop::Impl::workerLoop() {
  while (!stopping_.load()) {
    epoll_event ev{};
    if (::epoll_wait(epoll_fd_, &ev, 1, 250) <= 0 || ev.data.u64 == kWakeId) continue;
    std::shared_ptr<Conn> c = claim(ev.data.u64, ev.events);
    if (!c) continue;
    Holding held(*c);
    for (;;) {
      Wait wait = Wait::kClose;
      try {
        wait = advance(*c);
      } catch (const std::exception& e) {
        logger_.warning("listener connection from %s failed: %s", c->peer(), std::string(e.what()));
      }
      if (settle(c, wait)) break;
    }
  }
}

std::shared_ptr<Conn> ListenerLoop::Impl::claim(std::uint64_t id, std::uint32_t events) {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(id);
  if (it == connections_.end()) return nullptr;
  Conn& c = *it->second;
  std::lock_guard conn_lock(c.mutex);
  if (!c.parked) {
    c.woken = true;  // whoever holds it now advances it again before parking it
    return nullptr;
  }
  c.parked = false;
  c.woken = false;
  // Consulted only while reading is paused: then a client that shut its side is gone, and its
  // slot is freed rather than kept until the handler's answer.
  c.hangup = (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) != 0;
  return it->second;
}

// Sends what the handler queued, starts TLS when asked, reads what the client sent and hands it
// to the handler, until the socket would block or the handler waits for something else.
Wait ListenerLoop::Impl::advance(Conn& c) {
  bool drained = false;
  char* buf = nullptr;
  for (;;) {
    bool wake = false;
    {
      std::lock_guard lock(c.mutex);
      wake = c.wake_wanted;
      c.wake_wanted = false;
    }
    if (wake) c.handler->woken(c);
    {
      std::lock_guard lock(c.mutex);
      c.gatherLocked();
    }
    long flushed = c.flush();
    if (flushed == kSocketFailed) return Wait::kClose;
    if (flushed == kWantsRead) return Wait::kRead;
    if (flushed == 0) return Wait::kWrite;
    bool more, tls, close, paused;
    std::chrono::seconds timeout;
    {
      std::lock_guard lock(c.mutex);
      more = c.wake_wanted || (!c.queued.empty() && !(c.tls_wanted && c.tls_mark == 0));
      tls = c.tls_wanted && c.tls_mark == 0;
      close = c.close_wanted;
      paused = c.paused;
      timeout = c.timeout;
    }
    if (more) continue;
    if (tls && !c.secure) {
      if (!c.port->tls) return Wait::kClose;
      c.socket = Poco::Net::SecureStreamSocket::attach(c.socket, c.port->tls);
      c.secure = true;
      {
        std::lock_guard lock(c.mutex);
        c.tls_wanted = false;
      }
      c.handler->secured(c);
      continue;
    }
    if (close) return Wait::kClose;
    // A plain socket that gave less than asked for is drained: re-arming epoll reports anything
    // that came since, so no read is spent learning it would block.
    if (drained) return Wait::kRead;
    if (paused) return c.hangup ? Wait::kClose : Wait::kHold;
    if (!buf) {
      thread_local char read_buffer[kReadSize];
      buf = read_buffer;
    }
    long n = receiveSome(c.socket, c.secure, buf, kReadSize);
    if (n == kWouldBlock) return Wait::kRead;
    if (n <= 0) return Wait::kClose;  // the client left
    drained = !c.secure && static_cast<std::size_t>(n) < kReadSize;
    {
      std::lock_guard lock(c.mutex);
      c.deadline = Clock::now() + timeout;
    }
    c.handler->received(c, std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

bool ListenerLoop::Impl::settle(const std::shared_ptr<Conn>& c, Wait wait) {
  if (wait == Wait::kClose) {
    finish(*c);
    return true;
  }
  std::lock_guard lock(c->mutex);
  if (c->closed) {
    c->parked = true;  // whoever closed it tears it down
    return true;
  }
  if (c->woken) {
    c->woken = false;
    return false;
  }
  c->parked = true;
  c->parked_for = wait;
  epoll_event ev{};
  ev.events = eventsFor(wait);
  ev.data.u64 = c->id;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
  return true;
}

void ListenerLoop::Impl::release(Conn& c, Wait wait) {
  std::lock_guard lock(c.mutex);
  c.parked = true;
  if (c.closed) return;
  const bool handoff = c.woken || !c.out.empty() || c.busyLocked();
  c.woken = false;
  if (!handoff && wait == Wait::kRead) return;  // its registration is still armed
  c.parked_for = handoff ? Wait::kWrite : wait;
  epoll_event ev{};
  ev.events = handoff ? kWokenEvents : eventsFor(wait);
  ev.data.u64 = c.id;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

// From another thread: the handler has something for its connection. The common case, one parked
// waiting for its client, is served right here when the socket takes what was queued at once (it
// does: a client waits for it); anything else is handed to a worker.
void ListenerLoop::Impl::kick(Conn& c) {
  {
    std::lock_guard lock(c.mutex);
    if (c.closed) return;
    if (!c.parked) {
      c.woken = true;  // its holder advances it again before parking it
      return;
    }
    if (c.parked_for != Wait::kRead || c.close_wanted || c.tls_wanted) {
      c.parked_for = Wait::kWrite;  // a worker takes it from here
      epoll_event ev{};
      ev.events = kWokenEvents;
      ev.data.u64 = c.id;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
      return;
    }
    c.parked = false;  // this thread holds it for a moment; its registration stays armed
  }
  {
    Holding held(c);
    bool wake;
    {
      std::lock_guard lock(c.mutex);
      wake = c.wake_wanted;
      c.wake_wanted = false;
    }
    try {
      if (wake) c.handler->woken(c);
      {
        std::lock_guard lock(c.mutex);
        c.gatherLocked();
      }
      c.flush();  // what the socket does not take now, a worker sends
    } catch (const std::exception& e) {
      logger_.warning("listener connection from %s failed: %s", c.peer(), std::string(e.what()));
      std::lock_guard lock(c.mutex);
      c.close_wanted = true;
    }
  }
  release(c, Wait::kRead);
}

bool ListenerLoop::Impl::unregisterLocked(Conn& c) {
  {
    std::lock_guard conn_lock(c.mutex);
    if (c.closed) return false;
    c.closed = true;
  }
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  connections_.erase(c.id);
  c.port->leave(c.key);
  return true;
}

void ListenerLoop::Impl::finish(Conn& c) {
  bool mine;
  {
    std::lock_guard lock(mutex_);
    mine = unregisterLocked(c);
  }
  if (mine) {
    teardown(c);
  } else {
    std::lock_guard lock(c.mutex);
    c.parked = true;  // whoever closed it tears it down
  }
}

void ListenerLoop::Impl::teardown(Conn& c) {
  {
    Holding held(c);
    try {
      {
        std::lock_guard lock(c.mutex);
        c.gatherLocked();
      }
      c.flush();
      if (c.handler) c.handler->closed();
    } catch (const std::exception& e) {
      logger_.warning("listener connection from %s failed to close: %s", c.peer(),
                      std::string(e.what()));
    }
    c.handler.reset();
  }
  try {
    c.socket.close();
  } catch (const Poco::Exception&) {
  }
  c.port->alive.fetch_sub(1);
}

void ListenerLoop::Impl::sweep() {
  std::vector<std::shared_ptr<Conn>> expired;
  const auto now = Clock::now();
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, c] : connections_) {
      std::lock_guard conn_lock(c->mutex);
      if (c->parked && c->deadline <= now) {
        c->parked = false;  // held by this thread now
        expired.push_back(c);
      }
    }
  }
  for (auto& c : expired) {
    bool close = true;
    {
      Holding held(*c);
      try {
        close = c->handler->timedOut(*c);
      } catch (const std::exception& e) {
        logger_.warning("listener connection from %s failed: %s", c->peer(), std::string(e.what()));
      }
    }
    if (close) {
      c->port->counts.timed_out.fetch_add(1, std::memory_order_relaxed);
      finish(*c);
      continue;
    }
    Wait wait;
    {
      std::lock_guard lock(c->mutex);
      c->deadline = now + c->timeout;
      wait = c->parked_for;
    }
    release(*c, wait);
  }
}

}  // namespace svc::kernel
