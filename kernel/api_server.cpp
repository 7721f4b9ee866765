#include "api_server.h"

#include <Poco/Net/HTTPServerRequestImpl.h>
#include <Poco/Net/HTTPServerResponseImpl.h>
#include <Poco/Net/HTTPServerSession.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/SecureStreamSocketImpl.h>
#include <Poco/Timestamp.h>

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace svc::kernel {

namespace {

// Poco's session, with the size of its read buffer visible: a pipelined request already buffered
// must be served before the connection is parked (epoll cannot see bytes Poco has read).
class ApiSession : public Poco::Net::HTTPServerSession {
 public:
  using HTTPServerSession::HTTPServerSession;
  int pending() const { return buffered(); }
};

constexpr std::uint64_t kWakeId = 0;

std::int64_t monotonicMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
constexpr std::uint32_t kParkedEvents = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;

}  // namespace

struct ApiServer::Connection {
  Connection(const Poco::Net::StreamSocket& socket, Poco::Net::HTTPServerParams::Ptr params,
             std::uint64_t id_)
      : session(socket, params),
        id(id_),
        fd(socket.impl()->sockfd()),
        secure(dynamic_cast<Poco::Net::SecureStreamSocketImpl*>(socket.impl()) != nullptr) {}
  ApiSession session;  // owns the socket: destroying it closes the connection
  const std::uint64_t id;
  const int fd;
  const bool secure;
  bool first_request = true;  // only its worker touches it
  // Guarded by ApiServer::mutex_: waiting in epoll (true) or taken by a worker (false).
  bool parked = true;
  Clock::time_point idle_since = Clock::now();
};

ApiServer::ApiServer(Runtime& runtime, Poco::Net::ServerSocket socket, int threads, int concurrency,
                     int idle_timeout_seconds)
    : runtime_(runtime),
      pipeline_(runtime),
      params_(new Poco::Net::HTTPServerParams),
      listener_(std::move(socket)),
      port_(listener_.address().port()),
      threads_(threads < 1 ? 1 : threads),
      concurrency_(std::min(
          threads_, concurrency > 0
                        ? concurrency
                        : static_cast<int>(std::max(2u, 2 * std::thread::hardware_concurrency())))),
      idle_timeout_(idle_timeout_seconds),
      slots_(new WorkerSlot[static_cast<std::size_t>(threads_)]) {
  allowed_ = concurrency_;
  params_->setKeepAlive(true);
  params_->setMaxKeepAliveRequests(0);  // unlimited
  params_->setTimeout(Poco::Timespan(idle_timeout_seconds, 0));
  params_->setKeepAliveTimeout(Poco::Timespan(idle_timeout_seconds, 0));
  params_->setServerName("svcd");
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
  }
  reserve_cv_.notify_all();
  monitor_cv_.notify_all();
  notifyFd(wake_fd_);
  for (auto& w : workers_) w.join();
  if (monitor_.joinable()) monitor_.join();
  closeParked(true, Clock::now());
  std::lock_guard lock(mutex_);
  connections_.clear();
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

// Accepts connections and parks them; once a second, closes those idle past the timeout.
void ApiServer::acceptLoop() {
  const int listen_fd = listener_.impl()->sockfd();
  auto last_sweep = Clock::now();
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {accept_wake_fd_, POLLIN, 0}};
    int n = ::poll(fds, 2, 1000);
    const auto now = Clock::now();
    if (now - last_sweep >= std::chrono::seconds(1)) {
      last_sweep = now;
      closeParked(false, now - idle_timeout_);
    }
    if (n <= 0 || stopping_.load() || !(fds[0].revents & POLLIN)) continue;
    try {
      Poco::Net::StreamSocket socket = listener_.acceptConnection();
      socket.setNoDelay(true);
      std::lock_guard lock(mutex_);
      auto c = std::make_shared<Connection>(socket, params_, next_id_++);
      epoll_event ev{};
      ev.events = kParkedEvents;
      ev.data.u64 = c->id;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) == 0) connections_.emplace(c->id, c);
    } catch (const Poco::Exception& e) {
      // Out of descriptors, or the peer reset before we took it: wait a moment, go on.
      if (runtime_.error_log) runtime_.error_log->warning("accept: " + e.displayText());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

void ApiServer::workerLoop(WorkerSlot& slot) {
  std::unique_lock lock(reserve_mutex_);
  while (!stopped_.load()) {
    if (running_.load() >= allowed_.load()) {
      reserve_cv_.wait(lock);
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
        Outcome outcome = Outcome::kClose;
        try {
          outcome = serveReady(*c);
        } catch (...) {
          // A connection's failure (reset, timeout reading a request) is that connection's alone.
        }
        settle(c, outcome);
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
      {
        std::lock_guard lock(reserve_mutex_);
        allowed_ = want;
      }
      reserve_cv_.notify_all();
    }
    std::unique_lock lock(reserve_mutex_);
    monitor_cv_.wait_for(lock,
                         busy > 0 ? std::chrono::milliseconds(2) : std::chrono::milliseconds(100),
                         [this] { return stopped_.load(); });
  }
}

std::shared_ptr<ApiServer::Connection> ApiServer::claim(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(id);
  if (it == connections_.end() || !it->second->parked) return nullptr;
  it->second->parked = false;
  return it->second;
}

// Serves every request the connection has sent so far, then says what becomes of it.
ApiServer::Outcome ApiServer::serveReady(Connection& c) {
  using namespace Poco::Net;
  ApiSession& session = c.session;
  for (;;) {
    // Only the first request asks Poco's session (it counts keep-alive requests from there);
    // later ones are known to be readable, and its check would cost four syscalls a request
    // (Poco polls through a new epoll set each time).
    if (c.first_request) {
      c.first_request = false;
      if (!session.hasMoreRequests()) return Outcome::kClose;
    }
    bool detached = false;
    try {
      HTTPServerResponseImpl response(session);
      HTTPServerRequestImpl request(response, session, params_);
      response.setDate(Poco::Timestamp());
      response.setVersion(request.getVersion());
      response.setKeepAlive(params_->getKeepAlive() && request.getKeepAlive() &&
                            session.canKeepAlive() && !stopping_.load());
      if (request.getExpectContinue() && response.getStatus() == HTTPResponse::HTTP_OK) {
        response.sendContinue();
      }
      detached = pipeline_.serve(request, response);
      session.setKeepAlive(!detached && params_->getKeepAlive() && response.getKeepAlive() &&
                           session.canKeepAlive());
    } catch (const NoMessageException&) {
      return Outcome::kClose;
    } catch (const MessageException& e) {
      sendMalformed(c, e.message());
      return Outcome::kClose;
    }
    if (detached) return Outcome::kDetached;
    if (stopping_.load() || !session.getKeepAlive()) return Outcome::kClose;
    // Pipelined bytes already read (by Poco, or by TLS into its record buffer) are invisible to
    // epoll: serve them now. Bytes still in the kernel make the re-armed epoll entry ready.
    if (session.pending() == 0 && (!c.secure || session.socket().available() == 0)) {
      return Outcome::kPark;
    }
  }
}

void ApiServer::settle(const std::shared_ptr<Connection>& c, Outcome outcome) {
  std::lock_guard lock(mutex_);
  if (outcome == Outcome::kPark && !stopping_.load()) {
    c->parked = true;
    c->idle_since = Clock::now();
    epoll_event ev{};
    ev.events = kParkedEvents;
    ev.data.u64 = c->id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev) == 0) return;
  }
  if (outcome == Outcome::kDetached) {
    // The socket is the hub's now, which may have closed it already (and the descriptor number
    // been reused): leave epoll alone; closing the socket drops its disarmed registration.
    connections_.erase(c->id);
    return;
  }
  unregisterLocked(*c);  // the last reference, the caller's, closes the socket
}

