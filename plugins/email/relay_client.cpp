#include "relay_client.h"

#include "bounces/dsn.h"

#include <svc/sdk/util.h>

#include <Poco/Net/Context.h>
#include <Poco/Net/DialogSocket.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/SMTPClientSession.h>
#include <Poco/Net/SecureSMTPClientSession.h>

#include <algorithm>
#include <cctype>

namespace svc::plugins::email {

namespace {

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

}  // namespace

std::string replyLine(std::string reply) {
  // A multi-line reply's lines joined with spaces; bytes that are not UTF-8 and control
  // characters become U+FFFD (quoteForDetail), and the whole is cut to what a reason column
  // and a person reading it need.
  std::replace(reply.begin(), reply.end(), '\r', ' ');
  std::replace(reply.begin(), reply.end(), '\n', ' ');
  std::replace(reply.begin(), reply.end(), '\t', ' ');
  if (reply.size() > 4 * kMaxReplyBytes) reply.resize(4 * kMaxReplyBytes);
  return sdk::truncateUtf8(sdk::quoteForDetail(reply, kMaxReplyBytes), kMaxReplyBytes);
}

namespace {

// Poco's session with its socket reachable, to send bytes that are already a finished message.
class RelaySession : public Poco::Net::SecureSMTPClientSession {
 public:
  using SecureSMTPClientSession::SecureSMTPClientSession;
  using SMTPClientSession::socket;
};

// One reply, all its lines, read without Poco's 4 KB line limit (beyond which it throws, and the
// attempt would be deferred for every recipient): what is past a bound is read and dropped.
int readReply(Poco::Net::DialogSocket& socket, std::string& reply) {
  constexpr std::size_t kKept = 4 * kMaxReplyBytes;
  reply.clear();
  for (;;) {
    std::string line;
    int ch = 0;
    while ((ch = socket.get()) != -1 && ch != '\n') {
      if (line.size() < kKept) line += static_cast<char>(ch);
    }
    if (ch == -1) throw Poco::Net::SMTPException("the relay closed the connection");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (reply.size() < kKept) reply += (reply.empty() ? "" : "\n") + line;
    const bool more = line.size() > 3 && line[3] == '-';
    if (!more) {
      const bool coded = line.size() >= 3 && std::isdigit(static_cast<unsigned char>(line[0])) &&
                         std::isdigit(static_cast<unsigned char>(line[1])) &&
                         std::isdigit(static_cast<unsigned char>(line[2]));
      return coded ? std::stoi(line.substr(0, 3)) : 0;
    }
  }
}

int command(RelaySession& session, const std::string& line, std::string& reply) {
  session.socket().sendMessage(line);
  return readReply(session.socket(), reply);
}

void connect(RelaySession& session, const RelayConfig& config) {
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
}

// One attempt's transactions on one connection, and what they came to.
class Attempt {
 public:
  Attempt(RelaySession& session, const std::string& raw) : session_(session), body_(stuffed(raw)) {}

  /// One transaction. @return false when the rest are not to be tried: the relay refused the
  /// first sender (result.message_error), or deferred a sender (these recipients deferred).
  bool send(const Envelope& e, bool first) {
    std::string response;
    if (!first) command(session_, "RSET", response);  // whatever the last transaction left
    int status = command(session_, "MAIL FROM:<" + e.sender + ">", response);
    if (status / 100 == 5 && !answered) {
      // Refused at the first MAIL: the relay will not take this sender (authentication
      // required, send-as denied), which says nothing about the recipients. The message failed
      // as a whole.
      result.message_error = replyLine("MAIL answered " + response);
      return false;
    }
    if (status / 100 == 5) {  // it took others' envelopes: these recipients bounce
      all(e.recipients, status, "MAIL", response);
      return true;
    }
    if (status / 100 != 2) {
      all(e.recipients, status, "MAIL", response);
      return false;
    }
    std::vector<std::string> taken;
    for (const auto& r : e.recipients) {
      status = command(session_, "RCPT TO:<" + r + ">", response);
      answered = true;
      if (status / 100 == 2) {
        taken.push_back(r);
      } else {
        all({r}, status, "RCPT", response);
      }
    }
    if (taken.empty()) return true;
    status = command(session_, "DATA", response);
    if (status / 100 != 3) {
      all(taken, status, "DATA", response);
      return true;
    }
    session_.socket().sendBytes(body_.data(), static_cast<int>(body_.size()));
    status = readReply(session_.socket(), response);
    if (status / 100 != 2) {
      all(taken, status, "the message", response);
      return true;
    }
    result.delivered.insert(result.delivered.end(), taken.begin(), taken.end());
    return true;
  }

