// One client connection of the HTTP listener, as a state machine that only ever reads and writes
// what the socket has ready. Waiting for a client (its next request, the rest of a head or a
// body, room to write an answer, the end of a refused upload) therefore costs a socket and this
// object, never a worker: a worker runs advance() when epoll says the socket is ready, and holds
// on only while the request is served.
//
// Phases:
//   kHead   waiting for a request, or for the rest of its head (parsed by http_framing: one strict
//           reading, anything ambiguous refused and the connection closed);
//   kBody   reading its body (Content-Length or chunked), bounded by the route's limit: a declared
//           length over it is refused before a byte of the body is read;
//   kWrite  the answer goes out as the socket takes it; then kHead again (keep-alive) or
//   kLinger after an answer that closes the connection while the client may still be sending:
//           stop writing, read and discard for a bounded time (RFC 9112 section 9.6, nginx's
//           lingering_close), so the client reads our answer instead of a reset.
//
// Every phase has a deadline that the listener enforces while the connection waits:
//   no byte of a request yet: idle timeout; the head: header timeout from its first byte (408);
//   the body: body timeout between reads and request timeout in all (408); an answer: send
//   timeout without progress; lingering: kLingerGap between reads, kLingerTotal in all.
#pragma once

#include "http_framing.h"

#include <svc/sdk/http.h>

#include <Poco/Net/StreamSocket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace svc::kernel {

class Pipeline;

struct ConnectionLimits {
  std::chrono::seconds idle{15};     ///< silent between requests
  std::chrono::seconds header{10};   ///< a head must arrive whole within this of its first byte
  std::chrono::seconds body{10};     ///< longest gap between two reads of a body
  std::chrono::seconds request{30};  ///< a body must arrive whole within this of its head
  std::chrono::seconds send{30};     ///< longest time an answer may make no progress
  http::HeadLimits head;
};

class HttpConnection {
 public:
  using Clock = std::chrono::steady_clock;
  /// What the connection waits for next.
  enum class Wait { kRead, kWrite, kClose, kDetached };

  /// @param socket an accepted connection; it is made non-blocking.
  /// @param address the client's IP address, for the pipeline and logs.
  HttpConnection(Poco::Net::StreamSocket socket, std::string address,
                 const ConnectionLimits& limits);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  /// Reads, serves complete requests with `pipeline` and writes, as far as the socket allows.
  /// @param stopping the server is stopping: answer what is complete, then close.
  Wait advance(Pipeline& pipeline, bool stopping);
  /// @return the calling thread's read buffer (16 KiB). Each connection keeps only the
  /// bytes that came; the buffer they are read into is one per worker thread, which calls this as
  /// it starts so that memory is taken at start-up rather than when load first reaches it.
  static char* threadReadBuffer();
  /// Starts the connection with an answer (a refusal such as 503) and a short linger to close.
  void refuseWith(const sdk::Response& response);
  /// @param released called once the connection, handed to the hub for a held response, closes.
  void onHeldClosed(std::function<void()> released) { held_closed_ = std::move(released); }
  /// The deadline passed while waiting: answers 408 where a request was under way (best effort,
  /// without blocking). The caller then closes the connection.
  void expire(Pipeline& pipeline);

  /// @return whether the connection, parked, is late by the client's doing at `now`: its
  /// deadline has passed, and no bytes it sent wait unread. Bytes waiting mean the server is
  /// behind (every worker busy), not the client: such a connection is spared until a worker has
  /// taken it once (then the deadline that reading set, or the old one, holds): each deadline is
  /// spared once. So a burst larger than the workers can take within the idle timeout is served,
  /// not reset, and a client trickling a head still meets its deadline. Only a wait for bytes
  /// is spared (a client that reads no answers is not). Called with the connection parked only.
  bool expiredAt(Clock::time_point now);
  /// @return true while no request is under way (before a first byte, between requests, while
  /// lingering): closing now loses nothing.
  bool owesNothing() const;
  /// @return the socket's descriptor.
  int fd() const { return fd_; }
  const std::string& address() const { return address_; }

  /// Answers one advance() gives before the connection waits its turn again.
  static constexpr int kAnswersPerTurn = 16;
  /// Lingering close: longest gap between two reads, and the whole of it.
  static constexpr std::chrono::seconds kLingerGap{5};
  static constexpr std::chrono::seconds kLingerTotal{30};
  static constexpr std::chrono::seconds kLingerBrief{1};  ///< after refusing a connection
  static constexpr std::size_t kLingerMaxBytes = 64 * 1024 * 1024;

 private:
  enum class Phase { kHead, kBody, kWrite, kLinger };
  enum class Step { kProgress, kNeedBytes, kDetached };

  Step consumeBuffered(Pipeline& pipeline, bool stopping);
  Step startBody(Pipeline& pipeline, bool stopping);
  Step serve(Pipeline& pipeline, bool stopping);
  /// Queues an error answer that closes the connection after a linger.
  Step refuse(Pipeline& pipeline, int status, const std::string& code, const std::string& detail);
  /// Queues a whole response. @param head_only HEAD: the fields without the body.
  void queueResponse(const sdk::Response& response, bool close, bool head_only);
  /// Sends queued bytes. @return true when all are out; false when the socket is full or failed.
  bool flush();
  /// Reads once into the buffer. @return bytes, 0 at end of stream, http::kWouldBlock/kFailed.
  long readMore();
  /// @return true when a LF not preceded by CR is in the buffer at or after `from`.
  bool hasBareLf(std::size_t from) const;
  /// Drops consumed bytes from the front of the buffer when that is cheap enough.
  void compact();
  void beginNextRequest(Clock::time_point now);
  /// advance()'s work; advance() notes what it waits for.
  Wait step(Pipeline& pipeline, bool stopping);

  Poco::Net::StreamSocket socket_;
  std::function<void()> held_closed_;
  const int fd_;
  const bool secure_;
  const std::string address_;
  const ConnectionLimits& limits_;
  Phase phase_ = Phase::kHead;
  Clock::time_point deadline_;

  std::string in_;        ///< bytes received and not yet dropped
  std::size_t pos_ = 0;   ///< where the current request's unread bytes start in in_
  std::size_t scan_ = 0;  ///< where to look for the blank line that ends a head
  bool drained_ = false;  ///< the last read emptied the socket
  bool head_started_ = false;
  bool waits_to_read_ = true;  ///< parked for bytes (not for room to write)
  /// The deadline it was last spared past, for bytes the server had not read, and whether a
  /// worker has advanced it since: each deadline is spared once, until a worker takes it.
  Clock::time_point reprieved_for_ = Clock::time_point::min();
  bool taken_since_ = false;
  Clock::time_point request_deadline_;  ///< the body's whole-request deadline
  http::RequestHead head_;
  std::size_t body_limit_ = 0;
  std::string body_;
  http::ChunkedDecoder chunked_;

  std::string out_;  ///< queued answer bytes
  std::size_t sent_ = 0;
  bool failed_ = false;        ///< a write failed: the connection is over
  bool wants_read_ = false;    ///< TLS must read before it can write (a handshake under way)
  bool close_after_ = false;   ///< close once out_ is sent
  bool linger_ = false;        ///< and linger first
  bool brief_linger_ = false;  ///< for kLingerBrief only
  Clock::time_point linger_until_;
  std::size_t lingered_ = 0;
};

}  // namespace svc::kernel
