// The SMTP listener (RFC 5321) that receives mail for this server's inboxes. Connections wait in
// an epoll set, not in threads: a few workers take a connection when its socket is ready, feed
// what arrived to its SmtpSession (the protocol, see smtp_session.h), send what it answers as the
// socket takes it, and park it again. An idle or slow client costs a socket and a small struct.
//
// Like Postfix (postscreen, smtpd_client_connection_count_limit, smtpd_timeout): each client
// address may hold `max_connections_per_address` connections and the listener `max_connections`
// in all, beyond which a client is answered 421 and closed; a session outside a mail transaction
// may be silent for `idle_timeout_seconds`, inside one for `timeout_seconds`; then 421 and close.
#pragma once

#include <Poco/Logger.h>
#include <Poco/Net/Context.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace svc::plugins::email {

struct SmtpConfig {
  std::string listen = "127.0.0.1:2525";  ///< host:port (port 0: any free port).
  std::string hostname = "localhost";     ///< Said in the greeting and EHLO answer.
  std::size_t max_message_bytes = 36700160;
  int max_recipients = 100;
  int timeout_seconds = 300;      ///< Silence allowed inside a mail transaction.
  int idle_timeout_seconds = 30;  ///< Silence allowed outside one (before MAIL, between mails).
  int max_connections = 1000;     ///< Sessions at once; 421 beyond.
  int max_connections_per_address = 20;  ///< Sessions from one client address; 421 beyond.
  /// Message bytes all sessions may hold in memory at once (452 for a message beyond it).
  std::size_t max_buffered_bytes = 512u * 1024 * 1024;
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

class SmtpListener;

/// What the listener has done, for the plugin's metrics; updated without a lock.
struct SmtpCounts {
  std::atomic<std::int64_t> open{0};       ///< sessions open now
  std::atomic<std::uint64_t> accepted{0};  ///< connections taken since start
  std::atomic<std::uint64_t> refused{
      0};  ///< connections refused (too many, overall or per address)
};

class SmtpServer {
 public:
  SmtpServer(SmtpConfig config, SmtpDelivery& delivery, Poco::Logger& logger);
  ~SmtpServer();
  void start();
  /// Closes every session (one storing a message finishes storing it) and stops the workers.
  void stop();
  /// @return the port it listens on (after start()).
  unsigned short port() const;
  /// @return the listener's figures (valid for the life of this object, across stop()).
  const SmtpCounts& counts() const { return counts_; }

 private:
  SmtpConfig config_;
  SmtpDelivery& delivery_;
  Poco::Logger& logger_;
  SmtpCounts counts_;
  std::unique_ptr<SmtpListener> listener_;
};

}  // namespace svc::plugins::email
