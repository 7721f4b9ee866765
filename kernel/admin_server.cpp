#include "admin_server.h"

#include "pipeline.h"

#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/StreamCopier.h>

#include <openssl/crypto.h>

#include <sstream>

namespace svc::kernel {

bool constantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

namespace {

struct AdminState {
  std::string token;
  Metrics* metrics;
  std::vector<AdminRoute> routes;
};

class AdminHandler : public Poco::Net::HTTPRequestHandler {
 public:
  explicit AdminHandler(AdminState& state) : state_(state) {}

  void handleRequest(Poco::Net::HTTPServerRequest& request,
                     Poco::Net::HTTPServerResponse& response) override {
    std::string rid = chooseRequestId(request.get("X-Request-Id", ""));
    int status = 200;
    std::string body, type = "application/json";
    try {
      std::string auth = request.get("Authorization", "");
      const std::string prefix = "Bearer ";
      if (auth.rfind(prefix, 0) != 0) {
        throw sdk::HttpError(401, "not_authenticated",
                             "The operator API needs Authorization: Bearer <admin.token>.");
      }
      if (!constantTimeEquals(auth.substr(prefix.size()), state_.token)) {
        throw sdk::HttpError(401, "authentication_failed", "The operator token is wrong.");
      }
      std::string path = request.getURI().substr(0, request.getURI().find('?'));
      if (path.size() > 1 && path.back() == '/') path.pop_back();
      std::string input;
      if (request.hasContentLength() && request.getContentLength64() > (1 << 20)) {
        throw sdk::HttpError(413, "payload_too_large", "The body is too large.");
      }
      Poco::StreamCopier::copyToString(request.stream(), input, 65536);
      if (path == "/metrics" && request.getMethod() == "GET") {
        body = state_.metrics->render();
        type = "text/plain; version=0.0.4";
      } else {
        bool path_known = false;
        const AdminRoute* route = nullptr;
        for (const auto& r : state_.routes) {
          if (r.path != path) continue;
          path_known = true;
          if (r.method == request.getMethod()) route = &r;
        }
        if (!route) {
          if (path_known) throw sdk::HttpError(405, "method_not_allowed", "Method not allowed.");
          throw sdk::HttpError(404, "not_found", "No operator route matches " + path + ".");
        }
        std::tie(status, body) = route->handler(input);
      }
    } catch (const sdk::HttpError& e) {
      status = e.status();
      body = errorBody(e, rid);
    } catch (const std::exception& e) {
      status = 500;
      body = errorBody(sdk::HttpError(500, "server_error", e.what()), rid);
    }
    response.setStatusAndReason(static_cast<Poco::Net::HTTPResponse::HTTPStatus>(status));
    response.setContentType(type);
    response.set("X-Request-Id", rid);
    response.sendBuffer(body.data(), body.size());
  }

 private:
  AdminState& state_;
};

class AdminFactory : public Poco::Net::HTTPRequestHandlerFactory {
 public:
  explicit AdminFactory(std::shared_ptr<AdminState> state) : state_(std::move(state)) {}
  Poco::Net::HTTPRequestHandler* createRequestHandler(
      const Poco::Net::HTTPServerRequest&) override {
    return new AdminHandler(*state_);
  }

 private:
  std::shared_ptr<AdminState> state_;
};

}  // namespace

AdminServer::AdminServer(const std::string& listen, std::string token, Metrics& metrics,
                         std::vector<AdminRoute> routes) {
  Poco::Net::SocketAddress address(listen);
  if (!address.host().isLoopback()) {
    throw std::runtime_error("admin.listen must be a loopback address, not " + listen);
  }
  Poco::Net::ServerSocket socket(address, 64);
  port_ = socket.address().port();
  auto state =
      std::make_shared<AdminState>(AdminState{std::move(token), &metrics, std::move(routes)});
  Poco::Net::HTTPServerParams::Ptr params = new Poco::Net::HTTPServerParams;
  params->setMaxThreads(2);
  params->setTimeout(Poco::Timespan(10, 0));
  server_ = std::make_unique<Poco::Net::HTTPServer>(new AdminFactory(state), socket, params);
}

AdminServer::~AdminServer() {
  stop();
}

void AdminServer::start() {
  server_->start();
}

void AdminServer::stop() {
  if (server_) server_->stopAll(true);
}

}  // namespace svc::kernel