void ApiServer::unregisterLocked(Connection& c) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  connections_.erase(c.id);
}

void ApiServer::closeParked(bool all, Clock::time_point cutoff) {
  std::vector<std::shared_ptr<Connection>> closing;  // closed after the lock is released
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, c] : connections_) {
      if (c->parked && (all || c->idle_since < cutoff)) closing.push_back(c);
    }
    for (auto& c : closing) unregisterLocked(*c);
  }
}

// A request Poco could not even parse (bad request line, oversized or malformed headers).
void ApiServer::sendMalformed(Connection& c, const std::string& why) {
  try {
    Poco::Net::HTTPServerSession& session = c.session;
    Poco::Net::StreamSocket& socket = session.socket();
    std::string rid = chooseRequestId("");
    sdk::HttpError e(400, "invalid", "The request is malformed: " + why + ".");
    std::string body = errorBody(e, rid);
    Poco::Net::HTTPServerResponseImpl response(session);
    response.setVersion(Poco::Net::HTTPMessage::HTTP_1_1);
    response.setStatusAndReason(Poco::Net::HTTPResponse::HTTP_BAD_REQUEST);
    response.setContentType("application/json");
    response.set("X-Request-Id", rid);
    response.setKeepAlive(false);
    response.setContentLength(static_cast<std::streamsize>(body.size()));
    std::ostream& out = response.send();
    out << body;
    out.flush();
    session.setKeepAlive(false);
    // Closing with unread bytes would reset the connection and could destroy the answer in
    // flight: finish sending, then drain briefly.
    socket.shutdownSend();
    socket.setReceiveTimeout(Poco::Timespan(0, 200000));
    char scratch[4096];
    for (int i = 0; i < 16 && socket.receiveBytes(scratch, sizeof scratch) > 0; ++i) {
    }
    if (runtime_.metrics) runtime_.metrics->observe("?", "malformed", 400, 0);
  } catch (...) {
  }
}

bool ApiServer::drain(std::chrono::milliseconds grace) {
  stopping_ = true;
  notifyFd(accept_wake_fd_);
  if (acceptor_.joinable()) acceptor_.join();
  listener_.close();  // no new connections
  const auto deadline = Clock::now() + grace;
  for (;;) {
    closeParked(true, Clock::now());
    if (openConnections() == 0) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace svc::kernel
