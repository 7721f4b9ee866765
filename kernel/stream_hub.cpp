#include "stream_hub.h"

#include "http_wire.h"

#include "pipeline.h"
#include "socket_io.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <stdexcept>
#include <vector>

namespace svc::kernel {

class HeldStream : public sdk::Stream, public std::enable_shared_from_this<HeldStream> {
 public:
  HeldStream(StreamHub& hub, Poco::Net::StreamSocket socket, std::string request_id,
             std::function<void(int)> on_done)
      : hub_(hub),
        socket_(std::move(socket)),
        fd_(socket_.impl()->sockfd()),
        secure_(isSecureSocket(socket_)),
        request_id_(std::move(request_id)),
        on_done_(std::move(on_done)) {}

  int fd() const { return fd_; }

  bool respond(const sdk::Response& response) override {
    std::string head = statusAndHeaders(response.status, response.content_type, response.headers);
    head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n\r\n";
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::kHeld) return false;
      state_ = State::kFinishing;
      status_ = response.status;
      noteQueued();
      out_ += head;
      out_ += response.body;
    }
    flush();
    return true;
  }

  bool begin(int status, const std::string& content_type,
             const std::vector<std::pair<std::string, std::string>>& headers) override {
    std::string head = statusAndHeaders(status, content_type, headers) + "\r\n";
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::kHeld) return false;
      state_ = State::kStreaming;
      status_ = status;
      noteQueued();
      out_ += head;
    }
    return flush();
  }

  bool write(const std::string& data) override {
    bool overflow = false;
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::kStreaming) return false;
      if (out_.size() - sent_ + data.size() > hub_.max_buffer_) {
        overflow = true;
      } else {
        noteQueued();
        out_ += data;
      }
    }
    if (overflow) {
      close();
      return false;
    }
    return flush();
  }

  void finish() override {
    {
      std::lock_guard lock(mutex_);
      if (state_ == State::kClosed || state_ == State::kFinishing) return;
      state_ = State::kFinishing;
    }
    flush();
  }

  bool isOpen() const override {
    std::lock_guard lock(mutex_);
    return state_ != State::kClosed && state_ != State::kFinishing;
  }

  void onClose(std::function<void()> fn) override {
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::kClosed) {
        on_close_.push_back(std::move(fn));
        return;
      }
    }
    fn();
  }

  void expireAfter(std::chrono::milliseconds delay, std::function<void()> fn) override {
    std::optional<StreamHub::TimerKey> old;
    {
      // The hub's lock is taken under the stream's (never the other way round).
      std::lock_guard lock(mutex_);
      if (state_ == State::kClosed) return;
      timer_fn_ = std::move(fn);
      old = timer_;
      timer_ = hub_.addTimer(StreamHub::Clock::now() + delay, weak_from_this());
    }
    if (old) hub_.cancelTimer(*old);
  }

  const std::string& requestId() const override { return request_id_; }

  std::size_t queued() const override {
    std::lock_guard lock(mutex_);
    return out_.size() - sent_;
  }

  void fireTimer(const StreamHub::TimerKey& key) {
    std::function<void()> fn;
    {
      std::lock_guard lock(mutex_);
      if (state_ == State::kClosed || timer_ != key) return;
      fn = std::move(timer_fn_);
      timer_.reset();
    }
    if (fn) fn();
  }

  /// @return whether bytes have waited since before `limit` with none taken by the peer.
  bool stalledSince(StreamHub::Clock::time_point limit) const {
    std::lock_guard lock(mutex_);
    return state_ != State::kClosed && sent_ < out_.size() && last_progress_ < limit;
  }

  /// Reads and discards what the peer sent. @return false when the peer has gone.
  bool drainInput() {
    char scratch[4096];
    for (;;) {
      long r = receiveSome(socket_, secure_, scratch, sizeof scratch);
      if (r == kWouldBlock) return true;
      if (r <= 0) return false;
    }
  }

  /// Sends what it can without blocking. @return false when the stream is (now) closed.
  bool flush() {
    bool done = false;
    {
      std::lock_guard lock(mutex_);
      if (state_ == State::kClosed) return false;
      while (sent_ < out_.size()) {
        long n = sendSome(out_.data() + sent_, out_.size() - sent_);
        if (n > 0) {
          sent_ += static_cast<std::size_t>(n);
          last_progress_ = StreamHub::Clock::now();
          continue;
        }
        if (n == 0) break;  // would block
        failed_ = true;
        break;
      }
      if (sent_ == out_.size()) {
        out_.clear();
        sent_ = 0;
      } else if (sent_ > 65536) {
        out_.erase(0, sent_);
        sent_ = 0;
      }
      // Ask epoll for writability only while bytes wait (one epoll_ctl per change, not per write).
      if (!failed_ && want_write_ != !out_.empty()) {
        want_write_ = !out_.empty();
        hub_.wantWrite(fd_, want_write_);
      }
      done = failed_ || (state_ == State::kFinishing && out_.empty());
    }
    if (done) {
      close();
      return false;
    }
    return true;
  }

  void close() {
    std::vector<std::function<void()>> callbacks;
    int status;
    std::optional<StreamHub::TimerKey> timer;
    {
      std::lock_guard lock(mutex_);
      if (state_ == State::kClosed) return;
      state_ = State::kClosed;
      callbacks.swap(on_close_);
      timer_fn_ = nullptr;
      timer.swap(timer_);
      status = status_;
    }
    if (timer) hub_.cancelTimer(*timer);
    hub_.forget(fd_);
    try {
      socket_.shutdown();
    } catch (...) {
    }
    try {
      socket_.close();
    } catch (...) {
    }
    for (auto& fn : callbacks) fn();
    if (on_done_) on_done_(status);
  }

 private:
  enum class State { kHeld, kStreaming, kFinishing, kClosed };

  // Bytes are about to be queued (mutex_ held): when none were waiting, the wait starts now.
  void noteQueued() {
    if (sent_ == out_.size()) last_progress_ = StreamHub::Clock::now();
  }

  // One non-blocking send: bytes sent, 0 when it would block, -1 when the connection failed.
  long sendSome(const char* data, std::size_t size) {
    long n = kernel::sendSome(socket_, secure_, data, size);
    return n == kSocketFailed ? -1 : n;
  }

  std::string statusAndHeaders(int status, const std::string& content_type,
                               const std::vector<std::pair<std::string, std::string>>& headers) {
    std::vector<std::pair<std::string, std::string>> fields = {{"X-Request-Id", request_id_},
                                                               {"Connection", "close"}};
    fields.insert(fields.end(), headers.begin(), headers.end());
    std::string head;
    http::appendResponseHead(head, status, content_type, fields);
    return head;
  }

  StreamHub& hub_;
  Poco::Net::StreamSocket socket_;
  const int fd_;
  const bool secure_;
  const std::string request_id_;
  std::function<void(int)> on_done_;
  mutable std::mutex mutex_;
  State state_ = State::kHeld;
  int status_ = 0;
  std::string out_;
  std::size_t sent_ = 0;
  bool failed_ = false;
  bool want_write_ = false;
  std::vector<std::function<void()>> on_close_;
  std::function<void()> timer_fn_;
  std::optional<StreamHub::TimerKey> timer_;
  StreamHub::Clock::time_point last_progress_ = StreamHub::Clock::now();
};

