// Sends one webhook's deliveries over one kept-alive connection.
//
// Every connection goes to an address that passed the public-address rule
// (sdk::allowedAddresses) when it was resolved here, and the address actually connected to is
// checked again (a name that resolved to a public address a moment ago may resolve to a private
// one now: DNS rebinding). A whole attempt (connecting, sending, the answer) is bounded by the
// timeout: a watchdog shuts the socket down when it passes, so a receiver that trickles its answer
// cannot hold a worker. Redirects are not followed (a 3xx is a failed attempt), and at most 64 KB
// of an answer's body is read.
#pragma once

#include "watchdog.h"

#include <Poco/URI.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace Poco::Net {
class HTTPClientSession;
}

namespace svc::plugins::webhooks {

/// What one attempt came to.
struct SendResult {
  int status = 0;     ///< The receiver's HTTP status, 0 when none came.
  std::string error;  ///< Why it failed ("" for a 2xx).
  bool ok() const { return status >= 200 && status < 300; }
};

class Sender {
 public:
  /// @param allow_private let URLs reach internal addresses (tests). @param timeout for a whole
  /// attempt. @param watchdog cuts an attempt at its deadline (it outlives this sender).
  Sender(bool allow_private, std::chrono::milliseconds timeout, Watchdog& watchdog);
  ~Sender();
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  /// POSTs body to url with the headers. Reuses the connection of the previous call to the same
  /// origin. @return the outcome; never throws for a network or receiver error.
  SendResult post(const std::string& url,
                  const std::vector<std::pair<std::string, std::string>>& headers,
                  const std::string& body);
  /// Closes the connection.
  void reset();

 private:
  /// Stops the watchdog watching. @return whether it cut the attempt in flight.
  bool disarm();
  /// Opens a connection to uri's origin at an allowed address. @throws Poco::Exception.
  void open(const Poco::URI& uri);
  SendResult attempt(const Poco::URI& uri,
                     const std::vector<std::pair<std::string, std::string>>& headers,
                     const std::string& body);

  const bool allow_private_;
  const std::chrono::milliseconds timeout_;
  Watchdog& watchdog_;
  Watchdog::Clock::time_point deadline_{};  // the attempt in flight's
  std::uint64_t armed_ = 0;                 // its watchdog token, 0 when none
  bool cut_ = false;                        // the watchdog cut it
  std::string origin_;                      // scheme://host:port of the open connection
  std::unique_ptr<Poco::Net::HTTPClientSession> session_;
};

}  // namespace svc::plugins::webhooks
