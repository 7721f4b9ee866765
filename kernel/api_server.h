// The HTTP listener: Poco's TCPServer with our own connection loop (Poco's HTTPServerConnection,
// with malformed requests answered in the contract's error shape, held responses handed off, and a
// graceful drain that ends idle keep-alive connections at once and lets busy ones finish).
#pragma once

#include "pipeline.h"

#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/TCPServer.h>
#include <Poco/ThreadPool.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>

namespace svc::kernel {

class ApiConnection;

class ApiServer {
 public:
  /// @param socket a bound, listening socket (plain or TLS).
  ApiServer(Runtime& runtime, Poco::Net::ServerSocket socket, int threads, int queue,
            int idle_timeout_seconds);
  ~ApiServer();
  void start();
  /// Stops accepting, ends idle connections, waits up to `grace` for busy ones.
  /// @return true when every connection finished in time.
  bool drain(std::chrono::milliseconds grace);
  /// @return the port it listens on.
  Poco::UInt16 port() const { return port_; }
  /// @return connections being served now.
  int activeConnections() const;

 private:
  friend class ApiConnection;
  friend class ApiConnectionFactory;
  void enter(ApiConnection* c);
  void leave(ApiConnection* c);

  Runtime& runtime_;
  Pipeline pipeline_;
  Poco::Net::HTTPServerParams::Ptr params_;
  Poco::ThreadPool pool_;
  std::unique_ptr<Poco::Net::TCPServer> server_;
  Poco::UInt16 port_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::set<ApiConnection*> connections_;
};

}  // namespace svc::kernel
