#include "held_response.h"

#include "pipeline.h"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace svc::sdk::testing {

namespace {

// Timers run on the waiting test thread (the "hub's thread" of the test kit), so a handler's
// expireAfter callback answers the request as it would in svcd.
class CapturedStream : public Stream {
 public:
  explicit CapturedStream(std::string request_id) : request_id_(std::move(request_id)) {}

  bool respond(const Response& response) override {
    std::vector<std::function<void()>> closers;
    {
      std::lock_guard lock(mutex_);
      if (!open_ || begun_) return false;
      answer_ = response;
      closers = closeLocked();
    }
    for (auto& fn : closers) fn();
    return true;
  }
  bool begin(int status, const std::string& content_type,
             const std::vector<std::pair<std::string, std::string>>& headers) override {
    std::lock_guard lock(mutex_);
    if (!open_ || begun_) return false;
    begun_ = true;
    answer_.status = status;
    answer_.content_type = content_type;
    answer_.headers = headers;
    return true;
  }
  bool write(const std::string& data) override {
    std::lock_guard lock(mutex_);
    if (!open_ || !begun_) return false;
    answer_.body += data;
    return true;
  }
  void finish() override { close(); }
  bool isOpen() const override {
    std::lock_guard lock(mutex_);
    return open_;
  }
  void onClose(std::function<void()> fn) override {
    {
      std::lock_guard lock(mutex_);
      if (open_) {
        on_close_.push_back(std::move(fn));
        return;
      }
    }
    fn();
  }
  void expireAfter(std::chrono::milliseconds delay, std::function<void()> fn) override {
    std::lock_guard lock(mutex_);
    timer_at_ = std::chrono::steady_clock::now() + delay;
    timer_ = std::move(fn);
    changed_.notify_all();
  }
  const std::string& requestId() const override { return request_id_; }
  std::size_t queued() const override { return 0; }

  void close() {
    std::vector<std::function<void()>> closers;
    {
      std::lock_guard lock(mutex_);
      if (!open_) return;
      closers = closeLocked();
    }
    for (auto& fn : closers) fn();
  }

  /// Waits until closed or the deadline passes, running a due timer on this thread.
  /// @return the answer, or nullopt at the deadline.
  std::optional<Response> wait(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    while (open_) {
      auto until = timer_ ? std::min(deadline, timer_at_) : deadline;
      changed_.wait_until(lock, until, [&] { return !open_; });
      if (!open_) break;
      auto now = std::chrono::steady_clock::now();
      if (timer_ && now >= timer_at_) {
        auto fn = std::move(timer_);
        timer_ = nullptr;
        lock.unlock();
        fn();
        lock.lock();
      } else if (now >= deadline) {
        return std::nullopt;
      }
    }
    return answer_;
  }

 private:
  std::vector<std::function<void()>> closeLocked() {
    open_ = false;
    timer_ = nullptr;
    changed_.notify_all();
    return std::move(on_close_);
  }

  const std::string request_id_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = true;
  bool begun_ = false;
  Response answer_;
  std::vector<std::function<void()>> on_close_;
  std::function<void()> timer_;
  std::chrono::steady_clock::time_point timer_at_;
};

}  // namespace

Response awaitHeld(const Response& held, const std::string& request_id,
                   std::chrono::milliseconds wait) {
  auto stream = std::make_shared<CapturedStream>(request_id);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  try {
    held.on_hold(stream);
  } catch (const std::exception&) {
    stream->respond(kernel::errorResponse(
        HttpError(500, "server_error", "The server failed to answer this request."), request_id));
  }
  auto answer = stream->wait(deadline);
  if (answer) return *answer;
  stream->close();
  return kernel::errorResponse(
      HttpError(504, "test_timeout", "The held response was not answered in time."), request_id);
}

}  // namespace svc::sdk::testing
