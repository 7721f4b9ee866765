#include "smtp_server.h"

#include "smtp_session.h"

#include <cctype>
#include <string_view>

namespace svc::plugins::email {

bool isSmtpRefusal(const std::string& error) {
  return error.size() > 4 && (error[0] == '4' || error[0] == '5') &&
         std::isdigit(static_cast<unsigned char>(error[1])) &&
         std::isdigit(static_cast<unsigned char>(error[2])) && error[3] == ' ' &&
         error.find_first_of("\r\n") == std::string::npos;
}

namespace {

// One connection's session. Whenever the session may have something to say (after the client's
// bytes, or when a stored message's answer is ready) its replies are queued on the connection,
// and what the session waits for decides what the connection does next.
class SmtpConnection : public sdk::ConnectionHandler {
 public:
  SmtpConnection(const SmtpConfig& config, SmtpDelivery& delivery, Poco::Logger& logger,
                 DataBudget& budget, const std::shared_ptr<sdk::Connection>& connection)
      : config_(config),
        session_(
            config, delivery, logger, !config.tls_cert_file.empty() && !config.tls_key_file.empty(),
            [weak = std::weak_ptr<sdk::Connection>(connection)] {
              if (auto c = weak.lock()) c->wake();
            },
            &budget) {
    session_.setClientIp(connection->peer());
    connection->send(session_.greeting());
  }

  void received(sdk::Connection& connection, std::string_view bytes) override {
    session_.feed(bytes);
    connection.setTimeout(std::chrono::seconds(
        session_.inTransaction() ? config_.timeout_seconds : config_.idle_timeout_seconds));
    pump(connection);
  }
  void woken(sdk::Connection& connection) override { pump(connection); }
  void secured(sdk::Connection& connection) override {
    session_.tlsStarted();
    pump(connection);
  }
  bool timedOut(sdk::Connection& connection) override {
    if (session_.answerPending()) return false;  // the client waits for us, not we for it
    session_.timedOut();
    connection.send(session_.takeOutput());
    return true;
  }

 private:
  void pump(sdk::Connection& connection) {
    // Asked before the output is taken: an answer that is not pending now is in that output.
    const bool pending = session_.answerPending();
    connection.send(session_.takeOutput());
    if (session_.tlsRequested() || session_.closing()) {
      // Nothing more is read: after QUIT nothing counts, and after STARTTLS the next bytes are
      // the client's TLS handshake. TLS starts, or the connection closes, once the "220 Ready"
      // or the last reply is out, which may wait behind the answer to a message being stored.
      connection.pauseReading(true);
      if (pending) return;  // its answer wakes the connection
      if (session_.tlsRequested()) {
        connection.startTls();
      } else {
        connection.close();
      }
      return;
    }
    connection.pauseReading(session_.backlogged());  // its answer wakes the connection
  }

  const SmtpConfig& config_;
  SmtpSession session_;
};

}  // namespace

SmtpServer::SmtpServer(SmtpConfig config, SmtpDelivery& delivery, Poco::Logger& logger)
    : config_(std::move(config)),
      delivery_(delivery),
      logger_(logger),
      budget_(std::make_unique<DataBudget>(config_.max_buffered_bytes)) {}

SmtpServer::~SmtpServer() {
  stop();
}

void SmtpServer::start(sdk::Listeners& listeners) {
  sdk::ListenerOptions options;
  options.listen = config_.listen;
  options.max_connections = config_.max_connections;
  options.max_connections_per_address = config_.max_connections_per_address;
  options.timeout = std::chrono::seconds(config_.idle_timeout_seconds);
  options.tls_cert_file = config_.tls_cert_file;
  options.tls_key_file = config_.tls_key_file;
  listener_ = listeners.open(options, *this);
}

void SmtpServer::stop() {
  if (listener_) listener_->close();
}

unsigned short SmtpServer::port() const {
  return listener_ ? listener_->port() : 0;
}

std::unique_ptr<sdk::ConnectionHandler> SmtpServer::open(
    const std::shared_ptr<sdk::Connection>& connection) {
  return std::make_unique<SmtpConnection>(config_, delivery_, logger_, *budget_, connection);
}

std::string SmtpServer::refused(Refusal why, const std::string&) {
  const char* what = why == Refusal::kTooManyConnections
                         ? " Too many connections; try again later\r\n"
                         : " Too many connections from your address; try again later\r\n";
  return "421 4.7.0 " + config_.hostname + what;
}

}  // namespace svc::plugins::email
