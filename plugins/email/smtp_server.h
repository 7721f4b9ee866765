// The SMTP listener (RFC 5321) that receives mail for this server's inboxes: the glue between
// the kernel's listener facility (sdk/listeners.h: it accepts, holds connections in its event
// loop, reads, writes and times out) and SmtpSession (the protocol, see smtp_session.h). An idle
// or slow client costs a socket and a session, not a thread.
//
// Like Postfix (postscreen, smtpd_client_connection_count_limit, smtpd_timeout): each client
// address may hold `max_connections_per_address` connections and the listener `max_connections`
// in all, beyond which a client is answered 421 and closed; a session outside a mail transaction
// may be silent for `idle_timeout_seconds`, inside one for `timeout_seconds`; then 421 and close.
#pragma once

#include <svc/sdk/listeners.h>

#include <Poco/Logger.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// The listener's settings, read from the email.smtp.* keys (EmailConfig::read; their defaults
/// live only in the declarations, EmailConfig::defaults() gives them).
struct SmtpConfig {
  std::string listen;    ///< host:port (port 0: any free port).
  std::string hostname;  ///< Said in the greeting and EHLO answer.
  std::size_t max_message_bytes = 0;
  int max_recipients = 0;
  int timeout_seconds = 0;       ///< Silence allowed inside a mail transaction.
  int idle_timeout_seconds = 0;  ///< Silence allowed outside one (before MAIL, between mails).
  int max_connections = 0;       ///< Sessions at once; 421 beyond (0: no limit).
  int max_connections_per_address = 0;  ///< Sessions from one client address; 421 beyond.
  /// Message bytes all sessions may hold in memory at once (452 for a message beyond it).
  std::size_t max_buffered_bytes = 0;
  std::string tls_cert_file, tls_key_file;  ///< Both set: STARTTLS is offered.
};

/// Who is sending: what SPF and DMARC check a message against.
struct SmtpClient {
  std::string ip;    ///< The connecting address.
  std::string helo;  ///< The name its EHLO or HELO gave.
};

/// What the listener asks the email plugin.
class SmtpDelivery {
 public:
  virtual ~SmtpDelivery() = default;
  /// @param address a RCPT TO address. @return true when an inbox here has it.
  virtual bool acceptsRecipient(const std::string& address) = 0;
  /// Asked after acceptsRecipient accepted a RCPT TO: whether that recipient's sender rules
  /// refuse the envelope sender (the listener answers 550 5.7.1 with the reason).
  /// @param mail_from the MAIL FROM address ("" for the null sender). @param address the
  /// recipient. @return why it is refused, or nullopt to accept. The default accepts.
  virtual std::optional<std::string> refusesSender(const std::string& mail_from,
                                                   const std::string& address) {
    (void)mail_from;
    (void)address;
    return std::nullopt;
  }
  /// Stores a message for every recipient, durably, or throws (the client gets a 451).
  /// Stores a message for every recipient, durably, or throws (the client gets a 451; an
  /// SmtpRefusal's reply is sent as it is). @param client who sends it.
  /// @param mail_from the envelope sender. @param recipients accepted RCPT TO addresses.
  /// @param data the message as received, dot-unstuffed, CRLF line ends.
  virtual void deliver(const SmtpClient& client, const std::string& mail_from,
                       const std::vector<std::string>& recipients, const std::string& data) = 0;
  /// Says whether a message was stored (an empty string) or why not; called exactly once. An
  /// error that is a whole 5xx reply (`550 5.7.1 ...`: a refusal by policy, not a fault) is sent
  /// to the client as it is; any other error is answered 451.
  using Stored = std::function<void(const std::string& error)>;
  /// Stores a message as deliver() does, but may return first: stored is then called on another
  /// thread once the message is on disk, and must not block. The listener answers the client
  /// from it, so the session goes on reading instead of sleeping until the disk has synced.
  /// When it throws, stored is not called. The default calls deliver() and then stored.
  virtual void deliverAsync(const SmtpClient& client, const std::string& mail_from,
                            const std::vector<std::string>& recipients, std::string data,
                            Stored stored) {
    std::string error;
    try {
      deliver(client, mail_from, recipients, data);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "delivery failed";
    }
    stored(error);
  }
};

/// Thrown by deliver() to refuse a message for good: what() is the whole reply (`550 5.7.1 ...`).
class SmtpRefusal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @return true when error is a whole reply of refusal by policy (three digits, the first 4 or 5,
/// a space): a DMARC reject (550) or deferral (451).
bool isSmtpRefusal(const std::string& error);

class DataBudget;

/// What the listener has done, for the plugin's metrics.
using SmtpCounts = sdk::ListenerCounts;

class SmtpServer : public sdk::ConnectionProtocol {
 public:
  SmtpServer(SmtpConfig config, SmtpDelivery& delivery, Poco::Logger& logger);
  ~SmtpServer() override;
  /// Binds config.listen with the kernel's listeners. @throws when it cannot.
  void start(sdk::Listeners& listeners);
  /// Closes every session (one storing a message finishes storing it).
  void stop();
  /// @return the port it listens on (after start()).
  unsigned short port() const;
  /// @return the listener's figures (after start(); valid for the life of this object).
  const SmtpCounts& counts() const { return listener_->counts(); }

  // sdk::ConnectionProtocol
  std::unique_ptr<sdk::ConnectionHandler> open(
      const std::shared_ptr<sdk::Connection>& connection) override;
  std::string refused(Refusal why, const std::string& peer) override;

 private:
  SmtpConfig config_;
  SmtpDelivery& delivery_;
  Poco::Logger& logger_;
  std::unique_ptr<DataBudget> budget_;  // shared by the sessions
  std::unique_ptr<sdk::Listener> listener_;
};

}  // namespace svc::plugins::email
