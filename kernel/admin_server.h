// The operator listener: loopback only, every request needs `Authorization: Bearer <admin.token>`.
// Serves GET /metrics (Prometheus text) and the operator API that svcctl uses.
#pragma once

#include "metrics.h"
#include "plugin_host.h"

#include <Poco/Net/HTTPServer.h>

#include <functional>
#include <memory>
#include <string>

namespace svc::kernel {

/// An operator route: method + exact path → handler returning (status, JSON body).
struct AdminRoute {
  std::string method;
  std::string path;
  std::function<std::pair<int, std::string>(const std::string& body)> handler;
};

class AdminServer {
 public:
  /// @param listen `host:port` (the host must be a loopback address).
  /// @throws std::runtime_error when the address is not loopback or cannot be bound.
  AdminServer(const std::string& listen, std::string token, Metrics& metrics,
              std::vector<AdminRoute> routes);
  ~AdminServer();
  void start();
  void stop();
  Poco::UInt16 port() const { return port_; }

 private:
  std::unique_ptr<Poco::Net::HTTPServer> server_;
  Poco::UInt16 port_ = 0;
};

/// @return true when a and b are equal, in time that depends only on their lengths.
bool constantTimeEquals(const std::string& a, const std::string& b);

}  // namespace svc::kernel
