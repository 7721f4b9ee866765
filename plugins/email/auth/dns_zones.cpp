#include "auth/dns_zones.h"

#include "auth/checks.h"

#include <Poco/String.h>

#include <algorithm>

namespace svc::plugins::email {

namespace {

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// @return name without its first labels, so that `keep` labels are left (all when fewer).
std::string lastLabels(const std::string& name, std::size_t keep) {
  std::size_t labels = std::count(name.begin(), name.end(), '.') + 1;
  std::size_t at = 0;
  for (; labels > keep; --labels) at = name.find('.', at) + 1;
  return name.substr(at);
}

}  // namespace

std::string dnsZone(const std::string& name) {
  std::string n = Poco::toLower(name);
  while (!n.empty() && n.back() == '.') n.pop_back();
  // Reverse zones are delegated by network, not by the public suffix list: a /24 (three octets,
  // in-addr, arpa) and a /48 (twelve nibbles, ip6, arpa) is what one holder usually gets.
  if (endsWith(n, ".in-addr.arpa")) return lastLabels(n, 5);
  if (endsWith(n, ".ip6.arpa")) return lastLabels(n, 14);
  if (n.empty()) return n;
  const std::string org = organizationalDomain(n);
  if (org != n) return org;
  // No rule of the list shortened the name: it is an organizational domain itself (foo.co.uk),
  // or its top-level domain is one the list does not know (.test, or one newer than the list),
  // for which the list's default rule makes the last two labels the organizational domain.
  const std::string probe = "a.b." + lastLabels(n, 1);
  return organizationalDomain(probe) == probe ? lastLabels(n, 2) : n;
}

ZoneGuard::ZoneGuard(Options options, std::function<Clock::time_point()> now)
    : options_(options), now_(std::move(now)) {}

ZoneGuard::Turn ZoneGuard::begin(const std::string& zone, std::chrono::milliseconds max_wait) {
  std::unique_lock lock(mutex_);
  const auto count = [&] {
    auto it = in_flight_.find(zone);
    return it == in_flight_.end() ? std::size_t{0} : it->second;
  };
  // Real time, not now_: a wait for a turn is a thread's time, whatever the tests' clock says.
  const auto give_up = std::chrono::steady_clock::now() + std::min(options_.slot_wait, max_wait);
  const bool turn = turn_.wait_until(
      lock, give_up, [&] { return paused(zone, now_()) || count() < options_.max_in_flight; });
  if (paused(zone, now_())) return Turn::kPaused;
  if (!turn) return Turn::kBusy;
  ++in_flight_[zone];
  return Turn::kGo;
}

bool ZoneGuard::end(const std::string& zone, Outcome outcome) {
  bool probe = false;
  {
    std::lock_guard lock(mutex_);
    if (auto it = in_flight_.find(zone); it != in_flight_.end() && --it->second == 0) {
      in_flight_.erase(it);
    }
    const Clock::time_point now = now_();
    if (outcome == Outcome::kAnswered) {
      silent_.clear();  // the server is there: whatever was silent, it was not the server
    } else if (outcome == Outcome::kUnanswered) {
      pauseZone(zone, now);
      silent_.erase(std::remove_if(silent_.begin(), silent_.end(),
                                   [&](const auto& s) {
                                     return s.first == zone || s.second + options_.pause <= now;
                                   }),
                    silent_.end());
      silent_.emplace_back(zone, now);
      // Zones silent one after the other look like a dead server, but so do an attacker's
      // zones asked at once: the caller asks the server itself before it is presumed down.
      if (silent_.size() >= options_.server_down_zones && !probing_) {
        probing_ = true;
        probe = true;
      }
    }
  }
  turn_.notify_all();  // a turn is free, or a zone is paused: waiters decide again
  return probe;
}

void ZoneGuard::probed(bool answered) {
  std::lock_guard lock(mutex_);
  probing_ = false;
  silent_.clear();
  if (!answered) server_paused_until_ = now_() + options_.pause;
}

std::size_t ZoneGuard::pausedZones() const {
  std::lock_guard lock(mutex_);
  return paused_until_.size();
}

bool ZoneGuard::paused(const std::string& zone, Clock::time_point now) {
  if (now < server_paused_until_) return true;
  auto it = paused_until_.find(zone);
  if (it == paused_until_.end()) return false;
  if (now < it->second) return true;
  paused_until_.erase(it);
  return false;
}

void ZoneGuard::pauseZone(const std::string& zone, Clock::time_point now) {
  if (paused_until_.size() >= options_.max_paused_zones && !paused_until_.count(zone)) {
    for (auto it = paused_until_.begin(); it != paused_until_.end();) {
      it = it->second <= now ? paused_until_.erase(it) : std::next(it);
    }
    if (paused_until_.size() >= options_.max_paused_zones && !paused_until_.empty()) {
      // Still full: the pause that ends soonest goes (so many silent zones at once will have
      // paused the whole server anyway, unless answers keep coming between them).
      paused_until_.erase(
          std::min_element(paused_until_.begin(), paused_until_.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; }));
    }
  }
  if (options_.max_paused_zones > 0) paused_until_[zone] = now + options_.pause;
}

}  // namespace svc::plugins::email
