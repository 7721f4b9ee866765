#include "smtp_server.h"

#include "mime.h"

#include <Poco/Net/NetException.h>
#include <Poco/Net/SecureStreamSocket.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/TCPServerConnection.h>
#include <Poco/Net/TCPServerConnectionFactory.h>
#include <Poco/Net/TCPServerParams.h>
#include <Poco/NumberParser.h>
#include <Poco/String.h>
#include <Poco/StringTokenizer.h>
#include <Poco/ThreadPool.h>

#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace svc::plugins::email {

namespace {

constexpr std::size_t kMaxCommandLine = 1000;  // RFC 5321 says 512; some clients send more
constexpr std::size_t kMaxTextLine = 998;      // RFC 5322 section 2.1.1, without CRLF
constexpr int kMaxErrors = 20;

// A CR or LF inside a line that CRLF ended: a bare one. Two memchr scans (find_first_of makes a
// call per byte of the line).
bool hasBareCrOrLf(std::string_view line) {
  return std::memchr(line.data(), '\r', line.size()) != nullptr ||
         std::memchr(line.data(), '\n', line.size()) != nullptr;
}

class TimeoutError : public std::runtime_error {
 public:
  TimeoutError() : std::runtime_error("timeout") {}
};

class Session {
 public:
  Session(Poco::Net::StreamSocket socket, const SmtpConfig& config, SmtpDelivery& delivery,
          Poco::Logger& logger, Poco::Net::Context::Ptr tls)
      : io_(std::move(socket)),
        config_(config),
        delivery_(delivery),
        logger_(logger),
        tls_(std::move(tls)) {}
  // The answer to the last DATA may still be coming from the spool's writer: it refers to this.
  ~Session() {
    std::unique_lock lock(ack_mutex_);
    ack_cv_.wait(lock, [&] { return !ack_pending_; });
  }

  void run() {
    io_.setReceiveTimeout(Poco::Timespan(config_.timeout_seconds, 0));
    io_.setSendTimeout(Poco::Timespan(config_.timeout_seconds, 0));
    io_.setNoDelay(true);
    reply("220 " + config_.hostname + " ESMTP svc");
    flush();
    try {
      while (!closing_) {
        auto line = readLine(kMaxCommandLine);
        if (!line) break;  // peer went away
        if (line_too_long_) {
          line_too_long_ = false;
          reply("500 5.5.2 Line too long");
        } else {
          command(*line);
        }
        if (errors_ >= kMaxErrors) {
          reply("421 4.7.0 Too many errors; closing");
          closing_ = true;
        }
        if (closing_ || !inputPending()) flush();
      }
    } catch (const TimeoutError&) {
      reply("421 4.4.2 " + config_.hostname + " Timeout; closing");
      tryFlush();
    } catch (const Poco::TimeoutException&) {
      reply("421 4.4.2 " + config_.hostname + " Timeout; closing");
      tryFlush();
    } catch (const Poco::Exception& e) {
      logger_.debug("SMTP session ended: %s", e.displayText());
    }
  }

 private:
  // ---- I/O ----

  bool inputPending() const { return buffer_.find("\r\n", pos_) != std::string::npos; }

