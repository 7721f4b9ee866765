#include "api_server.h"

#include "socket_io.h"

#include <Poco/Net/SecureStreamSocket.h>

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

namespace svc::kernel {

namespace {

constexpr std::uint64_t kWakeId = 0;

std::int64_t monotonicMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
constexpr std::uint32_t kReadEvents = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
constexpr std::uint32_t kWriteEvents = EPOLLOUT | EPOLLONESHOT;

}  // namespace

struct ApiServer::Connection {
  Connection(Poco::Net::StreamSocket socket, std::string address, std::string limit_key_,
             const ConnectionLimits& limits, std::uint64_t id_, bool counted_)
      : http(std::move(socket), std::move(address), limits),
        id(id_),
        limit_key(std::move(limit_key_)),
        counted(counted_) {}
  HttpConnection http;  // owns the socket: destroying it closes the connection
  const std::uint64_t id;
  const std::string limit_key;  // what the per-address limit counts (connectionLimitKey)
  const bool counted;           // counts against its address's limit
  // Guarded by ApiServer::mutex_: waiting in epoll (true) or taken by a worker (false).
  bool parked = true;
};

ApiServer::ApiServer(Runtime& runtime, Poco::Net::ServerSocket socket, Poco::Net::Context::Ptr tls,
                     int threads, int concurrency, const ConnectionLimits& limits,
                     int max_connections, int max_per_address)
    : runtime_(runtime),
      pipeline_(runtime),
      listener_(std::move(socket)),
      tls_(std::move(tls)),
      port_(listener_.address().port()),
      threads_(threads < 1 ? 1 : threads),
      concurrency_(std::min(
          threads_, concurrency > 0
                        ? concurrency
                        : static_cast<int>(std::max(2u, 2 * std::thread::hardware_concurrency())))),
      limits_(limits),
      max_connections_(max_connections),
      max_per_address_(max_per_address),
      slots_(new WorkerSlot[static_cast<std::size_t>(threads_)]) {
  allowed_ = concurrency_;
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  accept_wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0 || accept_wake_fd_ < 0)
    throw Poco::IOException("cannot create the epoll set");
  // Level-triggered and never read: once written, every waiting worker sees it and leaves.
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeId;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

ApiServer::~ApiServer() {
  stopping_ = true;
  notifyFd(accept_wake_fd_);
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard lock(reserve_mutex_);
    stopped_ = true;
    for (WorkerSlot* waiting : reserve_) waiting->wake.notify_one();
  }
  monitor_cv_.notify_all();
  notifyFd(wake_fd_);
  for (auto& w : workers_) w.join();
  if (monitor_.joinable()) monitor_.join();
  std::lock_guard lock(mutex_);
  connections_.clear();
  per_address_.clear();
  ::close(epoll_fd_);
  ::close(wake_fd_);
  ::close(accept_wake_fd_);
}

void ApiServer::start() {
  for (int i = 0; i < threads_; ++i) {
    workers_.emplace_back([this, i] { workerLoop(slots_[static_cast<std::size_t>(i)]); });
  }
  acceptor_ = std::thread([this] { acceptLoop(); });
  monitor_ = std::thread([this] { monitorLoop(); });
}

int ApiServer::openConnections() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(connections_.size());
}

void ApiServer::notifyFd(int event_fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(event_fd, &one, sizeof one);
}

// Accepts connections and parks them; once a second, closes those past their deadline.
void ApiServer::acceptLoop() {
  const int listen_fd = listener_.impl()->sockfd();
  auto last_sweep = Clock::now();
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {accept_wake_fd_, POLLIN, 0}};
    int n = ::poll(fds, 2, 1000);
    const auto now = Clock::now();
    if (now - last_sweep >= std::chrono::seconds(1)) {
      last_sweep = now;
      closeParked(false);
    }
    if (n <= 0 || stopping_.load() || !(fds[0].revents & POLLIN)) continue;
    accept();
  }
}