  /// The connection failed in the middle of e's transaction: its recipients the relay had not
  /// answered for, and every recipient of the envelopes after it, are deferred.
  void broken(const std::vector<Envelope>& envelopes, std::size_t at, std::size_t refused_before,
              std::size_t deferred_before, const std::string& why) {
    auto answeredNow = [&](const std::string& r) {
      for (std::size_t i = refused_before; i < result.refused.size(); ++i) {
        if (result.refused[i].recipient == r) return true;
      }
      for (std::size_t i = deferred_before; i < result.deferred.size(); ++i) {
        if (result.deferred[i] == r) return true;
      }
      return false;
    };
    for (const auto& r : envelopes[at].recipients) {
      if (!answeredNow(r)) result.deferred.push_back(r);
    }
    deferRest(envelopes, at + 1);
    result.deferred_answer = replyLine(why);
  }

  void deferRest(const std::vector<Envelope>& envelopes, std::size_t from) {
    for (std::size_t i = from; i < envelopes.size(); ++i) {
      result.deferred.insert(result.deferred.end(), envelopes[i].recipients.begin(),
                             envelopes[i].recipients.end());
    }
  }

  RelayResult result;
  bool answered = false;  ///< The relay answered for a recipient (RCPT).

 private:
  // Everyone in `to` shares the answer: refused for good on a 5xx, deferred otherwise.
  void all(const std::vector<std::string>& to, int status, const std::string& command,
           const std::string& reply) {
    const std::string answer = replyLine(command + " answered " + reply);
    std::string code = enhancedStatus(reply);
    if (code.empty() || code[0] != '5') code = "5.0.0";
    for (const auto& r : to) {
      if (status / 100 == 5) {
        result.refused.push_back({r, answer, code});
      } else {
        result.deferred.push_back(r);
      }
    }
    if (status / 100 != 5) result.deferred_answer = answer;
  }

  RelaySession& session_;
  const std::string body_;
};

}  // namespace

RelayResult relayMessage(const RelayConfig& config, const std::vector<Envelope>& envelopes,
                         const std::string& raw,
                         const std::function<bool(const RelayResult&)>& progress) {
  RelaySession session(config.host, static_cast<Poco::UInt16>(config.port));
  connect(session, config);
  Attempt attempt(session, raw);
  RelayResult& result = attempt.result;
  for (std::size_t i = 0; i < envelopes.size(); ++i) {
    const std::size_t refused_before = result.refused.size(),
                      deferred_before = result.deferred.size();
    std::string failure;
    try {
      if (attempt.send(envelopes[i], i == 0)) {
        if (i + 1 == envelopes.size() || !progress || progress(result)) continue;
        attempt.deferRest(envelopes, i + 1);
        result.deferred_answer = "the attempt ran out of time; the rest are sent later";
        break;
      }
      if (result.message_error.empty()) {  // a sender deferred: so would the rest be
        attempt.deferRest(envelopes, i + 1);
        result.deferred_at_mail = !attempt.answered;
      }
      break;
    } catch (const Poco::Exception& e) {
      if (!attempt.answered) throw;  // nothing answered for yet: the attempt failed as a whole
      failure = e.displayText();
    } catch (const std::exception& e) {
      if (!attempt.answered) throw;
      failure = e.what();
    }
    attempt.broken(envelopes, i, refused_before, deferred_before, failure);
    return result;  // the connection is gone: no QUIT
  }
  try {
    session.close();  // QUIT
  } catch (const Poco::Exception&) {
  }
  return result;
}

}  // namespace svc::plugins::email
