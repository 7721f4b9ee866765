// What a would-be taker has seen of the delivery leases other workers hold, on its own clock.
//
// A held lease is (owner, beat) in its webhook's row; its holder bumps the beat whenever it
// renews. No svcd compares its clock with another's: a taker remembers when it first saw each
// (owner, beat), by its own steady clock, and a lease is lapsed only once the same pair has stood
// still for longer than `patience` of that clock (as the event log's sequencer and the migration
// lock do in the kernel). A changed owner or beat starts the count again.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace svc::plugins::webhooks {

class LeaseWatch {
 public:
  using Clock = std::chrono::steady_clock;
  struct Held {
    std::string key, owner;
    std::int64_t beat = 0;
  };

  explicit LeaseWatch(Clock::duration patience) : patience_(patience) {}

  /// Records what one look at the held leases found (every held lease: one not in `held` is
  /// forgotten, so what is remembered stays as small as what is held). Thread-safe.
  /// @return those of `held` whose (owner, beat) has not moved for longer than the patience.
  std::vector<Held> observe(const std::vector<Held>& held, Clock::time_point now);
  Clock::duration patience() const { return patience_; }

 private:
  struct Seen {
    std::string owner;
    std::int64_t beat = 0;
    Clock::time_point since;
  };
  const Clock::duration patience_;
  std::mutex mutex_;
  std::map<std::string, Seen> seen_;
};

}  // namespace svc::plugins::webhooks
