// Checks inbound mail (SPF, DKIM, DMARC) on threads of its own: a check may wait on DNS, and the
// SMTP listener's threads must never wait. A session's message is handed over at the end of DATA
// and its answer comes from here (through Ingest), after the verdict: 550 for a DMARC failure
// under p=reject when enforcing, else the message is spooled with its verdict, or with the checks
// that could not change the answer left for filing (complete()) and the DNS answers they need.
//
// Bounded: each message's DNS time is at most Options::dns_budget (then temperror), and at most
// Options::max_queued messages, Options::max_queued_bytes of them, wait for a thread (beyond:
// 451, try later): the listener's memory budget let go of them at the end of DATA. Shared fairly:
// at most Options::per_client threads check one client's messages at once (a client is an
// address, an IPv6 /64 counting as one, as the listeners count connections), and the clients
// waiting take turns, so a sender whose mail names slow DNS zones holds two threads, not all.
#pragma once

#include "auth/authentication.h"
#include "auth/deferred_checks.h"
#include "auth/dns_resolver.h"
#include "smtp_server.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace svc::plugins::email {

class Authenticator {
 public:
  struct Options {
    bool verify = true;    ///< email.inbound.verify: false gives every message verdict none.
    bool enforce = true;   ///< email.inbound.dmarc_enforce.
    std::string hostname;  ///< Names this server in Authentication-Results.
    int threads = 8;
    int per_client = 2;  ///< Threads one client's messages may hold at once.
    std::size_t max_queued = 1000;
    std::size_t max_queued_bytes = 256u << 20;
    std::chrono::milliseconds dns_budget{8000};
  };
  /// What to do with a checked message.
  struct Decision {
    Authentication authentication;
    PolicyAction action = PolicyAction::kAccept;  ///< kAccept unless enforcing
    std::string refusal;                          ///< kReject: the whole reply (`550 5.7.1 ...`).
    /// Set when DKIM and DMARC were left for complete(): nothing they could say would change
    /// the answer (no DMARC policy that may reject, SPF passed for the From's own domain, or not
    /// enforcing). authentication then holds the SPF outcome alone, and action is kAccept.
    std::optional<DeferredChecks> later;
  };

  Authenticator(Options options, DnsResolver& dns);
  ~Authenticator();
  void start();
  void stop();

  /// Checks a message on the calling thread. @param data the message as received (CRLF).
  /// @param may_defer DKIM and DMARC may be left for complete() when they cannot change the
  /// answer: the costly part of a check (the body's hash, RSA) then waits for the lull in which
  /// the message is filed, as filing does, and the client has its answer sooner.
  Decision check(const SmtpClient& client, const std::string& mail_from, std::string_view data,
                 bool may_defer = false);
  /// Checks a message on the calling thread without waiting on the network: every DNS answer
  /// from the cache (as it is for a sender heard from within its records' TTL), or none at all
  /// when checks are off. @return nullopt when an answer was not cached: check() it on one of
  /// the threads instead (post()).
  std::optional<Decision> checkCached(const SmtpClient& client, const std::string& mail_from,
                                      std::string_view data, bool may_defer = false);
  /// Finishes a deferred check as check() would have finished it when the message arrived: from
  /// the DNS answers it had then, asking no server. @param later the deferred Decision's.
  /// @return the whole decision; a failure check() would have refused (not one it can find from
  /// those answers, short of a bug) is quarantined, the message being acknowledged already.
  Decision complete(const DeferredChecks& later, std::string_view data) const;
  /// The decision for a deferred check that could not be completed (its record unreadable, or
  /// complete() threw): DKIM and DMARC temperror, verdict none, and quarantined when enforcing,
  /// since what they would have said is unknown and the message is acknowledged already.
  /// @param later the deferred Decision's, when it could be read (its SPF outcome is kept).
  Decision incomplete(const DeferredChecks* later, std::string_view data) const;
  /// Runs job on one of the threads, in its client's turn. @param client the sender's address.
  /// @param bytes what the job holds (its message).
  /// @return false (job dropped) when too many wait already or the threads are stopped.
  bool post(const std::string& client, std::function<void()> job, std::size_t bytes = 0);
  /// @return the key a client's share is counted under: its address, or its IPv6 /64.
  static std::string clientKey(const std::string& ip);

 private:
  struct Job {
    std::function<void()> run;
    std::size_t bytes = 0;
  };
  void run();
  /// @return d with its verdict, header, action and refusal drawn from its outcomes.
  Decision& decided(Decision& d) const;
  static bool dmarcPassesBySpf(const std::string& from_domain, const SpfOutcome& spf);
  /// @return the client whose job goes next (mutex_ held), or nullptr when none may go now.
  std::deque<Job>* nextTurn(std::string& client);

  Options options_;
  DnsResolver& dns_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::deque<Job>> waiting_;  // by client key
  std::deque<std::string> turns_;                   // clients with jobs waiting, in turn order
  std::map<std::string, int> running_;              // threads working for each client
  std::size_t queued_ = 0;
  std::size_t queued_bytes_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace svc::plugins::email
