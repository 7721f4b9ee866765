// One attempt with the relay: one connection, and in it one SMTP transaction per envelope (with
// VERP, each recipient has its own envelope sender), with what the relay answered for each
// recipient. A 5xx refuses for good (at the first MAIL: the message; at a later MAIL: that
// envelope's recipients; at RCPT: that one; at DATA or after the message: every recipient it had
// taken); a 4xx defers (at MAIL: this envelope and the rest). One refused recipient does not hold
// the others back: the message goes to those the relay took.
#pragma once

#include "relay.h"

#include <functional>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// What one attempt came to, per recipient.
struct RelayResult {
  struct Refused {
    std::string recipient;
    std::string answer;  ///< The command and the relay's reply, `RCPT answered 550 5.1.1 ...`.
    std::string status;  ///< The reply's RFC 3463 code (`5.1.1`; `5.0.0` when it gives none).
  };
  std::vector<std::string> delivered;  ///< Taken by the relay.
  std::vector<Refused> refused;        ///< Refused for good: they bounced.
  std::vector<std::string> deferred;   ///< Refused for now: to try again.
  std::string deferred_answer;         ///< Why they were deferred.
  /// Set when the relay refused the sender for good at MAIL (a configuration problem: 530
  /// authentication required, 5.7.60 send-as denied): the message failed, no recipient bounced.
  std::string message_error;
  /// The relay deferred the sender at MAIL (a 4xx): every recipient is deferred, unanswered.
  bool deferred_at_mail = false;
};

/// The longest reply kept (a bounce's reason, the outbox's last error).
constexpr std::size_t kMaxReplyBytes = 1000;
/// @param reply a relay's reply, any bytes. @return it on one line of valid UTF-8 of at most
/// kMaxReplyBytes bytes.
std::string replyLine(std::string reply);

/// Sends raw through the relay, one transaction per envelope. @return each recipient's outcome;
/// when the connection fails after the relay answered for some, the unanswered are deferred.
/// @throws std::exception (Poco's included) when the attempt failed as a whole before the relay
/// answered for any recipient (no connection, TLS, authentication): try again later.
/// @param progress called after each transaction but the last, with the result so far, so the
/// caller can keep what is settled; when it returns false, the envelopes after are deferred
/// (the caller may no longer send: its lease on the message ran out).
RelayResult relayMessage(const RelayConfig& config, const std::vector<Envelope>& envelopes,
                         const std::string& raw,
                         const std::function<bool(const RelayResult&)>& progress = {});

}  // namespace svc::plugins::email
