#include "http_wire.h"

#include <Poco/DateTimeFormat.h>
#include <Poco/DateTimeFormatter.h>
#include <Poco/Exception.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/SecureStreamSocketImpl.h>
#include <Poco/Timestamp.h>

#include <sys/socket.h>

#include <cerrno>
#include <ctime>

namespace svc::kernel::http {

namespace {

// The Date field changes once a second: each thread formats it once a second.
const std::string& dateField() {
  thread_local std::time_t formatted_at = 0;
  thread_local std::string value;
  std::time_t now = std::time(nullptr);
  if (now != formatted_at) {
    formatted_at = now;
    value = Poco::DateTimeFormatter::format(Poco::Timestamp::fromEpochTime(now),
                                            Poco::DateTimeFormat::HTTP_FORMAT);
  }
  return value;
}

}  // namespace

void appendResponseHead(std::string& out, int status, const std::string& content_type,
                        const std::vector<std::pair<std::string, std::string>>& headers) {
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += Poco::Net::HTTPResponse::getReasonForStatus(
      static_cast<Poco::Net::HTTPResponse::HTTPStatus>(status));
  out += "\r\nDate: ";
  out += dateField();
  out += "\r\n";
  if (!content_type.empty()) {
    out += "Content-Type: ";
    out += content_type;
    out += "\r\n";
  }
  for (const auto& [name, value] : headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
}

bool isSecure(const Poco::Net::StreamSocket& socket) {
  return dynamic_cast<Poco::Net::SecureStreamSocketImpl*>(socket.impl()) != nullptr;
}

// TLS goes through Poco's SSL socket, which answers "would block" (OpenSSL wants to read or to
// write) with a negative count; plain sockets use the system calls directly.
long receiveSome(Poco::Net::StreamSocket& socket, bool secure, char* data, std::size_t size) {
  if (secure) {
    try {
      int n = socket.receiveBytes(data, static_cast<int>(size));
      return n >= 0 ? n : kWouldBlock;
    } catch (const Poco::TimeoutException&) {
      return kWouldBlock;  // OpenSSL met EAGAIN inside a system call it made
    } catch (...) {
      return kFailed;
    }
  }
  const int fd = socket.impl()->sockfd();
  for (;;) {
    ssize_t n = ::recv(fd, data, size, 0);
    if (n >= 0) return static_cast<long>(n);
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? kWouldBlock : kFailed;
  }
}

long sendSome(Poco::Net::StreamSocket& socket, bool secure, const char* data, std::size_t size) {
  if (secure) {
    try {
      int n = socket.sendBytes(data, static_cast<int>(size));
      return n > 0 ? n : 0;
    } catch (const Poco::TimeoutException&) {
      return 0;
    } catch (...) {
      return kFailed;
    }
  }
  const int fd = socket.impl()->sockfd();
  for (;;) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n >= 0) return static_cast<long>(n);
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : kFailed;
  }
}

}  // namespace svc::kernel::http
