// A burst of SMTP sessions for the crash tests: clients each sending one message per connection,
// back to back, until the server goes away or the test stops them, counting the messages
// acknowledged (250) by their subjects.
#pragma once

#include <Poco/Net/NetException.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/StreamSocket.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace svc::testing {

class SmtpBurst {
 public:
  /// @param session the whole conversation (EHLO to QUIT) of a message with this subject.
  /// @param source the client's local address ("" for any).
  SmtpBurst(int port, int clients, const std::string& prefix,
            std::function<std::string(const std::string& subject)> session,
            const std::string& source = "") {
    for (int c = 0; c < clients; ++c) {
      threads_.emplace_back([this, port, c, prefix, session, source] {
        for (int i = 0; !stop_; ++i) {
          const std::string subject = prefix + std::to_string(c) + "-" + std::to_string(i);
          try {
            Poco::Net::StreamSocket s;
            if (!source.empty()) s.impl()->bind(Poco::Net::SocketAddress(source, 0));
            s.connect(Poco::Net::SocketAddress("127.0.0.1", static_cast<Poco::UInt16>(port)));
            // A deadline for a slow machine: the answers come as fast as svcd files.
            s.setReceiveTimeout(Poco::Timespan(30, 0));
            const std::string said = session(subject);
            s.sendBytes(said.data(), static_cast<int>(said.size()));
            std::string got;
            char buf[2048];
            int n;
            while ((n = s.receiveBytes(buf, sizeof buf)) > 0) {
              got.append(buf, n);
              if (got.find("221 ") != std::string::npos) break;
            }
            if (got.find("250 2.0.0 Ok: stored") != std::string::npos) {
              std::lock_guard lock(mutex_);
              acknowledged_.insert(subject);
            }
          } catch (const Poco::Net::ConnectionRefusedException&) {
            return;  // the server is gone
          } catch (const Poco::Net::ConnectionResetException&) {
            return;  // the server is gone
          } catch (const Poco::Exception&) {
            // Slow (a timeout) or cut in another way: this message is not acknowledged; the
            // next one tries again, until the test stops the clients.
          }
        }
      });
    }
  }
  ~SmtpBurst() { stop(); }
  SmtpBurst(const SmtpBurst&) = delete;
  SmtpBurst& operator=(const SmtpBurst&) = delete;

  /// Waits for at least 1.5 s of burst and more than ten messages acknowledged (a lone message
  /// waits for the database, which a loaded machine or the sanitizers make slow), 30 s at most.
  void waitForSome() {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto elapsed = std::chrono::steady_clock::now() - start;
      std::lock_guard lock(mutex_);
      if ((elapsed >= std::chrono::milliseconds(1500) && acknowledged_.size() > 10u) ||
          elapsed >= std::chrono::seconds(30)) {
        return;
      }
    }
  }
  /// Stops the clients (after their current message). @return the subjects acknowledged.
  std::set<std::string> stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
    std::lock_guard lock(mutex_);
    return acknowledged_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::set<std::string> acknowledged_;
  std::vector<std::thread> threads_;
};

}  // namespace svc::testing