  bool fill() {
    flush();  // an answer the socket could not take at once goes out before waiting for input
    if (pos_ > 0 && pos_ == buffer_.size()) {
      buffer_.clear();
      pos_ = 0;
    } else if (pos_ > 65536) {
      buffer_.erase(0, pos_);
      pos_ = 0;
    }
    char chunk[16384];
    int n;
    try {
      n = io_.receiveBytes(chunk, sizeof chunk);
    } catch (const Poco::TimeoutException&) {
      throw TimeoutError();
    }
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  // A command line without its CRLF. Over-long lines are consumed and flagged. Only CRLF ends a
  // line; a bare LF inside a command is kept (and then fails to parse).
  std::optional<std::string> readLine(std::size_t max) {
    bool overflow = false;
    for (;;) {
      std::size_t eol = buffer_.find("\r\n", pos_);
      if (eol != std::string::npos) {
        std::string line = buffer_.substr(pos_, eol - pos_);
        pos_ = eol + 2;
        if (overflow || line.size() > max) {
          line_too_long_ = true;
          return std::string();
        }
        return line;
      }
      if (buffer_.size() - pos_ > max + 2) {  // keep the last byte: it may be the CR
        overflow = true;
        pos_ = buffer_.size() - 1;
      }
      if (!fill()) return std::nullopt;
    }
  }

  void reply(const std::string& text) { out_ += text + "\r\n"; }
  // A client error: answered, and counted towards closing a session that keeps making them.
  void refuse(const std::string& text) {
    ++errors_;
    reply(text);
  }

  // Sends the replies collected so far, after the answer to the last DATA: a pending answer is
  // waited for only when something has to follow it.
  void flush() {
    {
      std::unique_lock lock(ack_mutex_);
      if (out_.empty() && (ack_pending_ || ack_unsent_.empty())) return;
      ack_cv_.wait(lock, [&] { return !ack_pending_; });
      out_.insert(0, ack_unsent_);
      ack_unsent_.clear();
    }
    std::size_t done = 0;
    while (done < out_.size()) {
      int n = io_.sendBytes(out_.data() + done, static_cast<int>(out_.size() - done));
      if (n <= 0) throw Poco::Net::NetException("send failed");
      done += static_cast<std::size_t>(n);
    }
    out_.clear();
  }

  void tryFlush() {
    try {
      flush();
    } catch (const Poco::Exception&) {
    }
  }

  // ---- commands ----

  void resetTransaction() {
    mail_from_.reset();
    recipients_.clear();
  }

  static std::string verbOf(const std::string& line) {
    std::size_t sp = line.find(' ');
    return Poco::toUpper(line.substr(0, sp));
  }

  // `<addr>` after `FROM:` / `TO:`, then space-separated parameters.
  static bool parsePath(const std::string& rest, std::string& address,
                        std::vector<std::string>& params) {
    std::string s = Poco::trimLeft(rest);
    if (s.empty() || s[0] != '<') return false;
    std::size_t close = s.find('>');
    if (close == std::string::npos) return false;
    address = s.substr(1, close - 1);
    // A source route (`<@a,@b:user@c>`) is accepted and ignored, as RFC 5321 asks.
    if (!address.empty() && address[0] == '@') {
      std::size_t colon = address.find(':');
      if (colon == std::string::npos) return false;
      address = address.substr(colon + 1);
    }
    for (const auto& p :
         Poco::StringTokenizer(s.substr(close + 1), " ", Poco::StringTokenizer::TOK_IGNORE_EMPTY)) {
      params.push_back(p);
    }
    return address.find_first_of(" \t\r\n<>") == std::string::npos;
  }

  void command(const std::string& line) {
    const std::string verb = verbOf(line);
    const std::string arg = line.size() > verb.size() ? line.substr(verb.size() + 1) : "";
    if (verb == "EHLO" || verb == "HELO") {
      if (Poco::trim(arg).empty()) {
        return refuse("501 5.5.4 Say who you are: " + verb + " name");
      }
      resetTransaction();
      greeted_ = true;
      if (verb == "HELO") return reply("250 " + config_.hostname);
      reply("250-" + config_.hostname);
      reply("250-PIPELINING");
      reply("250-SIZE " + std::to_string(config_.max_message_bytes));
      reply("250-8BITMIME");
      if (tls_ && !secure_) reply("250-STARTTLS");
      reply("250 ENHANCEDSTATUSCODES");
      return;
    }
    if (verb == "NOOP") return reply("250 2.0.0 Ok");
    if (verb == "RSET") {
      resetTransaction();
      return reply("250 2.0.0 Ok");
    }
    if (verb == "QUIT") {
      closing_ = true;
      return reply("221 2.0.0 Bye");
    }
    if (verb == "VRFY") return reply("252 2.5.2 Cannot VRFY user, but will accept message");
    if (verb == "HELP") return reply("214 2.0.0 See RFC 5321");
    if (verb == "STARTTLS") return startTls(arg);
    if (verb == "MAIL") return mail(arg);
    if (verb == "RCPT") return rcpt(arg);
    if (verb == "DATA") return data(arg);
    refuse("500 5.5.2 Command not recognized");
  }

  void startTls(const std::string& arg) {
    if (!tls_) {
      return refuse("502 5.5.1 STARTTLS is not offered");
    }
    if (secure_) {
      return refuse("503 5.5.1 TLS is already active");
    }
    if (!Poco::trim(arg).empty()) return reply("501 5.5.4 STARTTLS takes no arguments");
    reply("220 2.0.0 Ready to start TLS");
    flush();
    // Whatever the client sent after STARTTLS in the clear is dropped, never read as if it had
    // arrived inside TLS (CVE-2011-0411).
    buffer_.clear();
    pos_ = 0;
    Poco::Net::SecureStreamSocket secure = Poco::Net::SecureStreamSocket::attach(io_, tls_);
    io_ = secure;
    secure_ = true;
    greeted_ = false;
    resetTransaction();
  }

  void mail(const std::string& arg) {
    if (!greeted_) {
      return refuse("503 5.5.1 Say EHLO first");
    }
    if (mail_from_) {
      return refuse("503 5.5.1 Nested MAIL command");
    }
    if (Poco::icompare(arg.substr(0, 5), "FROM:") != 0) {
      return refuse("501 5.5.4 Syntax: MAIL FROM:<address>");
    }
    std::string address;
    std::vector<std::string> params;
    if (!parsePath(arg.substr(5), address, params) ||
        (!address.empty() && !isValidAddress(address))) {
      return refuse("553 5.1.7 The sender address is not valid");
    }
    for (const auto& p : params) {
      std::string key = Poco::toUpper(p.substr(0, p.find('=')));
      std::string value = p.find('=') == std::string::npos ? "" : p.substr(p.find('=') + 1);
      if (key == "SIZE") {
        Poco::UInt64 size = 0;
        if (!Poco::NumberParser::tryParseUnsigned64(value, size)) {
          return reply("501 5.5.4 SIZE needs a number");
        }
        if (size > config_.max_message_bytes) {
          return reply("552 5.3.4 The message is larger than the " +
                       std::to_string(config_.max_message_bytes) + " bytes accepted");
        }
      } else if (key == "BODY") {
        std::string body = Poco::toUpper(value);
        if (body != "7BIT" && body != "8BITMIME") return reply("501 5.5.4 Unknown BODY type");
      } else {
        return reply("555 5.5.4 Unsupported MAIL parameter " + key);
      }
    }
    mail_from_ = address;
    reply("250 2.1.0 Ok");
  }

  void rcpt(const std::string& arg) {
    if (!mail_from_) {
      return refuse("503 5.5.1 Need MAIL before RCPT");
    }
    if (Poco::icompare(arg.substr(0, 3), "TO:") != 0) {
      return refuse("501 5.5.4 Syntax: RCPT TO:<address>");
    }
    std::string address;
    std::vector<std::string> params;
    if (!parsePath(arg.substr(3), address, params) || !isValidAddress(address)) {
      return refuse("501 5.1.3 The recipient address is not valid");
    }
    if (!params.empty()) return reply("555 5.5.4 RCPT parameters are not supported");
    if (static_cast<int>(recipients_.size()) >= config_.max_recipients) {
      return reply("452 4.5.3 Too many recipients");
    }
    address = Poco::toLower(address);
    bool known = false;
    try {
      known = delivery_.acceptsRecipient(address);
    } catch (const std::exception& e) {
      logger_.error("SMTP recipient lookup failed: %s", std::string(e.what()));
      return reply("451 4.3.0 Temporary failure; try again later");
    }
    if (!known) {
      return refuse("550 5.1.1 <" + address + ">: no such mailbox here");
    }
    if (std::find(recipients_.begin(), recipients_.end(), address) == recipients_.end()) {
      recipients_.push_back(address);
    }
    reply("250 2.1.5 Ok");
  }

  void data(const std::string& arg) {
    if (!mail_from_) {
      return refuse("503 5.5.1 Need MAIL first");
    }
    if (recipients_.empty()) {
      return refuse("554 5.5.1 No valid recipients");
    }
    if (!Poco::trim(arg).empty()) return reply("501 5.5.4 DATA takes no arguments");
    reply("354 End data with <CR><LF>.<CR><LF>");
    flush();

    std::string message;
    bool bare = false, too_long = false, too_big = false;
    bool continuing = false;  // the bytes before the next CRLF continue an over-long line
    for (;;) {
      std::size_t eol = buffer_.find("\r\n", pos_);
      if (eol == std::string::npos) {
        if (buffer_.size() - pos_ > kMaxTextLine + 2) {
          too_long = true;
          continuing = true;
          // Keep the last byte: it may be the CR of the CRLF that ends this line.
          pos_ = buffer_.size() - 1;
        }
        if (!fill()) throw Poco::Net::NetException("connection closed in DATA");
        continue;
      }
      std::string_view line(buffer_.data() + pos_, eol - pos_);
      pos_ = eol + 2;
      if (continuing) {
        continuing = false;
        if (hasBareCrOrLf(line)) bare = true;
        continue;  // the tail of a refused line, never a terminator
      }
      if (line == ".") break;
      if (hasBareCrOrLf(line)) bare = true;
      if (line.size() > kMaxTextLine) too_long = true;
      if (!line.empty() && line[0] == '.') line.remove_prefix(1);
      if (!too_big && message.size() + line.size() + 2 > config_.max_message_bytes) {
        too_big = true;
        message.clear();
        message.shrink_to_fit();
      }
      if (!too_big && !bare && !too_long) {
        message.append(line);
        message.append("\r\n");
      }
    }
    const std::string from = *mail_from_;
    const std::vector<std::string> rcpts = recipients_;
    resetTransaction();
    if (bare) {
      return reply("550 5.6.0 Message refused: bare CR or LF found (only CRLF ends a line)");
    }
    if (too_long) return reply("550 5.6.0 Message refused: a line is longer than 998 octets");
    if (too_big) {
      return reply("552 5.3.4 The message is larger than the " +
                   std::to_string(config_.max_message_bytes) + " bytes accepted");
    }
    if (secure_) {  // a TLS stream is written by its session's thread alone
      try {
        delivery_.deliver(from, rcpts, message);
      } catch (const std::exception& e) {
        return reply(storedAnswer(e.what()));
      }
      return reply(storedAnswer(""));
    }
    // The answer is sent from the thread that learns the message is stored; meanwhile this
    // session goes back to reading (its client sends nothing before the answer, or pipelines
    // commands whose replies wait for it).
    {
      std::lock_guard lock(ack_mutex_);
      ack_pending_ = true;
    }
    const int fd = io_.impl()->sockfd();
    try {
      delivery_.deliverAsync(from, rcpts, std::move(message), [this, fd](const std::string& e) {
        const std::string text = storedAnswer(e) + "\r\n";
        std::lock_guard lock(ack_mutex_);
        // Never blocks the caller on a slow client: what the socket does not take now is sent
        // by the session before anything else.
        ssize_t n = ::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        ack_unsent_ = text.substr(n > 0 ? static_cast<std::size_t>(n) : 0);
        ack_pending_ = false;
        ack_cv_.notify_one();
      });
    } catch (const std::exception& e) {  // nothing was queued: the answer is this session's
      {
        std::lock_guard lock(ack_mutex_);
        ack_pending_ = false;
      }
      reply(storedAnswer(e.what()));
    }
  }

  std::string storedAnswer(const std::string& error) {
    if (error.empty()) return "250 2.0.0 Ok: stored";
    logger_.error("SMTP delivery failed: %s", error);
    return "451 4.3.0 The message could not be stored; try again later";
  }

  Poco::Net::StreamSocket io_;
  const SmtpConfig& config_;
  SmtpDelivery& delivery_;
  Poco::Logger& logger_;
  Poco::Net::Context::Ptr tls_;
  std::string buffer_, out_;
  std::size_t pos_ = 0;
  bool greeted_ = false, secure_ = false, closing_ = false, line_too_long_ = false;
  int errors_ = 0;
  std::optional<std::string> mail_from_;
  std::vector<std::string> recipients_;
  // The answer to the last DATA, sent by the thread that stored the message.
  std::mutex ack_mutex_;
  std::condition_variable ack_cv_;
  bool ack_pending_ = false;
  std::string ack_unsent_;  // what the socket did not take when it was sent
};

class Connection : public Poco::Net::TCPServerConnection {
 public:
  Connection(const Poco::Net::StreamSocket& socket, const SmtpConfig& config,
             SmtpDelivery& delivery, Poco::Logger& logger, Poco::Net::Context::Ptr tls,
             SessionRegistry& sessions)
      : TCPServerConnection(socket),
        config_(config),
        delivery_(delivery),
        logger_(logger),
        tls_(std::move(tls)),
        sessions_(sessions) {}
  void run() override {
    const int fd = socket().impl()->sockfd();
    sessions_.add(fd);
    try {
      Session(socket(), config_, delivery_, logger_, tls_).run();
    } catch (const std::exception& e) {
      logger_.warning("SMTP session failed: %s", std::string(e.what()));
    }
    sessions_.remove(fd);
  }

