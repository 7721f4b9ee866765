// Which questions the DNS resolver lets go to the network, by zone, so that one attacker's zone
// cannot take the checks of everyone else's mail down with it:
//
// - A zone that left a question unanswered (the query ran out of time) is paused: for `pause`
//   its further questions fail at once (temperror) instead of each waiting out the time again.
//   Other zones are still asked. When several distinct zones in a row go unanswered, with no
//   answer from the server between, the server itself is asked a question any server answers
//   (an attacker can make its zones silent, and ask for them at once, but not the server); only
//   when that goes unanswered too is the server presumed down, and then every question fails at
//   once for `pause` (an outage costs each message nothing, not seconds).
// - At most `max_in_flight` questions to one zone wait on the network at once: while they wait,
//   a further question to that zone waits at most `slot_wait` for a turn and then fails. A slow
//   zone (or wildcard names under one, each distinct) therefore holds at most that many of the
//   checking threads, however many messages name it.
//
// A zone is a name's organizational domain (the public suffix list's answer: the part one
// registrant controls, wildcards and all); for reverse names, the network a PTR zone is usually
// delegated for: the /24 of in-addr.arpa, the /48 of ip6.arpa.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace svc::plugins::email {

/// @return the zone of a DNS name (lower case, without a trailing dot); see above.
std::string dnsZone(const std::string& name);

class ZoneGuard {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::chrono::milliseconds pause{5000};
    std::size_t server_down_zones = 3;  ///< Distinct unanswered zones in a row: server down.
    std::size_t max_paused_zones = 1000;
    std::size_t max_in_flight = 2;
    std::chrono::milliseconds slot_wait{200};
  };
  enum class Turn { kGo, kPaused, kBusy };
  enum class Outcome { kAnswered, kUnanswered, kNotAsked };

  ZoneGuard(Options options, std::function<Clock::time_point()> now);

  /// Asks for a turn to send a question to zone, waiting at most min(slot_wait, max_wait) for
  /// one. @return kGo: send it, then call end(); kPaused (the zone or the server did not answer
  /// a moment ago) or kBusy (its questions in flight are at the limit): fail it now.
  Turn begin(const std::string& zone, std::chrono::milliseconds max_wait);
  /// The question begin() let go has ended with outcome. @return true when the caller is to
  /// ask the server a question any server answers (the root's NS) and report it to probed():
  /// several distinct zones went unanswered in a row, with no answer between.
  bool end(const std::string& zone, Outcome outcome);
  /// @param answered whether the server answered the probe at all (an error is an answer).
  /// Unanswered: the server is presumed down, and every question fails at once for `pause`.
  void probed(bool answered);

  std::size_t pausedZones() const;

 private:
  bool paused(const std::string& zone, Clock::time_point now);     // mutex_ held
  void pauseZone(const std::string& zone, Clock::time_point now);  // mutex_ held

  const Options options_;
  std::function<Clock::time_point()> now_;
  mutable std::mutex mutex_;
  std::condition_variable turn_;
  std::unordered_map<std::string, std::size_t> in_flight_;
  std::unordered_map<std::string, Clock::time_point> paused_until_;
  // Zones unanswered since the server last answered anything, with when.
  std::vector<std::pair<std::string, Clock::time_point>> silent_;
  Clock::time_point server_paused_until_{};
  bool probing_ = false;
};

}  // namespace svc::plugins::email