void ApiServer::accept() {
  try {
    Poco::Net::SocketAddress peer;
    Poco::Net::StreamSocket socket = listener_.acceptConnection(peer);
    socket.setNoDelay(true);
    // TLS wraps the plain socket once it is non-blocking: Poco's TLS layer asks the socket it
    // wraps whether to wait, and would otherwise poll it (and time out) instead of answering
    // "would block".
    socket.setBlocking(false);
    if (tls_) socket = Poco::Net::SecureStreamSocket::attach(socket, tls_);
    const std::string address = peer.host().toString();
    const std::string key = connectionLimitKey(peer.host());
    std::lock_guard lock(mutex_);
    int& from_address = per_address_[key];
    const bool full =
        max_connections_ > 0 && static_cast<int>(connections_.size() + held_) >= max_connections_;
    const bool refused = full || (max_per_address_ > 0 && from_address >= max_per_address_);
    auto c = std::make_shared<Connection>(socket, address, key, limits_, next_id_++, !refused);
    std::uint32_t events = kReadEvents;
    if (refused) {
      if (from_address == 0) per_address_.erase(key);
      sdk::Response busy = pipeline_.refusal(
          503, "service_unavailable",
          full ? "The server has too many connections open; retry later."
               : "This address has too many connections open; reuse one, or retry later.",
          address);
      busy.headers.emplace_back("Retry-After", "5");
      c->http.refuseWith(busy);
      events = kWriteEvents;
    } else {
      ++from_address;
      // A connection handed to the hub still counts against its address until it closes.
      c->http.onHeldClosed([this, key] {
        std::lock_guard lock(mutex_);
        --held_;
        if (--per_address_[key] <= 0) per_address_.erase(key);
      });
    }
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c->id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->http.fd(), &ev) == 0) {
      connections_.emplace(c->id, c);
    } else if (c->counted && --per_address_[key] == 0) {
      per_address_.erase(key);
    }
  } catch (const Poco::Exception& e) {
    // Out of descriptors, or the peer reset before we took it: wait a moment, go on.
    if (runtime_.error_log) runtime_.error_log->warning("accept: " + e.displayText());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void ApiServer::workerLoop(WorkerSlot& slot) {
  HttpConnection::threadReadBuffer();
  std::unique_lock lock(reserve_mutex_);
  while (!stopped_.load()) {
    if (running_.load() + called_ >= allowed_.load()) {
      reserve_.push_back(&slot);
      slot.wake.wait(lock, [&] { return slot.called || stopped_.load(); });
      if (slot.called) {
        slot.called = false;
        --called_;
      } else {
        reserve_.erase(std::find(reserve_.begin(), reserve_.end(), &slot));
      }
      continue;
    }
    ++running_;
    lock.unlock();
    serveWhileAllowed(slot);
    lock.lock();
    --running_;
  }
}

void ApiServer::serveWhileAllowed(WorkerSlot& slot) {
  while (!stopped_.load()) {
    epoll_event ev{};
    int n = epoll_wait(epoll_fd_, &ev, 1, 250);
    if (n > 0 && ev.data.u64 != kWakeId) {
      if (std::shared_ptr<Connection> c = claim(ev.data.u64)) {
        slot.busy_since_us.store(monotonicMicros(), std::memory_order_relaxed);
        HttpConnection::Wait wait = HttpConnection::Wait::kClose;
        try {
          wait = c->http.advance(pipeline_, stopping_.load());
        } catch (...) {
          // A connection's failure is that connection's alone.
        }
        settle(c, wait);
        slot.busy_since_us.store(0, std::memory_order_relaxed);
      }
    }
    // One too many now that a stall has ended: step back (the caller takes the lock again).
    if (running_.load(std::memory_order_relaxed) > allowed_.load(std::memory_order_relaxed)) {
      return;
    }
  }
}

// Every few milliseconds while any worker is serving (every 100 ms otherwise): a worker on one
// request for longer than kStallUs is probably blocked, so one more may serve in its place.
void ApiServer::monitorLoop() {
  constexpr std::int64_t kStallUs = 5000;
  while (!stopped_.load()) {
    const std::int64_t now = monotonicMicros();
    int busy = 0, stalled = 0;
    for (int i = 0; i < threads_; ++i) {
      const std::int64_t since =
          slots_[static_cast<std::size_t>(i)].busy_since_us.load(std::memory_order_relaxed);
      if (since == 0) continue;
      ++busy;
      if (now - since > kStallUs) ++stalled;
    }
    const int want = std::min(threads_, concurrency_ + stalled);
    if (want != allowed_.load()) {
      std::lock_guard lock(reserve_mutex_);
      allowed_ = want;
      callReservesLocked();
    }
    std::unique_lock lock(reserve_mutex_);
    monitor_cv_.wait_for(lock,
                         busy > 0 ? std::chrono::milliseconds(2) : std::chrono::milliseconds(100),
                         [this] { return stopped_.load(); });
  }
}

void ApiServer::callReservesLocked() {
  while (running_.load() + called_ < allowed_.load() && !reserve_.empty()) {
    WorkerSlot* next = reserve_.back();
    reserve_.pop_back();
    next->called = true;
    ++called_;
    next->wake.notify_one();
  }
}

std::shared_ptr<ApiServer::Connection> ApiServer::claim(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(id);
  if (it == connections_.end() || !it->second->parked) return nullptr;
  it->second->parked = false;
  return it->second;
}

void ApiServer::settle(const std::shared_ptr<Connection>& c, HttpConnection::Wait wait) {
  std::lock_guard lock(mutex_);
  if (wait == HttpConnection::Wait::kRead || wait == HttpConnection::Wait::kWrite) {
    c->parked = true;
    epoll_event ev{};
    ev.events = wait == HttpConnection::Wait::kRead ? kReadEvents : kWriteEvents;
    ev.data.u64 = c->id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->http.fd(), &ev) == 0) return;
  }
  if (wait == HttpConnection::Wait::kDetached) {
    // The socket is the hub's now, which may have closed it already (and the descriptor number
    // been reused): leave epoll alone; closing the socket drops its disarmed registration.
    c->parked = true;  // never claimed again: its id is gone; its count ends with the stream
    if (c->counted) ++held_;
    connections_.erase(c->id);
    return;
  }
  unregisterLocked(*c);  // the last reference, the caller's, closes the socket
}

void ApiServer::unregisterLocked(Connection& c) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.http.fd(), nullptr);
  if (c.counted && --per_address_[c.limit_key] == 0) per_address_.erase(c.limit_key);
  connections_.erase(c.id);
}

void ApiServer::closeParked(bool drain) {
  std::vector<std::shared_ptr<Connection>> closing;  // closed after the lock is released
  const auto now = Clock::now();
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, c] : connections_) {
      if (!c->parked) continue;
      if (drain ? c->http.owesNothing() : c->http.expiredAt(now)) closing.push_back(c);
    }
    for (auto& c : closing) unregisterLocked(*c);
  }
  for (auto& c : closing) {
    if (!drain) c->http.expire(pipeline_);
  }
}

bool ApiServer::drain(std::chrono::milliseconds grace) {
  stopping_ = true;
  notifyFd(accept_wake_fd_);
  if (acceptor_.joinable()) acceptor_.join();
  listener_.close();  // no new connections
  const auto deadline = Clock::now() + grace;
  for (;;) {
    closeParked(true);
    closeParked(false);
    if (openConnections() == 0) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace svc::kernel
