#include "http_connection.h"

#include "http_wire.h"

#include "pipeline.h"
#include "socket_io.h"

#include <poll.h>

#include <algorithm>
#include <memory>

namespace svc::kernel {

namespace {

// One read's most bytes, and the size of each worker thread's read buffer: 16 KiB as nginx's
// client_body_buffer_size on 64-bit systems, so 64 workers hold 1 MiB between them.
constexpr std::size_t kReadChunk = 16 * 1024;
constexpr const char* kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

HttpConnection::HttpConnection(Poco::Net::StreamSocket socket, std::string address,
                               const ConnectionLimits& limits)
    : socket_(std::move(socket)),
      fd_(socket_.impl()->sockfd()),
      secure_(isSecureSocket(socket_)),
      address_(std::move(address)),
      limits_(limits) {
  socket_.setBlocking(false);
  deadline_ = Clock::now() + limits_.idle;
}

bool HttpConnection::owesNothing() const {
  return (phase_ == Phase::kHead && !head_started_) || phase_ == Phase::kLinger;
}

bool HttpConnection::expiredAt(Clock::time_point now) {
  if (deadline_ > now) return false;
  // Only a wait for the client's bytes: one for room to write, or a linger, is the client's.
  if (!waits_to_read_ || (phase_ != Phase::kHead && phase_ != Phase::kBody)) return true;
  if (reprieved_for_ == deadline_) return taken_since_;  // this deadline had its reprieve
  pollfd ready{fd_, POLLIN, 0};
  if (::poll(&ready, 1, 0) != 1 || !(ready.revents & POLLIN)) return true;
  reprieved_for_ = deadline_;
  taken_since_ = false;
  return false;
}

void HttpConnection::beginNextRequest(Clock::time_point now) {
  phase_ = Phase::kHead;
  head_started_ = false;
  head_ = http::RequestHead{};
  body_.clear();
  scan_ = pos_;
  deadline_ = now + limits_.idle;
  compact();
  // A large body or answer once is no reason to keep its memory while the connection idles.
  constexpr std::size_t kKeep = 256 * 1024;
  if (in_.capacity() > kKeep && in_.size() < kKeep) in_.shrink_to_fit();
  if (out_.capacity() > kKeep && out_.empty()) out_.shrink_to_fit();
}

void HttpConnection::compact() {
  if (pos_ == in_.size()) {
    in_.clear();
    scan_ = pos_ = 0;
  } else if (pos_ > 64 * 1024 && pos_ > in_.size() / 2) {
    in_.erase(0, pos_);
    scan_ -= std::min(scan_, pos_);
    pos_ = 0;
  }
}

bool HttpConnection::hasBareLf(std::size_t from) const {
  for (std::size_t lf = in_.find('\n', from); lf != std::string::npos;
       lf = in_.find('\n', lf + 1)) {
    if (lf == pos_ || in_[lf - 1] != '\r') return true;
  }
  return false;
}

char* HttpConnection::threadReadBuffer() {
  thread_local std::unique_ptr<char[]> scratch(new char[kReadChunk]);
  return scratch.get();
}

long HttpConnection::readMore() {
  // Read into the thread's buffer and keep only what came: a connection waiting with a few bytes
  // of a head holds a few bytes, not a whole read buffer.
  char* scratch = threadReadBuffer();
  long n = receiveSome(socket_, secure_, scratch, kReadChunk);
  if (n > 0) in_.append(scratch, static_cast<std::size_t>(n));
  drained_ = !secure_ && n > 0 && static_cast<std::size_t>(n) < kReadChunk;
  return n;
}

bool HttpConnection::flush() {
  wants_read_ = false;
  while (sent_ < out_.size()) {
    long n = sendSome(socket_, secure_, out_.data() + sent_, out_.size() - sent_);
    if (n == kSocketFailed) {
      failed_ = true;
      return false;
    }
    if (n == kWantsRead) wants_read_ = true;
    if (n <= 0) return false;
    sent_ += static_cast<std::size_t>(n);
    deadline_ = Clock::now() + limits_.send;
  }
  out_.clear();
  sent_ = 0;
  return true;
}

void HttpConnection::queueResponse(const sdk::Response& response, bool close, bool head_only) {
  std::vector<std::pair<std::string, std::string>> fields = response.headers;
  const bool no_body = response.status == 204 || response.status == 304;
  if (!no_body) fields.emplace_back("Content-Length", std::to_string(response.body.size()));
  if (close) {
    fields.emplace_back("Connection", "close");
  } else if (head_.minor_version == 0) {
    fields.emplace_back("Connection", "keep-alive");
  }
  http::appendResponseHead(out_, response.status, no_body ? "" : response.content_type, fields);
  out_ += "\r\n";
  if (!head_only && !no_body) out_ += response.body;
  close_after_ = close;
}

void HttpConnection::refuseWith(const sdk::Response& response) {
  queueResponse(response, true, false);
  waits_to_read_ = false;
  linger_ = true;
  brief_linger_ = true;  // refused connections must not pile up while they linger
  phase_ = Phase::kWrite;
  deadline_ = Clock::now() + limits_.send;
}

HttpConnection::Step HttpConnection::refuse(Pipeline& pipeline, int status, const std::string& code,
                                            const std::string& detail) {
  queueResponse(pipeline.refusal(status, code, detail, address_), true, false);
  linger_ = true;
  phase_ = Phase::kWrite;
  deadline_ = Clock::now() + limits_.send;
  return Step::kProgress;
}

void HttpConnection::expire(Pipeline& pipeline) {
  // Only onto a clean slate: bytes of a 100 Continue already on their way cannot be taken back.
  if ((phase_ == Phase::kBody || (phase_ == Phase::kHead && head_started_)) && sent_ == 0) {
    out_.clear();
    queueResponse(
        pipeline.refusal(408, "request_timeout",
                         "The request did not arrive in time; send it whole, promptly.", address_),
        true, false);
    flush();  // best effort: the socket has room for a small answer or the client is gone
  }
}

HttpConnection::Wait HttpConnection::advance(Pipeline& pipeline, bool stopping) {
  taken_since_ = true;
  const Wait wait = step(pipeline, stopping);
  waits_to_read_ = wait == Wait::kRead;
  return wait;
}

HttpConnection::Wait HttpConnection::step(Pipeline& pipeline, bool stopping) {
  int answered = 0;
  for (;;) {
    switch (phase_) {
      case Phase::kWrite: {
        if (!flush()) return failed_ ? Wait::kClose : wants_read_ ? Wait::kRead : Wait::kWrite;
        const auto now = Clock::now();
        if (!close_after_ && !stopping) {
          beginNextRequest(now);
          // A client pipelining without end gets its turn, not the worker: after a few answers
          // it waits to be writable again (at once), behind connections that became ready.
          if (++answered >= kAnswersPerTurn) return Wait::kWrite;
          break;
        }
        if (!linger_) {
          // Closing with unread bytes would reset the connection and could destroy the answer
          // in flight: anything left unread means the client is still sending.
          if (pos_ == in_.size() && socket_.available() == 0) return Wait::kClose;
        }
        phase_ = Phase::kLinger;
        linger_until_ = now + (brief_linger_ ? kLingerBrief : kLingerTotal);
        deadline_ = std::min(linger_until_, now + kLingerGap);
        in_.clear();
        pos_ = scan_ = 0;
        try {
          socket_.shutdownSend();
        } catch (...) {
          return Wait::kClose;
        }
        break;
      }
      case Phase::kLinger: {
        char scratch[16384];
        for (;;) {
          long n = receiveSome(socket_, secure_, scratch, sizeof scratch);
          if (n == kWouldBlock) {
            deadline_ = std::min(linger_until_, Clock::now() + kLingerGap);
            return Wait::kRead;
          }
          if (n <= 0) return Wait::kClose;
          lingered_ += static_cast<std::size_t>(n);
          if (lingered_ > kLingerMaxBytes) return Wait::kClose;
        }
      }
      case Phase::kHead:
      case Phase::kBody: {
        Step step = consumeBuffered(pipeline, stopping);
        if (step == Step::kDetached) return Wait::kDetached;
        if (step == Step::kProgress) break;
        if (stopping && owesNothing()) return Wait::kClose;
        // A plain socket that gave less than asked for is drained: re-arming epoll reports
        // anything that came since, so no read is spent learning it would block.
        if (drained_) {
          drained_ = false;
          return Wait::kRead;
        }
        long n = readMore();
        if (n > 0) {
          if (phase_ == Phase::kBody) {
            deadline_ = std::min(request_deadline_, Clock::now() + limits_.body);
          }
          break;
        }
        if (n == kWouldBlock) return Wait::kRead;
        return Wait::kClose;  // the client ended or the connection failed mid-wait
      }
    }
  }
}

HttpConnection::Step HttpConnection::consumeBuffered(Pipeline& pipeline, bool stopping) {
  if (phase_ == Phase::kBody) return startBody(pipeline, stopping);
  if (pos_ == in_.size()) return Step::kNeedBytes;
  const auto now = Clock::now();
  if (!head_started_) {
    head_started_ = true;
    deadline_ = now + limits_.header;
  }
  // Parse only once the blank line is here (a head sent a byte at a time is scanned once, not
  // once per byte), or once the bytes are already too many for a head.
  const std::string_view pending = std::string_view(in_).substr(pos_);
  for (;;) {
    std::size_t from = std::max(scan_, pos_);
    std::size_t blank = in_.find("\r\n\r\n", from);
    const bool too_many = in_.size() - pos_ > limits_.head.max_head_bytes;
    if (blank == std::string::npos && !too_many && !hasBareLf(from)) {
      scan_ = in_.size() >= 3 ? std::max(pos_, in_.size() - 3) : pos_;
      return Step::kNeedBytes;
    }
    std::size_t upto = blank == std::string::npos ? pending.size() : blank + 4 - pos_;
    http::HeadParse parsed = http::parseRequestHead(pending.substr(0, upto), limits_.head);
    if (parsed.status == http::HeadParse::Status::kError) {
      const auto& e = parsed.error;
      const char* code = e.status == 501   ? "not_implemented"
                         : e.status == 505 ? "http_version_not_supported"
                                           : "invalid";
      return refuse(pipeline, e.status, code, e.detail);
    }
    if (parsed.status == http::HeadParse::Status::kIncomplete) {
      if (blank == std::string::npos) return Step::kNeedBytes;
      // Only the empty lines that may precede a request: look for the next blank line.
      scan_ = blank + 1;
      continue;
    }
    head_ = std::move(parsed.head);
    pos_ += parsed.consumed;
    scan_ = pos_;
    break;
  }
  body_limit_ = pipeline.bodyLimit(head_);
  if (head_.framing == http::BodyFraming::kLength && head_.content_length > body_limit_) {
    return refuse(pipeline, 413, "payload_too_large",
                  "The body is larger than " + std::to_string(body_limit_) + " bytes.");
  }
  phase_ = Phase::kBody;
  body_.clear();
  chunked_ = http::ChunkedDecoder();
  request_deadline_ = now + limits_.request;
  deadline_ = std::min(request_deadline_, now + limits_.body);
  if (head_.expect_continue && head_.minor_version == 1 &&
      head_.framing != http::BodyFraming::kNone && pos_ == in_.size()) {
    out_ += kContinue;
    flush();  // a few bytes into an empty socket; if they do not fit, the body waits for them
  }
  return startBody(pipeline, stopping);
}

HttpConnection::Step HttpConnection::startBody(Pipeline& pipeline, bool stopping) {
  if (!out_.empty() && !flush() && failed_) return Step::kNeedBytes;
  switch (head_.framing) {
    case http::BodyFraming::kNone:
      break;
    case http::BodyFraming::kLength: {
      const std::size_t want = static_cast<std::size_t>(head_.content_length);
      if (in_.size() - pos_ < want) return Step::kNeedBytes;
      body_.assign(in_, pos_, want);
      pos_ += want;
      break;
    }
    case http::BodyFraming::kChunked: {
      std::size_t consumed = 0;
      auto status = chunked_.feed(std::string_view(in_).substr(pos_), consumed, body_);
      pos_ += consumed;
      compact();  // decoded bytes are in body_: the framing around them need not stay
      if (body_.size() > body_limit_) {
        return refuse(pipeline, 413, "payload_too_large",
                      "The body is larger than " + std::to_string(body_limit_) + " bytes.");
      }
      if (status == http::ChunkedDecoder::Status::kError) {
        return refuse(pipeline, 400, "invalid",
                      "The chunked body is malformed: " + chunked_.error());
      }
      if (status == http::ChunkedDecoder::Status::kNeedMore) return Step::kNeedBytes;
      break;
    }
  }
  return serve(pipeline, stopping);
}

HttpConnection::Step HttpConnection::serve(Pipeline& pipeline, bool stopping) {
  IncomingRequest request{head_, std::move(body_), address_,
                          [this] {
                            // A held answer's bytes are the hub's to write: send ours first.
                            socket_.setBlocking(true);
                            socket_.setSendTimeout(Poco::Timespan(1, 0));
                            try {
                              if (sent_ < out_.size()) {
                                socket_.sendBytes(out_.data() + sent_,
                                                  static_cast<int>(out_.size() - sent_));
                              }
                            } catch (...) {
                            }
                            return socket_;
                          },
                          held_closed_};
  Served served = pipeline.serve(request);
  body_.clear();
  if (served.held) return Step::kDetached;
  queueResponse(served.response, stopping || !head_.keep_alive, head_.method == "HEAD");
  linger_ = false;
  phase_ = Phase::kWrite;
  deadline_ = Clock::now() + limits_.send;
  return Step::kProgress;
}

}  // namespace svc::kernel
