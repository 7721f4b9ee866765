#include "access_log.h"

#include <svc/sdk/util.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace svc::kernel {

std::string jsonEscape(const std::string& text) {
  const bool valid = sdk::isValidUtf8(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else if (c >= 0x80 && !valid) {
          out += "\\ufffd";
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out;
}

AccessLog::AccessLog(bool json, int fd) : json_(json), fd_(fd) {
  buffer_.reserve(1 << 20);
  spare_.reserve(1 << 20);
  thread_ = std::thread([this] { run(); });
}

AccessLog::~AccessLog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  flush();
}

namespace {

// Appends a path as the log shows it: control characters escaped so a path cannot forge lines.
void appendPath(std::string& line, const std::string& path) {
  bool plain = true;
  for (unsigned char c : path) plain = plain && c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  if (plain) {
    line += path;
  } else {
    line += jsonEscape(path);
  }
}

}  // namespace

void AccessLog::record(const std::string& method, const std::string& path, int status,
                       double millis, const std::string& request_id, const std::string& client) {
  char numbers[48];
  int n = std::snprintf(numbers, sizeof numbers, "%d %.3f", status, millis);
  const std::string_view status_text(numbers,
                                     static_cast<std::size_t>(std::strchr(numbers, ' ') - numbers));
  const std::string_view duration(numbers + status_text.size() + 1,
                                  static_cast<std::size_t>(n) - status_text.size() - 1);
  std::string line;
  line.reserve(200 + 2 * path.size());
  line += json_ ? "{\"ts\":\"" : "";
  line += sdk::isoTimestamp(sdk::nowMicros());
  if (json_) {
    line += "\",\"level\":\"information\",\"logger\":\"access\",\"msg\":\"";
  } else {
    line += " Information access: ";
  }
  std::string method_text = json_ ? jsonEscape(method) : method;
  line += method_text;
  line += ' ';
  appendPath(line, path);
  line += ' ';
  line += status_text;
  line += ' ';
  line += duration;
  line += "ms rid=";
  line += request_id;
  if (json_) {
    line += "\",\"method\":\"";
    line += method_text;
    line += "\",\"path\":\"";
    appendPath(line, path);
    line += "\",\"status\":\"";
    line += status_text;
    line += "\",\"duration_ms\":\"";
    line += duration;
    line += "\",\"request_id\":\"";
    line += request_id;
    line += "\",\"client\":\"";
    line += jsonEscape(client);
    line += "\"}";
  }
  line += '\n';
  std::lock_guard lock(mutex_);
  buffer_ += line;
}

void AccessLog::flush() {
  std::lock_guard writer(write_mutex_);
  {
    std::lock_guard lock(mutex_);
    buffer_.swap(spare_);
  }
  std::size_t done = 0;
  while (done < spare_.size()) {
    ssize_t n = ::write(fd_, spare_.data() + done, spare_.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  spare_.clear();
}

void AccessLog::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(100));
    lock.unlock();
    flush();
    lock.lock();
  }
}

}  // namespace svc::kernel
