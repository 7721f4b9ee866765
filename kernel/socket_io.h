// Non-blocking reads and writes on a plain or TLS socket, for code that waits for sockets in
// epoll (the HTTP listener, the stream hub, the protocol listeners plugins open). They hide the
// difference between a plain socket (system calls, EAGAIN) and Poco's TLS socket (which answers
// "would block" with a negative count, or with a TimeoutException when OpenSSL met EAGAIN inside
// a system call of its own).
#pragma once

#include <Poco/Net/StreamSocket.h>

#include <Poco/Net/IPAddress.h>

#include <cstddef>
#include <string>

namespace svc::kernel {

/// receiveSome(): nothing has arrived yet.
constexpr long kWouldBlock = -1;
/// receiveSome() and sendSome(): the connection failed (reset, TLS error).
constexpr long kSocketFailed = -2;
/// sendSome() on TLS: nothing can be written until the peer's next bytes are read (the
/// handshake is under way): wait until the socket is readable, not writable.
constexpr long kWantsRead = -3;

/// @return true when the socket is TLS (bytes may then wait inside OpenSSL, unseen by epoll:
/// read until kWouldBlock before waiting again).
bool isSecureSocket(const Poco::Net::StreamSocket& socket);

/// One read from a non-blocking socket. @param secure isSecureSocket(socket).
/// @return bytes read (> 0), 0 at the peer's end of stream, kWouldBlock or kSocketFailed.
long receiveSome(Poco::Net::StreamSocket& socket, bool secure, char* data, std::size_t size);

/// One write to a non-blocking socket. @param secure isSecureSocket(socket).
/// @return bytes written (0 when the socket has no room), kWantsRead or kSocketFailed.
long sendSome(Poco::Net::StreamSocket& socket, bool secure, const char* data, std::size_t size);

/// @return the key under which connection limits count a client: its address, or for IPv6 its
/// /64 (one host is usually given a whole /64, so counting single addresses would not limit it).
std::string connectionLimitKey(const Poco::Net::IPAddress& address);

}  // namespace svc::kernel
