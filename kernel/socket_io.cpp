#include "socket_io.h"

#include <Poco/Exception.h>
#include <Poco/Net/SecureStreamSocketImpl.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace svc::kernel {

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
      // Poco's -1 is OpenSSL wanting to read first (a handshake under way): waiting for room
      // to write would spin, since the socket has room.
      return n > 0 ? n : n == -1 ? kWantsRead : 0;
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

std::string connectionLimitKey(const Poco::Net::IPAddress& address) {
  if (address.family() != Poco::Net::IPAddress::IPv6 || address.isIPv4Mapped()) {
    return address.toString();
  }
  unsigned char prefix[16] = {};
  std::memcpy(prefix, address.addr(), 8);
  return Poco::Net::IPAddress(prefix, sizeof prefix).toString() + "/64";
}

}  // namespace svc::kernel
