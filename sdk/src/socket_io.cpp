#include "svc/sdk/socket_io.h"

#include <Poco/Exception.h>
#include <Poco/Net/SecureStreamSocketImpl.h>

#include <sys/socket.h>

#include <cerrno>

namespace svc::sdk {

bool isSecureSocket(const Poco::Net::StreamSocket& socket) {
  return dynamic_cast<Poco::Net::SecureStreamSocketImpl*>(socket.impl()) != nullptr;
}

long receiveSome(Poco::Net::StreamSocket& socket, bool secure, char* data, std::size_t size) {
  if (secure) {
    try {
      int n = socket.receiveBytes(data, static_cast<int>(size));
      return n >= 0 ? n : kWouldBlock;
    } catch (const Poco::TimeoutException&) {
      return kWouldBlock;  // OpenSSL met EAGAIN inside a system call it made
    } catch (...) {
      return kSocketFailed;
    }
  }
  const int fd = socket.impl()->sockfd();
  for (;;) {
    ssize_t n = ::recv(fd, data, size, 0);
    if (n >= 0) return static_cast<long>(n);
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? kWouldBlock : kSocketFailed;
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
      return kSocketFailed;
    }
  }
  const int fd = socket.impl()->sockfd();
  for (;;) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n >= 0) return static_cast<long>(n);
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : kSocketFailed;
  }
}

}  // namespace svc::sdk
