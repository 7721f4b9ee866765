// The outbox sender: a background thread that takes due rows of email_outbox (claimed with a
// lease, so several svcd processes on one database never send a message twice at once), hands
// each to the configured relay over SMTP (STARTTLS, AUTH PLAIN/LOGIN; with VERP one transaction
// per recipient, each from its own VERP address), and records the outcome:
// sent, retried later with backoff on a temporary failure (only the recipients it was for),
// bounced for the recipients the relay refused for good (a 5xx) and, at the last attempt, for
// those still deferred (4.4.7), with its answer recorded as the reason; or failed when the relay
// refused the sender at MAIL (its configuration, not the recipients) or was never reached
// (relay_client.h holds the SMTP transaction). Every outcome ends or reschedules the outbox row.
// Between one message's transactions, the recipients already answered for leave its row (and the
// lease is renewed), so a crash, or an attempt that outlasts its lease, never sends a recipient
// the message twice; an outcome is recorded only while the lease is still this process's.
#pragma once

#include "bounces/bounce_store.h"
#include "mail_store.h"

#include <Poco/Logger.h>
#include <Poco/Types.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace svc::plugins::email {

struct RelayResult;

/// The relay's settings: the email.relay.* keys (EmailConfig::read; their defaults live only in
/// the declarations) and two fixed limits.
struct RelayConfig {
  std::string host;  ///< Empty: no relay; mail for other servers cannot be sent.
  int port = 0;
  std::string username, password;
  bool starttls = false;
  std::string tls_ca_file;  ///< CA certificates to trust besides the system's (PEM).
  std::string helo;         ///< The SMTP hostname.
  int max_attempts = 8;
  /// The envelope sender is a VERP address (bounces+token@domain), one per recipient; false:
  /// the sender itself, for relays that require the logged-in mailbox (Exchange, Office 365).
  bool verp = true;
  int timeout_seconds = 60;
};

class Relay {
 public:
  Relay(RelayConfig config, MailStore& store, BounceStore& bounces, Poco::Logger& logger);
  ~Relay();
  bool configured() const { return !config_.host.empty(); }
  void start();
  void stop();
  /// Looks at the outbox now instead of at the next poll.
  void wake();

  /// Outcomes of delivery attempts since start, for the plugin's metrics.
  struct Outcomes {
    std::atomic<std::uint64_t> sent{0};      ///< accepted by the relay
    std::atomic<std::uint64_t> deferred{0};  ///< failed for now, retried later
    std::atomic<std::uint64_t> failed{0};    ///< some recipients still deferred, out of attempts
    std::atomic<std::uint64_t> bounced{0};   ///< some recipients refused for good (5xx)
  };
  const Outcomes& outcomes() const { return outcomes_; }

 private:
  /// How long a claimed message is this process's (renewed between its transactions).
  static constexpr Poco::Int64 kLeaseUs = 600LL * 1000000;

  void run();
  bool sendOne();
  bool settle(const std::string& id, const std::vector<std::string>& recipients,
              const RelayResult& so_far, Poco::Int64& lease);
  RelayConfig config_;
  MailStore& store_;
  BounceStore& bounces_;
  Poco::Logger& logger_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false, woken_ = false;
  std::thread thread_;
  Outcomes outcomes_;
};

}  // namespace svc::plugins::email
