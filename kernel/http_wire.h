// Bytes on the wire for the HTTP listener and the stream hub: one response-head writer and one
// pair of non-blocking socket calls that hide whether the connection is TLS.
#pragma once

#include <Poco/Net/StreamSocket.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace svc::kernel::http {

/// Appends a status line and header fields, without the blank line that ends them, to `out`:
/// the status with its reason phrase, Date, Content-Type (when not empty), then `headers`.
void appendResponseHead(std::string& out, int status, const std::string& content_type,
                        const std::vector<std::pair<std::string, std::string>>& headers);

/// @return true when the socket is a TLS socket (bytes may wait inside OpenSSL, unseen by epoll).
bool isSecure(const Poco::Net::StreamSocket& socket);

/// What a non-blocking read got.
constexpr long kWouldBlock = -1;
constexpr long kFailed = -2;

/// One non-blocking read. @return bytes read (> 0), 0 at the peer's end of stream, kWouldBlock,
/// or kFailed (reset, TLS error).
long receiveSome(Poco::Net::StreamSocket& socket, bool secure, char* data, std::size_t size);

/// One non-blocking write. @return bytes written (>= 0; 0 when it would block) or kFailed.
long sendSome(Poco::Net::StreamSocket& socket, bool secure, const char* data, std::size_t size);

}  // namespace svc::kernel::http
