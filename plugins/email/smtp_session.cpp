#include "smtp_session.h"

#include "mime.h"

#include <svc/sdk/addresses.h>

#include <Poco/NumberParser.h>
#include <Poco/String.h>
#include <Poco/StringTokenizer.h>

#include <algorithm>
#include <cstring>

namespace svc::plugins::email {

namespace {

constexpr std::size_t kMaxCommandLine = 1000;  // RFC 5321 says 512; some clients send more
constexpr std::size_t kMaxTextLine = 998;      // RFC 5322 section 2.1.1, without CRLF
constexpr int kMaxErrors = 20;
constexpr int kMaxJunk = 100;  // Postfix's smtpd_junk_command_limit

// A CR or LF inside a line that CRLF ended: a bare one. Two memchr scans (find_first_of makes a
// call per byte of the line).
bool hasBareCrOrLf(std::string_view line) {
  return std::memchr(line.data(), '\r', line.size()) != nullptr ||
         std::memchr(line.data(), '\n', line.size()) != nullptr;
}

std::string verbOf(const std::string& line) {
  std::size_t sp = line.find(' ');
  return Poco::toUpper(line.substr(0, sp));
}

// `<addr>` after `FROM:` / `TO:`, then space-separated parameters.
bool parsePath(const std::string& rest, std::string& address, std::vector<std::string>& params) {
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

}  // namespace

bool DataBudget::take(std::size_t bytes) {
  std::size_t used = used_.load();
  do {
    if (used + bytes > limit_) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes));
  return true;
}

SmtpSession::SmtpSession(const SmtpConfig& config, SmtpDelivery& delivery, Poco::Logger& logger,
                         bool tls_offered, std::function<void()> wake, DataBudget* budget)
    : config_(config),
      delivery_(delivery),
      logger_(logger),
      tls_offered_(tls_offered),
      budget_(budget),
      replies_(std::make_shared<Replies>()) {
  replies_->wake = std::move(wake);
}

SmtpSession::~SmtpSession() {
  releaseBudget();
  std::lock_guard lock(replies_->mutex);
  replies_->wake = nullptr;
}

void SmtpSession::releaseBudget() {
  if (budget_ && reserved_ > 0) budget_->give(reserved_);
  reserved_ = 0;
}

bool SmtpSession::junk() {
  if (++junk_ <= kMaxJunk) return false;
  reply("421 4.7.0 " + config_.hostname + " Too many commands without mail; closing");
  closing_ = true;
  return true;
}

std::string SmtpSession::greeting() const {
  return "220 " + config_.hostname + " ESMTP svc\r\n";
}

void SmtpSession::reply(const std::string& text) {
  std::lock_guard lock(replies_->mutex);
  auto& chunks = replies_->chunks;
  if (chunks.empty() || chunks.back().pending) chunks.emplace_back();
  chunks.back().text += text;
  chunks.back().text += "\r\n";
  replies_->queued += text.size() + 2;
}

std::string SmtpSession::takeOutput() {
  std::lock_guard lock(replies_->mutex);
  auto& chunks = replies_->chunks;
  std::string out;
  while (!chunks.empty() && !chunks.front().pending) {
    out += chunks.front().text;
    chunks.pop_front();
  }
  replies_->queued -= out.size();
  return out;
}

bool SmtpSession::answerPending() const {
  std::lock_guard lock(replies_->mutex);
  return replies_->pending > 0;
}

bool SmtpSession::backlogged() const {
  std::lock_guard lock(replies_->mutex);
  return replies_->pending > 0 && replies_->queued > 16 * 1024;
}

void SmtpSession::refuse(const std::string& text) {
  ++errors_;
  reply(text);
  if (errors_ >= kMaxErrors) {
    reply("421 4.7.0 Too many errors; closing");
    closing_ = true;
  }
}

void SmtpSession::timedOut() {
  reply("421 4.4.2 " + config_.hostname + " Timeout; closing");
  closing_ = true;
}

void SmtpSession::tlsStarted() {
  tls_requested_ = false;
  secure_ = true;
  greeted_ = false;
  resetTransaction();
}

void SmtpSession::resetTransaction() {
  mail_from_.reset();
  recipients_.clear();
}

void SmtpSession::feed(std::string_view bytes) {
  if (closing_ || tls_requested_) return;  // nothing after QUIT; nothing sent in the clear
  if (pos_ > 0 && pos_ == in_.size()) {
    in_.clear();
    pos_ = 0;
  } else if (pos_ > 65536) {
    in_.erase(0, pos_);
    pos_ = 0;
  }
  in_.append(bytes);
  handleLines();
}

void SmtpSession::handleLines() {
  while (!closing_ && !tls_requested_) {
    if (in_data_) {
      if (!readData()) return;
      finishData();
      continue;
    }
    // A command line ends only at CRLF.
    std::size_t eol = in_.find("\r\n", pos_);
    if (eol == std::string::npos) {
      if (in_.size() - pos_ > kMaxCommandLine + 2) {
        discarding_line_ = true;
        pos_ = in_.size() - 1;  // keep the last byte: it may be the CR
      }
      return;
    }
    std::string line = in_.substr(pos_, eol - pos_);
    pos_ = eol + 2;
    if (discarding_line_ || line.size() > kMaxCommandLine) {
      discarding_line_ = false;
      reply("500 5.5.2 Line too long");
      continue;
    }
    // A bare CR or LF could end the line for another reader, and echoed in a reply it would
    // make a line of its own.
    if (hasBareCrOrLf(line)) {
      refuse("500 5.5.2 A command line ends only with CRLF");
      continue;
    }
    command(line);
  }
  if (tls_requested_) {
    // Whatever the client sent after STARTTLS in the clear is dropped, never read as if it had
    // arrived inside TLS (CVE-2011-0411).
    in_.clear();
    pos_ = 0;
  }
}

void SmtpSession::command(const std::string& line) {
  const std::string verb = verbOf(line);
  const std::string arg = line.size() > verb.size() ? line.substr(verb.size() + 1) : "";
  const bool moves_no_mail = verb == "NOOP" || verb == "RSET" || verb == "VRFY" || verb == "HELP" ||
                             verb == "EHLO" || verb == "HELO";
  if (moves_no_mail && junk()) return;
  if (verb == "EHLO" || verb == "HELO") {
    if (Poco::trim(arg).empty()) return refuse("501 5.5.4 Say who you are: " + verb + " name");
    resetTransaction();
    greeted_ = true;
    // At most one domain's worth: it is checked by SPF and shown in a header.
    const std::string name = Poco::trim(arg);
    client_.helo = name.substr(0, std::min<std::size_t>(name.find(' '), 255));
    if (verb == "HELO") return reply("250 " + config_.hostname);
    reply("250-" + config_.hostname);
    reply("250-PIPELINING");
    reply("250-SIZE " + std::to_string(config_.max_message_bytes));
    reply("250-8BITMIME");
    if (tls_offered_ && !secure_) reply("250-STARTTLS");
    return reply("250 ENHANCEDSTATUSCODES");
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
  if (verb == "STARTTLS") {
    if (!tls_offered_) return refuse("502 5.5.1 STARTTLS is not offered");
    if (secure_) return refuse("503 5.5.1 TLS is already active");
    if (!Poco::trim(arg).empty()) return reply("501 5.5.4 STARTTLS takes no arguments");
    tls_requested_ = true;
    return reply("220 2.0.0 Ready to start TLS");
  }
  if (verb == "MAIL") return mail(arg);
  if (verb == "RCPT") return rcpt(arg);
  if (verb == "DATA") return startData(arg);
  refuse("500 5.5.2 Command not recognized");
}

void SmtpSession::mail(const std::string& arg) {
  if (!greeted_) return refuse("503 5.5.1 Say EHLO first");
  if (mail_from_) return refuse("503 5.5.1 Nested MAIL command");
  if (Poco::icompare(arg.substr(0, 5), "FROM:") != 0) {
    return refuse("501 5.5.4 Syntax: MAIL FROM:<address>");
  }
  std::string address;
  std::vector<std::string> params;
  if (!parsePath(arg.substr(5), address, params) ||
      (!address.empty() && !sdk::isValidEmailAddress(address))) {
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
      return reply("555 5.5.4 Unsupported MAIL parameter " + key.substr(0, 32));
    }
  }
  mail_from_ = address;
  reply("250 2.1.0 Ok");
}

void SmtpSession::rcpt(const std::string& arg) {
  if (!mail_from_) return refuse("503 5.5.1 Need MAIL before RCPT");
  if (Poco::icompare(arg.substr(0, 3), "TO:") != 0) {
    return refuse("501 5.5.4 Syntax: RCPT TO:<address>");
  }
  std::string address;
  std::vector<std::string> params;
  if (!parsePath(arg.substr(3), address, params) || !sdk::isValidEmailAddress(address)) {
    return refuse("501 5.1.3 The recipient address is not valid");
  }
  if (!params.empty()) return reply("555 5.5.4 RCPT parameters are not supported");
  if (static_cast<int>(recipients_.size()) >= config_.max_recipients) {
    return reply("452 4.5.3 Too many recipients");
  }
  address = Poco::toLower(address);
  bool known = false;
  std::optional<std::string> refused;
  try {
    known = delivery_.acceptsRecipient(address);
    if (known) refused = delivery_.refusesSender(*mail_from_, address);
  } catch (const std::exception& e) {
    logger_.error("SMTP recipient lookup failed: %s", std::string(e.what()));
    return reply("451 4.3.0 Temporary failure; try again later");
  }
  if (!known) return refuse("550 5.1.1 <" + address + ">: no such mailbox here");
  if (refused) return refuse("550 5.7.1 <" + address + ">: " + *refused);
  if (std::find(recipients_.begin(), recipients_.end(), address) == recipients_.end()) {
    recipients_.push_back(address);
  }
  reply("250 2.1.5 Ok");
}

void SmtpSession::startData(const std::string& arg) {
  if (!mail_from_) return refuse("503 5.5.1 Need MAIL first");
  if (recipients_.empty()) return refuse("554 5.5.1 No valid recipients");
  if (!Poco::trim(arg).empty()) return reply("501 5.5.4 DATA takes no arguments");
  reply("354 End data with <CR><LF>.<CR><LF>");
  in_data_ = true;
  message_.clear();
  bare_ = too_long_ = too_big_ = continuing_ = over_budget_ = false;
}

bool SmtpSession::readData() {
  for (;;) {
    std::size_t eol = in_.find("\r\n", pos_);
    if (eol == std::string::npos) {
      if (in_.size() - pos_ > kMaxTextLine + 2) {
        too_long_ = true;
        continuing_ = true;
        // The bytes skipped hold no CRLF, so a CR or LF among them is bare: noted as it would
        // be had the whole line arrived at once (found by fuzzing).
        if (hasBareCrOrLf(std::string_view(in_).substr(pos_, in_.size() - 1 - pos_))) bare_ = true;
        pos_ = in_.size() - 1;  // keep the last byte: it may be the CR of the line's CRLF
      }
      return false;
    }
    std::string_view line(in_.data() + pos_, eol - pos_);
    pos_ = eol + 2;
    if (continuing_) {
      continuing_ = false;
      if (hasBareCrOrLf(line)) bare_ = true;
      continue;  // the tail of a refused line, never a terminator
    }
    if (line == ".") return true;
    if (hasBareCrOrLf(line)) bare_ = true;
    if (line.size() > kMaxTextLine) too_long_ = true;
    if (!line.empty() && line[0] == '.') line.remove_prefix(1);
    if (!too_big_ && message_.size() + line.size() + 2 > config_.max_message_bytes) {
      too_big_ = true;
      message_.clear();
      message_.shrink_to_fit();
      releaseBudget();
    }
    if (!too_big_ && !bare_ && !too_long_ && !over_budget_) {
      if (budget_ && !budget_->take(line.size() + 2)) {
        over_budget_ = true;
        message_.clear();
        message_.shrink_to_fit();
        releaseBudget();
        continue;
      }
      reserved_ += budget_ ? line.size() + 2 : 0;
      message_.append(line);
      message_.append("\r\n");
    }
  }
}

void SmtpSession::finishData() {
  in_data_ = false;
  const std::string from = *mail_from_;
  const std::vector<std::string> rcpts = recipients_;
  resetTransaction();
  std::string message = std::move(message_);
  message_.clear();
  releaseBudget();  // the delivery holds it now, bounded by the spool's own backlog limit
  if (bare_) {
    return reply("550 5.6.0 Message refused: bare CR or LF found (only CRLF ends a line)");
  }
  if (too_long_) return reply("550 5.6.0 Message refused: a line is longer than 998 octets");
  if (too_big_) {
    return reply("552 5.3.4 The message is larger than the " +
                 std::to_string(config_.max_message_bytes) + " bytes accepted");
  }
  if (over_budget_) return reply("452 4.3.1 Insufficient system storage; try again later");
  junk_ = 0;
  // The answer comes from the thread that learns the message is stored; meanwhile the session
  // goes on reading (its client sends nothing before the answer, or pipelines commands whose
  // replies wait for it).
  Chunk* slot = nullptr;
  {
    std::lock_guard lock(replies_->mutex);
    replies_->chunks.push_back(Chunk{"", true});
    slot = &replies_->chunks.back();
    ++replies_->pending;
  }
  // The callback may come after this session has ended: it holds the reply queue, not the
  // session, and wakes the connection only while the session lives.
  auto answered = [replies = replies_, slot](const std::string& text) {
    std::function<void()> wake;
    {
      std::lock_guard lock(replies->mutex);
      slot->text = text;
      slot->pending = false;
      --replies->pending;
      replies->queued += text.size();
      wake = replies->wake;
    }
    if (wake) wake();
  };
  try {
    delivery_.deliverAsync(client_, from, rcpts, std::move(message),
                           [answered, &logger = logger_](const std::string& e) {
                             answered(storedAnswer(logger, e) + "\r\n");
                           });
  } catch (const std::exception& e) {  // nothing was queued: the answer is this session's
    std::lock_guard lock(replies_->mutex);
    const std::string text = storedAnswer(logger_, e.what()) + "\r\n";
    slot->text = text;
    slot->pending = false;
    --replies_->pending;
    replies_->queued += text.size();
  }
}

std::string SmtpSession::storedAnswer(Poco::Logger& logger, const std::string& error) {
  if (error.empty()) return "250 2.0.0 Ok: stored";
  if (isSmtpRefusal(error)) return error;  // a refusal by policy, said as it is
  logger.error("SMTP delivery failed: %s", error);
  return "451 4.3.0 The message could not be stored; try again later";
}

}  // namespace svc::plugins::email
