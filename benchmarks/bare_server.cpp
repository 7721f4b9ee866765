// The baseline for the load benchmark: a bare Poco HTTPServer answering a fixed JSON body with
// the same worker count as svcd. Usage: svc_bare_server PORT THREADS
#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/ThreadPool.h>

#include <unistd.h>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

class Fixed : public Poco::Net::HTTPRequestHandler {
 public:
  void handleRequest(Poco::Net::HTTPServerRequest&,
                     Poco::Net::HTTPServerResponse& response) override {
    static const std::string body = R"({"database":"ok","plugins":[],"status":"ok"})";
    response.setContentType("application/json");
    response.sendBuffer(body.data(), body.size());
  }
};

class Factory : public Poco::Net::HTTPRequestHandlerFactory {
 public:
  Poco::Net::HTTPRequestHandler* createRequestHandler(
      const Poco::Net::HTTPServerRequest&) override {
    return new Fixed;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int port = argc > 1 ? std::atoi(argv[1]) : 9090;
  int threads = argc > 2 ? std::atoi(argv[2]) : 16;
  Poco::ThreadPool pool(2, threads);
  Poco::Net::HTTPServerParams::Ptr params = new Poco::Net::HTTPServerParams;
  params->setMaxThreads(threads);
  params->setMaxQueued(256);
  params->setKeepAlive(true);
  params->setMaxKeepAliveRequests(0);
  Poco::Net::ServerSocket socket(
      Poco::Net::SocketAddress("127.0.0.1", static_cast<Poco::UInt16>(port)), 256);
  Poco::Net::HTTPServer server(new Factory, pool, socket, params);
  server.start();
  std::cout << "bare server ready on " << socket.address().port() << std::endl;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  int sig;
  sigwait(&set, &sig);
  server.stop();
  return 0;
}