StreamHub::StreamHub(std::size_t max_buffer, std::chrono::milliseconds send_timeout)
    : max_buffer_(max_buffer), send_timeout_(send_timeout) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) throw std::runtime_error("cannot create the stream hub");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

StreamHub::~StreamHub() {
  stop();
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void StreamHub::start() {
  if (running_.exchange(true)) return;
  thread_ = std::thread([this] { run(); });
}

void StreamHub::stop() {
  if (running_.exchange(false)) {
    wake();
    thread_.join();
  }
  std::map<int, std::shared_ptr<HeldStream>> streams;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;  // from now on adopt() answers at once
    streams = streams_;
  }
  for (auto& [fd, s] : streams) refuseForStop(*s);
}

// A request still waiting for its answer (a long-poll) is told to come back instead of seeing
// its connection drop; a stream already under way just ends.
void StreamHub::refuseForStop(HeldStream& stream) {
  stream.respond(errorResponse(
      sdk::HttpError(503, "service_unavailable", "The server is restarting; retry this request.")
          .header("Retry-After", "5"),
      stream.requestId()));
  stream.close();
}

std::shared_ptr<sdk::Stream> StreamHub::adopt(Poco::Net::StreamSocket socket,
                                              std::string request_id,
                                              std::function<void(int)> on_done) {
  socket.setBlocking(false);
  socket.setNoDelay(true);
  // A fixed kernel send buffer (no autotuning up to megabytes): what a slow peer can hold back
  // is this plus max_buffer, so a stalled consumer is noticed and cut instead of hoarding memory.
  try {
    socket.setSendBufferSize(static_cast<int>(std::min<std::size_t>(max_buffer_, 64 * 1024)));
  } catch (const Poco::Exception&) {
  }
  auto stream = std::make_shared<HeldStream>(*this, std::move(socket), std::move(request_id),
                                             std::move(on_done));
  bool stopped;
  {
    std::lock_guard lock(mutex_);
    stopped = stopped_;
    if (!stopped) streams_[stream->fd()] = stream;
  }
  if (stopped) {  // stopped: nothing would ever answer it, and its callbacks must run now
    refuseForStop(*stream);
    return stream;
  }
  ++open_;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = stream->fd();
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stream->fd(), &ev);
  return stream;
}