 private:
  const SmtpConfig& config_;
  SmtpDelivery& delivery_;
  Poco::Logger& logger_;
  Poco::Net::Context::Ptr tls_;
  SessionRegistry& sessions_;
};

class Factory : public Poco::Net::TCPServerConnectionFactory {
 public:
  Factory(const SmtpConfig& config, SmtpDelivery& delivery, Poco::Logger& logger,
          Poco::Net::Context::Ptr tls, SessionRegistry& sessions)
      : config_(config),
        delivery_(delivery),
        logger_(logger),
        tls_(std::move(tls)),
        sessions_(sessions) {}
  Poco::Net::TCPServerConnection* createConnection(const Poco::Net::StreamSocket& s) override {
    return new Connection(s, config_, delivery_, logger_, tls_, sessions_);
  }

 private:
  const SmtpConfig& config_;
  SmtpDelivery& delivery_;
  Poco::Logger& logger_;
  Poco::Net::Context::Ptr tls_;
  SessionRegistry& sessions_;
};

}  // namespace

void SessionRegistry::add(int fd) {
  std::lock_guard lock(mutex_);
  fds_.insert(fd);
}

void SessionRegistry::remove(int fd) {
  std::lock_guard lock(mutex_);
  fds_.erase(fd);
}

void SessionRegistry::shutdownAll() {
  std::lock_guard lock(mutex_);
  for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
}

SmtpServer::SmtpServer(SmtpConfig config, SmtpDelivery& delivery, Poco::Logger& logger)
    : config_(std::move(config)), delivery_(delivery), logger_(logger) {}

SmtpServer::~SmtpServer() {
  stop();
}

void SmtpServer::start() {
  if (!config_.tls_cert_file.empty() && !config_.tls_key_file.empty()) {
    tls_ = new Poco::Net::Context(Poco::Net::Context::TLS_SERVER_USE, config_.tls_key_file,
                                  config_.tls_cert_file, "", Poco::Net::Context::VERIFY_NONE);
  }
  Poco::Net::ServerSocket socket;
  socket.bind(Poco::Net::SocketAddress(config_.listen), true);
  socket.listen(128);
  auto* params = new Poco::Net::TCPServerParams;
  params->setMaxThreads(config_.max_connections);
  params->setMaxQueued(config_.max_connections * 2);
  params->setThreadIdleTime(Poco::Timespan(10, 0));
  pool_ = std::make_unique<Poco::ThreadPool>(2, config_.max_connections);
  sessions_ = std::make_unique<SessionRegistry>();
  server_ = std::make_unique<Poco::Net::TCPServer>(
      new Factory(config_, delivery_, logger_, tls_, *sessions_), *pool_, socket, params);
  server_->start();
}

void SmtpServer::stop() {
  if (!server_) return;
  server_->stop();
  // Sessions waiting for a command are ended; one storing a message finishes storing it. Wait
  // for all of them, so nothing outlives the plugin.
  sessions_->shutdownAll();
  pool_->joinAll();
  server_.reset();
}

unsigned short SmtpServer::port() const {
  return server_ ? server_->port() : 0;
}

}  // namespace svc::plugins::email
