#include "smtp_server.h"

#include "smtp_session.h"

#include <svc/sdk/socket_io.h>

#include <Poco/Net/SecureStreamSocket.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace svc::plugins::email {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kWakeId = 0;
constexpr std::uint32_t kReadEvents = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
constexpr std::uint32_t kWriteEvents = EPOLLOUT | EPOLLONESHOT;
constexpr std::uint32_t kAnswerEvents = EPOLLONESHOT;  // only wake() re-arms it
constexpr std::uint32_t kWokenEvents = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLONESHOT;

}  // namespace

class SmtpListener {
 public:
  SmtpListener(const SmtpConfig& config, SmtpDelivery& delivery, Poco::Logger& logger,
               SmtpCounts& counts);
  ~SmtpListener();
  unsigned short port() const { return port_; }

 private:
  struct Connection;
  enum class Wait { kRead, kWrite, kAnswer, kClose };

  void acceptLoop();
  void accept();
  void workerLoop();
  Wait advance(Connection& c);
  /// Parks a connection for what it waits for. @return false when it was woken meanwhile and
  /// must be advanced again.
  bool settle(const std::shared_ptr<Connection>& c, Wait wait);
  void wake(const std::weak_ptr<Connection>& weak);
  std::shared_ptr<Connection> claim(std::uint64_t id);
  /// Removes a connection; the caller holds mutex_.
  void unregisterLocked(Connection& c);
  /// @return true when the client has closed or reset the connection (a session that only waits
  /// for an answer to send is then over: waiting on would spin on the hang-up epoll reports).
  static bool peerGone(Connection& c);
  /// Answers and closes parked connections past their deadline.
  void sweep();

  const SmtpConfig& config_;
  SmtpDelivery& delivery_;
  Poco::Logger& logger_;
  SmtpCounts& counts_;
  Poco::Net::Context::Ptr tls_;
  DataBudget budget_;
  Poco::Net::ServerSocket listener_;
  unsigned short port_ = 0;
  int epoll_fd_ = -1, wake_fd_ = -1, accept_wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;  // before any Connection::mutex
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<Connection>> connections_;
  std::unordered_map<std::string, int> per_address_;
};

struct SmtpListener::Connection {
  Connection(Poco::Net::StreamSocket s, std::string address_, std::uint64_t id_)
      : socket(std::move(s)), fd(socket.impl()->sockfd()), address(std::move(address_)), id(id_) {}
  Poco::Net::StreamSocket socket;
  const int fd;
  const std::string address;
  const std::uint64_t id;
  bool secure = false;
  std::unique_ptr<SmtpSession> session;
  std::string out;  // answers taken from the session, not yet sent
  std::size_t sent = 0;
  Clock::time_point deadline;
  std::mutex mutex;  // guards the three flags below
  bool parked = true, woken = false, closed = false;
  Wait parked_for = Wait::kWrite;  // what its epoll registration is armed for, while parked
};

SmtpListener::SmtpListener(const SmtpConfig& config, SmtpDelivery& delivery, Poco::Logger& logger,
                           SmtpCounts& counts)
    : config_(config),
      delivery_(delivery),
      logger_(logger),
      counts_(counts),
      budget_(config.max_buffered_bytes) {
  if (!config_.tls_cert_file.empty() && !config_.tls_key_file.empty()) {
    tls_ = new Poco::Net::Context(Poco::Net::Context::TLS_SERVER_USE, config_.tls_key_file,
                                  config_.tls_cert_file, "", Poco::Net::Context::VERIFY_NONE);
  }
  listener_.bind(Poco::Net::SocketAddress(config_.listen), true, false);
  listener_.listen(1024);  // a burst of connections waits here, not in SYN retries
  port_ = listener_.address().port();
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  accept_wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0 || accept_wake_fd_ < 0) {
    throw std::runtime_error("cannot create the SMTP listener's epoll set");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered and never read: every waiting worker sees it and leaves
  ev.data.u64 = kWakeId;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  const unsigned workers = std::max(4u, 2 * std::thread::hardware_concurrency());
  for (unsigned i = 0; i < workers; ++i) workers_.emplace_back([this] { workerLoop(); });
  acceptor_ = std::thread([this] { acceptLoop(); });
}

SmtpListener::~SmtpListener() {
  stopping_ = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] auto a = ::write(accept_wake_fd_, &one, sizeof one);
  acceptor_.join();
  listener_.close();
  [[maybe_unused]] auto w = ::write(wake_fd_, &one, sizeof one);
  for (auto& t : workers_) t.join();
  std::unordered_map<std::uint64_t, std::shared_ptr<Connection>> closing;
  {
    std::lock_guard lock(mutex_);
    closing.swap(connections_);
    counts_.open -= static_cast<std::int64_t>(closing.size());
    for (auto& [id, c] : closing) {
      std::lock_guard conn_lock(c->mutex);
      c->closed = true;  // a late answer must not touch the epoll set any more
    }
  }
  closing.clear();  // a session still storing a message waits for it here
  ::close(epoll_fd_);
  ::close(wake_fd_);
  ::close(accept_wake_fd_);
}