void StreamHub::wantWrite(int fd, bool on) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0u);
  ev.data.fd = fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
}

void StreamHub::forget(int fd) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  std::lock_guard lock(mutex_);
  if (streams_.erase(fd)) --open_;
}

StreamHub::TimerKey StreamHub::addTimer(Clock::time_point when, std::weak_ptr<HeldStream> stream) {
  TimerKey key;
  {
    std::lock_guard lock(mutex_);
    key = {when, ++next_timer_};
    timers_.emplace(key, std::move(stream));
  }
  wake();
  return key;
}

void StreamHub::cancelTimer(const TimerKey& key) {
  std::lock_guard lock(mutex_);
  timers_.erase(key);
}

std::size_t StreamHub::timerCount() const {
  std::lock_guard lock(mutex_);
  return timers_.size();
}

void StreamHub::closeStalled() {
  const auto limit = Clock::now() - send_timeout_;
  std::vector<std::shared_ptr<HeldStream>> streams;
  {
    std::lock_guard lock(mutex_);
    streams.reserve(streams_.size());
    for (const auto& [fd, stream] : streams_) streams.push_back(stream);
  }
  // Streams are asked outside the hub's lock: a stream holds its own while it calls the hub.
  for (auto& s : streams) {
    if (s->stalledSince(limit)) s->close();
  }
}

void StreamHub::wake() {
  std::uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof one);
  (void)n;
}

void StreamHub::run() {
  std::vector<epoll_event> events(256);
  auto last_stall_check = Clock::now();
  while (running_.load()) {
    int timeout_ms = 1000;
    {
      std::lock_guard lock(mutex_);
      if (!timers_.empty()) {
        auto until = std::chrono::duration_cast<std::chrono::milliseconds>(
                         timers_.begin()->first.first - Clock::now())
                         .count();
        timeout_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(until + 1, 1000)));
      }
    }
    int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        std::uint64_t value;
        while (::read(wake_fd_, &value, sizeof value) > 0) {
        }
        continue;
      }
      std::shared_ptr<HeldStream> stream;
      {
        std::lock_guard lock(mutex_);
        auto it = streams_.find(fd);
        if (it != streams_.end()) stream = it->second;
      }
      if (!stream) continue;
      bool gone = (events[i].events & (EPOLLHUP | EPOLLERR)) != 0;
      if (events[i].events & (EPOLLIN | EPOLLRDHUP)) {
        // The request was read whole; anything more is ignored, and end-of-stream means the
        // peer went away.
        if (!stream->drainInput()) gone = true;
      }
      if (gone) {
        stream->close();
        continue;
      }
      if (events[i].events & EPOLLOUT) stream->flush();
    }
    std::vector<std::pair<TimerKey, std::weak_ptr<HeldStream>>> due;
    {
      std::lock_guard lock(mutex_);
      auto now = Clock::now();
      while (!timers_.empty() && timers_.begin()->first.first <= now) {
        due.emplace_back(timers_.begin()->first, std::move(timers_.begin()->second));
        timers_.erase(timers_.begin());
      }
    }
    for (auto& [key, weak] : due) {
      if (auto s = weak.lock()) s->fireTimer(key);
    }
    // A peer that takes none of what waits for it (an answer or a stream's events) for
    // send_timeout is cut, as the listener cuts one that does not read its answer.
    if (Clock::now() - last_stall_check >= std::chrono::seconds(1)) {
      last_stall_check = Clock::now();
      closeStalled();
    }
  }
}

}  // namespace svc::kernel
