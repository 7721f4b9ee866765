// The SMTP listener (RFC 5321) that receives mail for this server's inboxes: EHLO/HELO, MAIL
// (SIZE), RCPT, DATA, RSET, NOOP, QUIT, VRFY, PIPELINING, 8BITMIME, STARTTLS when a certificate is
// configured. It refuses what could smuggle a second message past another server's reading of
// the first (bare CR or LF in DATA, over-long lines) and answers 250 only once the delivery
// callback has stored the message durably.
#pragma once

#include <Poco/Logger.h>
#include <Poco/Net/Context.h>
#include <Poco/Net/TCPServer.h>
#include <Poco/ThreadPool.h>

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace svc::plugins::email {

struct SmtpConfig {
  std::string listen = "127.0.0.1:2525";  ///< host:port (port 0: any free port).
  std::string hostname = "localhost";     ///< Said in the greeting and EHLO answer.
  std::size_t max_message_bytes = 36700160;
  int max_recipients = 100;
  int timeout_seconds = 300;  ///< Per command, and per read while in DATA.
  int max_connections = 64;
  std::string tls_cert_file, tls_key_file;  ///< Both set: STARTTLS is offered.
};

/// What the listener asks the email plugin.
class SmtpDelivery {
 public:
  virtual ~SmtpDelivery() = default;
  /// @param address a RCPT TO address. @return true when an inbox here has it.
  virtual bool acceptsRecipient(const std::string& address) = 0;
  /// Stores a message for every recipient, durably, or throws (the client gets a 451).
  /// @param mail_from the envelope sender. @param recipients accepted RCPT TO addresses.
  /// @param data the message as received, dot-unstuffed, CRLF line ends.
  virtual void deliver(const std::string& mail_from, const std::vector<std::string>& recipients,
                       const std::string& data) = 0;
  /// Says whether a message was stored (an empty string) or why not; called exactly once.
  using Stored = std::function<void(const std::string& error)>;
  /// Stores a message as deliver() does, but may return first: stored is then called on another
  /// thread once the message is on disk, and must not block. The listener answers the client
  /// from it, so the session goes on reading instead of sleeping until the disk has synced.
  /// When it throws, stored is not called. The default calls deliver() and then stored.
  virtual void deliverAsync(const std::string& mail_from,
                            const std::vector<std::string>& recipients, std::string data,
                            Stored stored) {
    std::string error;
    try {
      deliver(mail_from, recipients, data);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "delivery failed";
    }
    stored(error);
  }
};

class SessionRegistry;

class SmtpServer {
 public:
  SmtpServer(SmtpConfig config, SmtpDelivery& delivery, Poco::Logger& logger);
  ~SmtpServer();
  void start();
  void stop();
  /// @return the port it listens on (after start()).
  unsigned short port() const;

 private:
  SmtpConfig config_;
  SmtpDelivery& delivery_;
  Poco::Logger& logger_;
  Poco::Net::Context::Ptr tls_;
  std::unique_ptr<Poco::ThreadPool> pool_;
  std::unique_ptr<SessionRegistry> sessions_;
  std::unique_ptr<Poco::Net::TCPServer> server_;
};

/// The sockets of sessions in progress, so stop() can end them instead of waiting out their
/// timeouts.
class SessionRegistry {
 public:
  void add(int fd);
  void remove(int fd);
  void shutdownAll();

 private:
  std::mutex mutex_;
  std::set<int> fds_;
};

}  // namespace svc::plugins::email
