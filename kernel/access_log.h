// The access log: one line per request (method, path, status, duration, request id, client; never
// the Authorization header or a body), in the same text or JSON-lines shape as the other logs.
// Lines are appended to a buffer under a short lock and written to stderr by a background thread
// every 100 ms, so logging costs a request no system call.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace svc::kernel {

class AccessLog {
 public:
  /// @param json JSON lines instead of text. @param fd where lines go (stderr by default).
  explicit AccessLog(bool json, int fd = 2);
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  /// Queues one line.
  void record(const std::string& method, const std::string& path, int status, double millis,
              const std::string& request_id, const std::string& client);
  /// Writes out everything queued.
  void flush();

 private:
  void run();
  const bool json_;
  const int fd_;
  std::mutex mutex_;        // guards buffer_ and stopping_
  std::mutex write_mutex_;  // one flush at a time (it owns spare_)
  std::condition_variable wake_;
  std::string buffer_;  // lines waiting to be written
  std::string spare_;   // the other buffer: keeps its capacity, so appends rarely reallocate
  bool stopping_ = false;
  std::thread thread_;
};

/// @param text bytes. @return them as the inside of a JSON string (quotes, backslashes and control
/// characters escaped; bytes of invalid UTF-8 replaced by U+FFFD).
std::string jsonEscape(const std::string& text);

}  // namespace svc::kernel
