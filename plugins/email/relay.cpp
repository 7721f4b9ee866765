#include "relay.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Net/Context.h>
#include <Poco/Net/DialogSocket.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/SMTPClientSession.h>
#include <Poco/Net/SecureSMTPClientSession.h>
#include <Poco/Tuple.h>

#include <algorithm>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

namespace {

// An SMTP answer that says the message will never go (5xx), as opposed to a temporary failure.
class PermanentFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void expect(Poco::Net::SMTPClientSession& session, const std::string& command, int ok_class) {
  std::string response;
  int status = session.sendCommand(command, response);
  if (status / 100 == ok_class) return;
  std::string what = command.substr(0, command.find(':')) + " answered " + response;
  if (status / 100 == 5) throw PermanentFailure(what);
  throw std::runtime_error(what);
}

// Dot-stuffing (RFC 5321 section 4.5.2) and the end-of-data line.
std::string stuffed(const std::string& raw) {
  std::string out;
  out.reserve(raw.size() + 64);
  bool line_start = true;
  for (char c : raw) {
    if (line_start && c == '.') out += '.';
    out += c;
    line_start = c == '\n';
  }
  if (out.size() < 2 || out.compare(out.size() - 2, 2, "\r\n") != 0) out += "\r\n";
  out += ".\r\n";
  return out;
}

// Poco's session with its socket reachable, to send bytes that are already a finished message.
class RelaySession : public Poco::Net::SecureSMTPClientSession {
 public:
  using SecureSMTPClientSession::SecureSMTPClientSession;
  using SMTPClientSession::socket;
};

void deliverOnce(const RelayConfig& config, const std::string& sender,
                 const std::vector<std::string>& recipients, const std::string& raw) {
  RelaySession session(config.host, static_cast<Poco::UInt16>(config.port));
  session.setTimeout(Poco::Timespan(config.timeout_seconds, 0));
  session.login(config.helo);
  if (config.starttls) {
    // The relay's certificate must be valid for its host name, from the system's CAs or the
    // configured file.
    Poco::Net::Context::Ptr context =
        new Poco::Net::Context(Poco::Net::Context::TLS_CLIENT_USE, "", "", config.tls_ca_file,
                               Poco::Net::Context::VERIFY_RELAXED, 9, true);
    if (!session.startTLS(context)) {
      throw std::runtime_error("the relay does not offer STARTTLS (email.relay.starttls is true)");
    }
    session.login(config.helo);
  }
  if (!config.username.empty()) {
    // PLAIN where offered, else LOGIN: Poco picks by the method named.
    try {
      session.login(Poco::Net::SMTPClientSession::AUTH_PLAIN, config.username, config.password);
    } catch (const Poco::Net::SMTPException&) {
      session.login(Poco::Net::SMTPClientSession::AUTH_LOGIN, config.username, config.password);
    }
  }
  expect(session, "MAIL FROM:<" + sender + ">", 2);
  for (const auto& r : recipients) expect(session, "RCPT TO:<" + r + ">", 2);
  expect(session, "DATA", 3);
  const std::string body = stuffed(raw);
  session.socket().sendBytes(body.data(), static_cast<int>(body.size()));
  std::string response;
  int status = session.socket().receiveStatusMessage(response);
  if (status / 100 == 5) throw PermanentFailure("the relay refused the message: " + response);
  if (status / 100 != 2)
    throw std::runtime_error("the relay did not take the message: " + response);
  try {
    session.close();
  } catch (const Poco::Exception&) {
  }
}

}  // namespace

Relay::Relay(RelayConfig config, MailStore& store, Poco::Logger& logger)
    : config_(std::move(config)), store_(store), logger_(logger) {}

Relay::~Relay() {
  stop();
}

void Relay::start() {
  std::lock_guard lock(mutex_);
  stopping_ = false;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void Relay::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Relay::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  cv_.notify_all();
}

void Relay::run() {
  for (;;) {
    bool sent_any = false;
    try {
      while (sendOne()) {
        sent_any = true;
        std::lock_guard lock(mutex_);
        if (stopping_) return;
      }
    } catch (const std::exception& e) {
      logger_.error("outbox: %s", std::string(e.what()));
    }
    (void)sent_any;
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_ || woken_; });
    woken_ = false;
    if (stopping_) return;
  }
}

// Takes one due message (a lease of ten minutes makes it this process's), sends it, and records
// the outcome. @return true when there was one.
bool Relay::sendOne() {
  using Row = Poco::Tuple<std::string, std::string, std::string, int, Poco::Int64>;
  std::vector<Row> rows;
  const Poco::Int64 now_us = sdk::nowMicros();
  {
    Poco::Data::Session s = store_.db().session();
    Poco::Int64 due = now_us;
    s << "SELECT message_id, sender, recipients, attempts, next_attempt_us FROM "
         "email_outbox WHERE next_attempt_us <= ? ORDER BY next_attempt_us LIMIT 1",
        use(due), into(rows), now;
  }
  if (rows.empty()) return false;
  const Row& row = rows.front();
  std::string id = row.get<0>();
  const int attempts = row.get<3>() + 1;
  bool claimed = false;
  store_.db().transaction([&](Poco::Data::Session& tx) {
    Poco::Int64 lease = now_us + 600LL * 1000000, seen = row.get<4>();
    int a = attempts;
    Poco::Data::Statement claim =
        (tx << "UPDATE email_outbox SET next_attempt_us = ?, attempts = ? WHERE message_id = ? "
               "AND next_attempt_us = ?",
         use(lease), use(a), use(id), use(seen));
    claimed = claim.execute() == 1;
  });
  if (!claimed) return true;  // another process took it; look again

  std::string error;
  bool permanent = false;
  try {
    std::string raw;
    {
      Poco::Data::Session s = store_.db().session();
      raw = readLongText(s, store_.db().dialect(), "email_outbox", "raw", "message_id", id);
    }
    deliverOnce(config_, row.get<1>(), parseJsonList(row.get<2>()), raw);
  } catch (const PermanentFailure& e) {
    error = e.what();
    permanent = true;
  } catch (const Poco::Exception& e) {
    error = e.displayText();
  } catch (const std::exception& e) {
    error = e.what();
  }
  store_.db().transaction([&](Poco::Data::Session& tx) {
    if (error.empty()) {
      tx << "DELETE FROM email_outbox WHERE message_id = ?", use(id), now;
      store_.setStatus(tx, id, "sent");
      return;
    }
    if (permanent || attempts >= config_.max_attempts) {
      tx << "DELETE FROM email_outbox WHERE message_id = ?", use(id), now;
      store_.setStatus(tx, id, "failed");
      return;
    }
    // 30 s, 1 min, 2 min ... at most an hour between attempts.
    Poco::Int64 wait = std::min<Poco::Int64>(3600, 30LL << std::min(attempts - 1, 7)) * 1000000;
    Poco::Int64 next = sdk::nowMicros() + wait;
    tx << "UPDATE email_outbox SET next_attempt_us = ?, last_error = ? WHERE message_id = ?",
        use(next), use(error), use(id), now;
  });
  if (error.empty()) {
    outcomes_.sent.fetch_add(1, std::memory_order_relaxed);
    logger_.information("outbox: %s sent", id);
  } else {
    (permanent || attempts >= config_.max_attempts ? outcomes_.failed : outcomes_.deferred)
        .fetch_add(1, std::memory_order_relaxed);
    logger_.warning("outbox: %s attempt %d failed%s: %s", id, attempts,
                    std::string(permanent ? " permanently" : ""), error);
  }
  return true;
}

}  // namespace svc::plugins::email