void SmtpListener::acceptLoop() {
  const int listen_fd = listener_.impl()->sockfd();
  auto last_sweep = Clock::now();
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {accept_wake_fd_, POLLIN, 0}};
    int n = ::poll(fds, 2, 1000);
    if (Clock::now() - last_sweep >= std::chrono::seconds(1)) {
      last_sweep = Clock::now();
      sweep();
    }
    if (n > 0 && !stopping_.load() && (fds[0].revents & POLLIN)) accept();
  }
}

void SmtpListener::accept() {
  try {
    Poco::Net::SocketAddress peer;
    Poco::Net::StreamSocket socket = listener_.acceptConnection(peer);
    socket.setBlocking(false);
    socket.setNoDelay(true);
    const std::string address = peer.host().toString();
    std::lock_guard lock(mutex_);
    std::string refusal;
    if (static_cast<int>(connections_.size()) >= config_.max_connections) {
      refusal = "421 4.7.0 " + config_.hostname + " Too many connections; try again later\r\n";
    } else if (config_.max_connections_per_address > 0 &&
               per_address_[address] >= config_.max_connections_per_address) {
      refusal = "421 4.7.0 " + config_.hostname +
                " Too many connections from your address; try again later\r\n";
    }
    if (!refusal.empty()) {
      if (per_address_[address] == 0) per_address_.erase(address);
      counts_.refused.fetch_add(1, std::memory_order_relaxed);
      sdk::sendSome(socket, false, refusal.data(), refusal.size());
      return;  // closing the socket ends the connection
    }
    auto c = std::make_shared<Connection>(socket, address, next_id_++);
    std::weak_ptr<Connection> weak = c;
    c->session = std::make_unique<SmtpSession>(
        config_, delivery_, logger_, tls_ != nullptr, [this, weak] { wake(weak); }, &budget_);
    c->out = c->session->greeting();
    c->deadline = Clock::now() + std::chrono::seconds(config_.idle_timeout_seconds);
    epoll_event ev{};
    ev.events = kWriteEvents;  // the greeting goes out as soon as a worker takes it
    ev.data.u64 = c->id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) return;
    ++per_address_[address];
    connections_.emplace(c->id, c);
    counts_.open.fetch_add(1, std::memory_order_relaxed);
    counts_.accepted.fetch_add(1, std::memory_order_relaxed);
  } catch (const Poco::Exception& e) {
    // Out of descriptors, or the peer reset before we took it: wait a moment, go on.
    logger_.warning("SMTP accept: %s", e.displayText());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void SmtpListener::workerLoop() {
  while (!stopping_.load()) {
    epoll_event ev{};
    if (::epoll_wait(epoll_fd_, &ev, 1, 250) <= 0 || ev.data.u64 == kWakeId) continue;
    std::shared_ptr<Connection> c = claim(ev.data.u64);
    if (!c) continue;
    for (;;) {
      Wait wait = Wait::kClose;
      try {
        wait = advance(*c);
      } catch (const std::exception& e) {
        logger_.warning("SMTP session failed: %s", std::string(e.what()));
      }
      if (settle(c, wait)) break;
    }
  }
}

std::shared_ptr<SmtpListener::Connection> SmtpListener::claim(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(id);
  if (it == connections_.end()) return nullptr;
  std::lock_guard conn_lock(it->second->mutex);
  if (!it->second->parked) {
    it->second->woken = true;  // whoever holds it now advances it again before parking it
    return nullptr;
  }
  it->second->parked = false;
  it->second->woken = false;
  return it->second;
}

// Sends what the session answered, starts TLS when it was agreed, reads what the client sent,
// until the socket would block.
SmtpListener::Wait SmtpListener::advance(Connection& c) {
  bool drained = false;
  for (;;) {
    c.out += c.session->takeOutput();
    while (c.sent < c.out.size()) {
      long n = sdk::sendSome(c.socket, c.secure, c.out.data() + c.sent, c.out.size() - c.sent);
      if (n == sdk::kSocketFailed) return Wait::kClose;
      if (n == sdk::kWantsRead) return Wait::kRead;
      if (n == 0) return Wait::kWrite;
      c.sent += static_cast<std::size_t>(n);
    }
    c.out.clear();
    c.sent = 0;
    if (c.session->tlsRequested()) {
      // TLS starts once the plain "220 Ready" is out, which may wait behind a DATA answer.
      if (c.session->answerPending()) return peerGone(c) ? Wait::kClose : Wait::kAnswer;
      std::string rest = c.session->takeOutput();
      if (!rest.empty()) {
        c.out += rest;
        continue;
      }
      c.socket = Poco::Net::SecureStreamSocket::attach(c.socket, tls_);
      c.secure = true;
      c.session->tlsStarted();
    }
    if (c.session->closing()) {
      if (c.session->answerPending()) return peerGone(c) ? Wait::kClose : Wait::kAnswer;
      // An answer stored since the output was taken goes out before the connection closes.
      std::string rest = c.session->takeOutput();
      if (rest.empty()) return Wait::kClose;
      c.out += rest;
      continue;
    }
    // A plain socket that gave less than asked for is drained: re-arming epoll reports anything
    // that came since, so no read is spent learning it would block.
    if (drained) return Wait::kRead;
    if (c.session->backlogged()) return Wait::kAnswer;  // its answer wakes it
    char buf[16384];
    long n = sdk::receiveSome(c.socket, c.secure, buf, sizeof buf);
    drained = !c.secure && n > 0 && static_cast<std::size_t>(n) < sizeof buf;
    if (n == sdk::kWouldBlock) return Wait::kRead;
    if (n <= 0) return Wait::kClose;  // the client left (a pending answer is still stored)
    c.session->feed(std::string_view(buf, static_cast<std::size_t>(n)));
    c.deadline = Clock::now() + std::chrono::seconds(c.session->inTransaction()
                                                         ? config_.timeout_seconds
                                                         : config_.idle_timeout_seconds);
  }
}

bool SmtpListener::peerGone(Connection& c) {
  char byte;
  ssize_t n = ::recv(c.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

bool SmtpListener::settle(const std::shared_ptr<Connection>& c, Wait wait) {
  if (wait == Wait::kClose) {
    std::lock_guard lock(mutex_);
    unregisterLocked(*c);
    return true;
  }
  std::lock_guard lock(c->mutex);
  if (c->woken) {
    c->woken = false;
    return false;
  }
  c->parked = true;
  c->parked_for = wait;
  epoll_event ev{};
  ev.events = wait == Wait::kRead    ? kReadEvents
              : wait == Wait::kWrite ? kWriteEvents
                                     : kAnswerEvents;
  ev.data.u64 = c->id;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
  return true;
}

// From the thread that stored a message: its answer is ready to send. The common case, a session
// parked waiting for its client's next command, is answered right here when the socket takes the
// answer at once (it does: a client waits for it), which spares a worker's wake-up per message;
// anything else is handed to a worker.
void SmtpListener::wake(const std::weak_ptr<Connection>& weak) {
  std::shared_ptr<Connection> c = weak.lock();
  if (!c) return;
  epoll_event ev{};
  ev.events = kWokenEvents;
  ev.data.u64 = c->id;
  {
    std::lock_guard lock(c->mutex);
    if (c->closed) return;
    if (!c->parked) {
      c->woken = true;  // its worker advances it again before parking it
      return;
    }
    if (c->parked_for != Wait::kRead) {
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
      return;
    }
    c->parked = false;  // this thread holds it for a moment; its registration stays armed
  }
  const std::string text = c->session->takeOutput();
  std::size_t sent = 0;
  while (sent < text.size()) {
    long n = sdk::sendSome(c->socket, c->secure, text.data() + sent, text.size() - sent);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  c->out.assign(text, sent);
  c->sent = 0;
  std::lock_guard lock(c->mutex);
  if (c->closed) return;
  const bool handoff =
      c->woken || !c->out.empty() || c->session->closing() || c->session->tlsRequested();
  c->woken = false;
  c->parked = true;
  if (handoff) ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
}

void SmtpListener::unregisterLocked(Connection& c) {
  {
    std::lock_guard conn_lock(c.mutex);
    c.closed = true;
  }
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  if (--per_address_[c.address] <= 0) per_address_.erase(c.address);
  if (connections_.erase(c.id) > 0) counts_.open.fetch_sub(1, std::memory_order_relaxed);
}

void SmtpListener::sweep() {
  std::vector<std::shared_ptr<Connection>> expired;
  const auto now = Clock::now();
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, c] : connections_) {
      std::lock_guard conn_lock(c->mutex);
      if (c->parked && c->deadline <= now && !c->session->answerPending()) expired.push_back(c);
    }
    for (auto& c : expired) unregisterLocked(*c);
  }
  for (auto& c : expired) {  // closed: no worker takes them any more
    c->session->timedOut();
    std::string text = c->out.substr(c->sent) + c->session->takeOutput();
    sdk::sendSome(c->socket, c->secure, text.data(), text.size());
  }
}

SmtpServer::SmtpServer(SmtpConfig config, SmtpDelivery& delivery, Poco::Logger& logger)
    : config_(std::move(config)), delivery_(delivery), logger_(logger) {}

SmtpServer::~SmtpServer() {
  stop();
}

void SmtpServer::start() {
  listener_ = std::make_unique<SmtpListener>(config_, delivery_, logger_, counts_);
}

void SmtpServer::stop() {
  listener_.reset();
}

unsigned short SmtpServer::port() const {
  return listener_ ? listener_->port() : 0;
}

}  // namespace svc::plugins::email
