// Helpers of the tests that run several svcd on one database (the MariaDB two-svcd cases and the
// Galera cluster suite): the vault's key file copied from one svcd to another, a webhook receiver
// that counts each event as it arrives, and a wait for a condition.
#pragma once

#include "harness.h"

#include <Poco/File.h>
#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/StreamCopier.h>

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

namespace svc::testing {

/// The vault's key file in a svcd's data directory.
inline std::string vaultKeyFile(const Svcd& svcd) {
  return svcd.dataDir() + "/vault/master.key";
}

/// Copies a vault key file (mode 0600, in place at once), as an operator does to each machine.
inline void copyKeyFile(const std::string& from, const std::string& to) {
  Poco::File(to.substr(0, to.rfind('/'))).createDirectories();
  std::ifstream in(from);
  std::ostringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty()) << from;
  std::ofstream(to + ".tmp") << text.str();
  ::chmod((to + ".tmp").c_str(), 0600);
  ASSERT_EQ(::rename((to + ".tmp").c_str(), to.c_str()), 0);
}

/// Polls `done` every 50 ms. @return whether it held within `seconds`.
template <class F>
bool waitFor(F done, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// Counts each (webhook-id header, receiving path) as it arrives, before answering.
class CountingReceiver {
 public:
  CountingReceiver()
      : server_(new Factory(*this),
                Poco::Net::ServerSocket(Poco::Net::SocketAddress("127.0.0.1", 0)),
                new Poco::Net::HTTPServerParams) {
    server_.start();
  }
  ~CountingReceiver() {
    server_.stopAll(true);
    while (active_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(server_.port()) + "/" + path;
  }
  /// @return how many times each (path, event id) arrived.
  std::map<std::string, int> counts() {
    std::lock_guard lock(mutex_);
    return counts_;
  }
  std::atomic<int> delay_ms{0};

 private:
  struct Handler : Poco::Net::HTTPRequestHandler {
    explicit Handler(CountingReceiver& r) : r(r) {}
    void handleRequest(Poco::Net::HTTPServerRequest& req,
                       Poco::Net::HTTPServerResponse& res) override {
      ++r.active_;
      struct Done {
        std::atomic<int>& n;
        ~Done() { --n; }
      } done{r.active_};
      std::string body;
      Poco::StreamCopier::copyToString(req.stream(), body);
      {
        std::lock_guard lock(r.mutex_);
        ++r.counts_[req.getURI() + " " + req.get("webhook-id", "")];
      }
      if (const int d = r.delay_ms.load(); d > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(d));
      }
      res.setStatus(Poco::Net::HTTPResponse::HTTP_NO_CONTENT);
      res.setContentLength(0);
      res.send();
    }
    CountingReceiver& r;
  };
  struct Factory : Poco::Net::HTTPRequestHandlerFactory {
    explicit Factory(CountingReceiver& r) : r(r) {}
    Poco::Net::HTTPRequestHandler* createRequestHandler(
        const Poco::Net::HTTPServerRequest&) override {
      return new Handler(r);
    }
    CountingReceiver& r;
  };
  std::mutex mutex_;
  std::map<std::string, int> counts_;
  std::atomic<int> active_{0};
  Poco::Net::HTTPServer server_;
};

}  // namespace svc::testing
