// One SMTP conversation (RFC 5321) as a state machine over bytes: no socket, no thread. The
// listener feeds it what the client sent and sends what it answers, so a session waiting for its
// client costs memory, not a thread, and the protocol is unit-tested and fuzzed on its own.
//
// Commands: EHLO/HELO, MAIL (SIZE, BODY), RCPT, DATA, RSET, NOOP, QUIT, VRFY, HELP, STARTTLS when
// offered. DATA refuses what could smuggle a second message past another server's reading of the
// first: a bare CR or LF, a line over 998 octets; only CRLF.CRLF ends a message.
//
// The answer to DATA may come later, from the thread that stored the message
// (SmtpDelivery::deliverAsync): replies to commands the client pipelined after the message are
// held back until it has come, so the client reads them in order. `wake` is called, from that
// thread, when held-back output becomes ready.
#pragma once

#include "smtp_server.h"

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::email {

/// Bytes of message data that all sessions together may hold in memory while messages arrive:
/// without it, a thousand clients each sending most of a maximum-size message would hold tens of
/// gigabytes. A message that finds the budget spent is read to its end and refused 452.
class DataBudget {
 public:
  explicit DataBudget(std::size_t limit) : limit_(limit) {}
  /// @return true when `bytes` were taken; false (nothing taken) when they would exceed it.
  bool take(std::size_t bytes);
  void give(std::size_t bytes) { used_.fetch_sub(bytes); }
  std::size_t used() const { return used_.load(); }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

class SmtpSession {
 public:
  /// @param tls_offered STARTTLS may be negotiated. @param wake see the file comment.
  /// @param budget shared by the listener's sessions (null: no limit).
  SmtpSession(const SmtpConfig& config, SmtpDelivery& delivery, Poco::Logger& logger,
              bool tls_offered, std::function<void()> wake, DataBudget* budget = nullptr);
  /// Never waits: an answer still being stored fills the reply queue it shares with the storing
  /// thread, which outlives the session as long as that thread needs it.
  ~SmtpSession();
  SmtpSession(const SmtpSession&) = delete;
  SmtpSession& operator=(const SmtpSession&) = delete;

  /// @return the 220 greeting, to send first.
  std::string greeting() const;
  /// Consumes what the client sent: every complete command (or message) is handled and answered.
  void feed(std::string_view bytes);
  /// @return the replies that may be sent now, in order (removing them from the session).
  std::string takeOutput();
  /// @return true when an answer to DATA is still being stored.
  bool answerPending() const;
  /// @return true when replies wait behind a pending answer past a few KiB: read no more from
  /// the client until it comes (a client pipelining EHLO on and on would grow them for ever).
  bool backlogged() const;
  /// @return true once the session is over (QUIT, too many errors): close after the output.
  bool closing() const { return closing_; }
  /// @return true when STARTTLS was accepted: once the output is sent, the connection starts TLS
  /// and calls tlsStarted().
  bool tlsRequested() const { return tls_requested_; }
  /// The connection is now TLS: the session starts over (RFC 3207 section 4.2).
  void tlsStarted();
  /// @return true inside a mail transaction (after MAIL, until the message is answered).
  bool inTransaction() const { return mail_from_.has_value() || in_data_; }
  /// The client took too long: answers 421 and closes.
  void timedOut();
  /// The client's address (for SPF); the HELO name the session learns itself.
  void setClientIp(std::string ip) { client_.ip = std::move(ip); }

 private:
  void handleLines();
  void command(const std::string& line);
  void reply(const std::string& text);
  void refuse(const std::string& text);
  void resetTransaction();
  void mail(const std::string& arg);
  void rcpt(const std::string& arg);
  void startData(const std::string& arg);
  /// Reads message lines from the buffer. @return true when the message ended.
  bool readData();
  void finishData();
  static std::string storedAnswer(Poco::Logger& logger, const std::string& error);
  /// Counts a command that moves no mail; too many end the session. @return true when it ended.
  bool junk();
  void releaseBudget();

  const SmtpConfig& config_;
  SmtpDelivery& delivery_;
  Poco::Logger& logger_;
  const bool tls_offered_;
  DataBudget* budget_;

  std::string in_;
  std::size_t pos_ = 0;
  bool discarding_line_ = false;  // the rest of an over-long command line is being skipped
  bool greeted_ = false, secure_ = false, closing_ = false, tls_requested_ = false;
  SmtpClient client_;
  int errors_ = 0;
  int junk_ = 0;  // NOOP, RSET, VRFY, HELP since the last message
  std::optional<std::string> mail_from_;
  std::vector<std::string> recipients_;

  // DATA in progress.
  bool in_data_ = false;
  std::string message_;
  bool bare_ = false, too_long_ = false, too_big_ = false, continuing_ = false;
  bool over_budget_ = false;
  std::size_t reserved_ = 0;  // taken from budget_ for message_

  // Replies in order; a pending chunk is an answer to DATA not yet stored, and what follows it
  // waits. Shared with the storing thread, which fills pending chunks (a deque keeps elements in
  // place as others are added, and a pending chunk is never removed).
  struct Chunk {
    std::string text;
    bool pending = false;
  };
  struct Replies {
    std::mutex mutex;
    std::deque<Chunk> chunks;
    int pending = 0;
    std::size_t queued = 0;      // bytes in chunks
    std::function<void()> wake;  // cleared when the session ends
  };
  std::shared_ptr<Replies> replies_;
};

}  // namespace svc::plugins::email
