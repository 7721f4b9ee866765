#include "api_server.h"

#include <Poco/Net/HTTPServerRequestImpl.h>
#include <Poco/Net/HTTPServerResponseImpl.h>
#include <Poco/Net/HTTPServerSession.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/TCPServerConnectionFactory.h>
#include <Poco/Timestamp.h>

#include <chrono>
#include <thread>

namespace svc::kernel {

// Poco's session, with the size of its read buffer visible: a pipelined request already buffered
// must be served before the connection is considered idle.
class ApiSession : public Poco::Net::HTTPServerSession {
 public:
  using HTTPServerSession::HTTPServerSession;
  int pending() const { return buffered(); }
};

class ApiConnection : public Poco::Net::TCPServerConnection {
 public:
  ApiConnection(const Poco::Net::StreamSocket& socket, ApiServer& server)
      : TCPServerConnection(socket), server_(server) {}

  void run() override {
    server_.enter(this);
    try {
      serveAll();
    } catch (...) {
      // A connection's failure is that connection's alone.
    }
    server_.leave(this);
  }

  /// From the draining thread: ends the connection if it is between requests.
  void interruptIfIdle() {
    std::lock_guard lock(mutex_);
    if (!busy_) {
      try {
        socket().shutdownReceive();
      } catch (...) {
      }
    }
  }

 private:
  void serveAll() {
    using namespace Poco::Net;
    ApiSession session(socket(), server_.params_);
    bool first = true;
    while (!server_.stopping_.load() && nextRequest(session, first)) {
      first = false;
      {
        std::lock_guard lock(mutex_);
        busy_ = true;
      }
      bool detached = false;
      try {
        HTTPServerResponseImpl response(session);
        HTTPServerRequestImpl request(response, session, server_.params_);
        response.setDate(Poco::Timestamp());
        response.setVersion(request.getVersion());
        response.setKeepAlive(server_.params_->getKeepAlive() && request.getKeepAlive() &&
                              session.canKeepAlive() && !server_.stopping_.load());
        if (request.getExpectContinue() && response.getStatus() == HTTPResponse::HTTP_OK) {
          response.sendContinue();
        }
        detached = server_.pipeline_.serve(request, response);
        session.setKeepAlive(!detached && server_.params_->getKeepAlive() &&
                             response.getKeepAlive() && session.canKeepAlive());
      } catch (const NoMessageException&) {
        break;
      } catch (const MessageException& e) {
        sendMalformed(session, e.message());
        break;
      }
      {
        std::lock_guard lock(mutex_);
        busy_ = false;
      }
      if (detached) break;
    }
  }

  // Waits for the next request on a keep-alive connection. An idle connection holds a worker, so
  // after a second of idleness it gives the worker up when other connections are waiting for one.
  bool nextRequest(ApiSession& session, bool first) {
    if (first || session.pending() > 0) return session.hasMoreRequests();
    if (!session.getKeepAlive()) return false;
    const auto idle_limit =
        std::chrono::microseconds(server_.params_->getKeepAliveTimeout().totalMicroseconds());
    const auto started = std::chrono::steady_clock::now();
    while (!server_.stopping_.load()) {
      if (socket().poll(Poco::Timespan(0, 250000), Poco::Net::Socket::SELECT_READ)) {
        return session.hasMoreRequests();
      }
      auto idle = std::chrono::steady_clock::now() - started;
      if (idle >= idle_limit) return false;
      if (idle >= std::chrono::seconds(1) && server_.server_->queuedConnections() > 0) return false;
    }
    return false;
  }

  // A request Poco could not even parse (bad request line, oversized or malformed headers).
  void sendMalformed(Poco::Net::HTTPServerSession& session, const std::string& why) {
    try {
      std::string rid = chooseRequestId("");
      sdk::HttpError e(400, "invalid", "The request is malformed: " + why + ".");
      std::string body = errorBody(e, rid);
      Poco::Net::HTTPServerResponseImpl response(session);
      response.setVersion(Poco::Net::HTTPMessage::HTTP_1_1);
      response.setStatusAndReason(Poco::Net::HTTPResponse::HTTP_BAD_REQUEST);
      response.setContentType("application/json");
      response.set("X-Request-Id", rid);
      response.setKeepAlive(false);
      response.setContentLength(static_cast<std::streamsize>(body.size()));
      std::ostream& out = response.send();
      out << body;
      out.flush();
      session.setKeepAlive(false);
      // Closing with unread bytes would reset the connection and could destroy the answer in
      // flight: finish sending, then drain briefly.
      socket().shutdownSend();
      socket().setReceiveTimeout(Poco::Timespan(0, 200000));
      char scratch[4096];
      for (int i = 0; i < 16 && socket().receiveBytes(scratch, sizeof scratch) > 0; ++i) {
      }
      if (server_.runtime_.metrics) server_.runtime_.metrics->observe("?", "malformed", 400, 0);
    } catch (...) {
    }
  }

  ApiServer& server_;
  std::mutex mutex_;
  bool busy_ = false;
};

class ApiConnectionFactory : public Poco::Net::TCPServerConnectionFactory {
 public:
  explicit ApiConnectionFactory(ApiServer& server) : server_(server) {}
  Poco::Net::TCPServerConnection* createConnection(const Poco::Net::StreamSocket& socket) override {
    return new ApiConnection(socket, server_);
  }

 private:
  ApiServer& server_;
};

ApiServer::ApiServer(Runtime& runtime, Poco::Net::ServerSocket socket, int threads, int queue,
                     int idle_timeout_seconds)
    : runtime_(runtime),
      pipeline_(runtime),
      params_(new Poco::Net::HTTPServerParams),
      pool_("svc-http", 2, threads, 60),
      port_(socket.address().port()) {
  params_->setMaxThreads(threads);
  params_->setMaxQueued(queue);
  params_->setKeepAlive(true);
  params_->setMaxKeepAliveRequests(0);  // unlimited
  params_->setTimeout(Poco::Timespan(idle_timeout_seconds, 0));
  params_->setKeepAliveTimeout(Poco::Timespan(idle_timeout_seconds, 0));
  params_->setServerName("svcd");
  server_ = std::make_unique<Poco::Net::TCPServer>(new ApiConnectionFactory(*this), pool_, socket,
                                                   params_);
}

ApiServer::~ApiServer() {
  if (server_) server_->stop();
  pool_.joinAll();
}

void ApiServer::start() {
  server_->start();
}

int ApiServer::activeConnections() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(connections_.size());
}

void ApiServer::enter(ApiConnection* c) {
  std::lock_guard lock(mutex_);
  connections_.insert(c);
}

void ApiServer::leave(ApiConnection* c) {
  std::lock_guard lock(mutex_);
  connections_.erase(c);
}

bool ApiServer::drain(std::chrono::milliseconds grace) {
  stopping_ = true;
  server_->stop();  // no new connections
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mutex_);
      if (connections_.empty()) return true;
      for (ApiConnection* c : connections_) c->interruptIfIdle();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::lock_guard lock(mutex_);
  return connections_.empty();
}

}  // namespace svc::kernel
