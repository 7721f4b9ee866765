// The delivery lease: which one worker of which svcd sends a webhook's deliveries now, held in
// the webhook's row without any svcd comparing its clock with another's.
//
// A lease is `lease_owner` (a token fresh for every lease) and `lease_beat` (a counter). Rules:
// - Taking a free lease (owner ''): a compare-and-set on owner = '' that sets the token and bumps
//   the beat. A released lease is free at once.
// - Renewing: the holder bumps the beat where owner = its token (0 rows: the lease is lost).
// - The holder's deadline is its own steady clock at the start of its last successful take or
//   renewal plus the lease duration; it starts no attempt that could end after it (an attempt is
//   cut at webhooks.timeout_seconds). A holder that cannot renew (paused, cut off from the
//   database) stops sending by its deadline.
// - Taking a lapsed lease: a taker that has seen the same (owner, beat) for longer than the lease
//   duration plus margin() by its own steady clock (LeaseWatch) takes it with a compare-and-set on
//   (owner, beat). The beat it saw was written after the holder started that renewal, so the
//   holder's deadline passed at least margin() before the taker's first attempt.
// - Released: owner '' and the beat bumped; `lease_until_us` then holds the wall-clock time of the
//   release, used only to serve the least recently served webhook first (never to decide who
//   holds a lease).
// Fairness: an account holds at most `account_workers` leases (rows with an owner, counted over
// every svcd); free webhooks are offered the account holding the fewest first, then the least
// recently served, then the one due longest. A lapsed lease is taken over whatever the cap: it
// counts as held until then, and the takeover adds none.
#pragma once

#include "lease_watch.h"

#include <svc/sdk/storage.h>

#include <Poco/Data/Session.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace svc::plugins::webhooks {

struct Lease {
  using Clock = std::chrono::steady_clock;
  std::string webhook, token;
  Clock::time_point deadline;  ///< This process's steady clock: no attempt may end after it.
};

class LeaseTable {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  /// @param now this process's steady clock (tests give a simulated one).
  LeaseTable(
      sdk::Database& db, std::chrono::microseconds lease, int account_workers,
      Now now = [] { return Clock::now(); });

  /// What a taker waits beyond the lease duration: steady clocks that run at slightly different
  /// rates (NTP slews them by up to 500 ppm), and the time between a holder's deadline check and
  /// the start of its attempt. Two seconds, plus 1 % of the lease.
  static Clock::duration margin(std::chrono::microseconds lease) {
    return std::chrono::seconds(2) + lease / 100;
  }
  /// How long a taker must see one (owner, beat) before it takes the lease.
  Clock::duration takeoverAfter() const { return lease_ + margin(lease_); }
  Clock::time_point clock() const { return now_(); }

  /// Takes a webhook with due deliveries: a lapsed lease first, else a free one in the fairness
  /// order. @return the lease, or nullopt when none may be taken now.
  std::optional<Lease> takeOne();
  /// Bumps the beat. @return false when the lease is no longer this one (then it stays lost).
  bool renew(Lease& lease);
  /// The renewal as part of the caller's transaction (which may run more than once). The caller
  /// takes clock() before the transaction and, once it commits true, extends the deadline with
  /// extend(). @return whether the lease is still this one.
  static bool renewIn(Poco::Data::Session& tx, const Lease& lease);
  void extend(Lease& lease, Clock::time_point renewal_started) const;
  /// Frees the lease (if still this one).
  void release(const Lease& lease);
  /// @return whether another webhook than this has due deliveries, no lease, and an account under
  /// its cap.
  bool othersDue(const std::string& webhook);

 private:
  std::optional<Lease> takeLapsed(std::int64_t now_us);
  std::optional<Lease> takeFree(std::int64_t now_us);

  sdk::Database& db_;
  const std::chrono::microseconds lease_;
  const int account_workers_;
  const Now now_;
  LeaseWatch watch_;
};

}  // namespace svc::plugins::webhooks
