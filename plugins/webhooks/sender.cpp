#include "sender.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/util.h>

#include <Poco/Net/Context.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/HTTPSClientSession.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/SocketAddress.h>

#include <algorithm>
#include <istream>
#include <ostream>

namespace svc::plugins::webhooks {

namespace {

constexpr std::size_t kMaxAnswerBytes = 64 * 1024;

// A session that connects to the address this sender resolved and checked, whatever its
// host name resolves to by the time Poco connects or reconnects, and checks the peer it reached.
template <class Base>
class PinnedSession : public Base {
 public:
  template <class... Args>
  PinnedSession(Poco::Net::SocketAddress pinned, bool allow_private,
                const Watchdog::Clock::time_point& deadline, Args&&... args)
      : Base(std::forward<Args>(args)...),
        pinned_(pinned),
        allow_private_(allow_private),
        deadline_(deadline) {}

 protected:
  void connect(const Poco::Net::SocketAddress&) override {
    // Connecting spends the attempt's time too.
    const auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(deadline_ - Watchdog::Clock::now());
    if (left.count() <= 0) throw Poco::TimeoutException("no time left to connect");
    const Poco::Timespan each = this->getTimeout();  // each read and write (open() sets all)
    this->setTimeout(std::min(each, Poco::Timespan(left.count())), each, each);
    Base::connect(pinned_);
    const Poco::Net::IPAddress peer = this->socket().peerAddress().host();
    if (!allow_private_ && sdk::isInternalAddress(peer)) {
      this->socket().close();
      throw Poco::Net::NetException("connected to an internal address (" + peer.toString() + ")");
    }
    // Poco writes a request's head and body in two sends: with Nagle's algorithm the body waits
    // for the receiver's delayed ACK of the head (40 ms a delivery).
    this->socket().setNoDelay(true);
  }

 private:
  Poco::Net::SocketAddress pinned_;
  bool allow_private_;
  const Watchdog::Clock::time_point& deadline_;  // the sender's, for the attempt in flight
};

Poco::Net::Context::Ptr tlsContext() {
  // Certificates checked against the system's CAs.
  static const Poco::Net::Context::Ptr context = new Poco::Net::Context(
      Poco::Net::Context::TLS_CLIENT_USE, "", Poco::Net::Context::VERIFY_RELAXED, 9, true);
  return context;
}

}  // namespace

Sender::Sender(bool allow_private, std::chrono::milliseconds timeout, Watchdog& watchdog)
    : allow_private_(allow_private), timeout_(timeout), watchdog_(watchdog) {}

Sender::~Sender() = default;

bool Sender::disarm() {
  if (armed_ != 0 && watchdog_.disarm(armed_)) cut_ = true;
  armed_ = 0;
  return cut_;
}

void Sender::reset() {
  disarm();
  session_.reset();
  origin_.clear();
}

void Sender::open(const Poco::URI& uri) {
  reset();
  const auto addresses = sdk::allowedAddresses(uri.getHost(), allow_private_);
  if (addresses.empty()) {
    throw Poco::Net::NetException("the host resolves to a loopback, private or link-local address");
  }
  const Poco::Net::SocketAddress pinned(addresses.front(), uri.getPort());
  if (uri.getScheme() == "https") {
    session_ = std::make_unique<PinnedSession<Poco::Net::HTTPSClientSession>>(
        pinned, allow_private_, deadline_, uri.getHost(), uri.getPort(), tlsContext());
  } else {
    session_ = std::make_unique<PinnedSession<Poco::Net::HTTPClientSession>>(
        pinned, allow_private_, deadline_, uri.getHost(), uri.getPort());
  }
  const Poco::Timespan t(std::chrono::duration_cast<std::chrono::microseconds>(timeout_).count());
  session_->setTimeout(t, t, t);
  session_->setKeepAlive(true);
  origin_ = uri.getScheme() + "://" + uri.getAuthority();
}

SendResult Sender::attempt(const Poco::URI& uri,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           const std::string& body) {
  Poco::Net::HTTPRequest request(Poco::Net::HTTPRequest::HTTP_POST,
                                 uri.getPathAndQuery().empty() ? "/" : uri.getPathAndQuery(),
                                 Poco::Net::HTTPMessage::HTTP_1_1);
  request.setContentType("application/json");
  request.setContentLength(static_cast<std::streamsize>(body.size()));
  request.setKeepAlive(true);
  request.set("User-Agent", "svc-webhooks/1");
  for (const auto& [name, value] : headers) request.set(name, value);
  std::ostream& out = session_->sendRequest(request);  // connects when not connected
  armed_ = watchdog_.arm(session_->socket().impl()->sockfd(), deadline_);
  out << body;
  Poco::Net::HTTPResponse response;
  std::istream& in = session_->receiveResponse(response);
  // Read a bounded part of the answer; a longer one costs the connection, not memory.
  std::string answer(kMaxAnswerBytes, '\0');
  in.read(answer.data(), static_cast<std::streamsize>(answer.size()));
  const bool whole = in.eof();
  SendResult r;
  r.status = static_cast<int>(response.getStatus());
  if (!whole || !response.getKeepAlive()) reset();
  if (!r.ok()) {
    answer.resize(static_cast<std::size_t>(in.gcount()));
    r.error = "HTTP " + std::to_string(r.status) +
              (r.status >= 300 && r.status < 400 ? " (redirects are not followed)" : "");
    if (!answer.empty()) r.error += ": " + sdk::truncateUtf8(answer, 200);
  }
  return r;
}

SendResult Sender::post(const std::string& url,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        const std::string& body) {
  Poco::URI uri;
  try {
    uri = Poco::URI(url);
  } catch (const Poco::Exception& e) {
    return {0, "the URL does not parse: " + e.displayText()};
  }
  const std::string origin = uri.getScheme() + "://" + uri.getAuthority();
  deadline_ = Watchdog::Clock::now() + timeout_;
  cut_ = false;
  // A kept-alive connection the receiver closed meanwhile fails before any answer: try once more
  // on a fresh one before calling it an attempt that failed.
  for (int round = 0; round < 2; ++round) {
    const bool reused = session_ && origin == origin_;
    SendResult r;
    bool failed = false;
    try {
      if (!reused) open(uri);
      r = attempt(uri, headers, body);
    } catch (const Poco::Exception& e) {
      r = {0, e.displayText()};
      failed = true;
    } catch (const std::exception& e) {
      r = {0, e.what()};
      failed = true;
    }
    const bool cut = disarm();
    if (cut) {
      reset();
      return {0, "no complete answer within " + std::to_string(timeout_.count() / 1000) +
                     " s (the whole attempt's limit, webhooks.timeout_seconds)"};
    }
    if (!failed) return r;
    reset();
    if (reused && round == 0) continue;
    return r;
  }
  return {0, "unreachable"};
}

}  // namespace svc::plugins::webhooks
