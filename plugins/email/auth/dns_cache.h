// The DNS resolver's cache: answers kept until their TTL runs out, bounded both by entries and by
// bytes. A bound by entries alone is not a bound on memory: 20,000 TXT answers of 16 KiB each
// (DKIM keys, long SPF records, or an attacker's names made to be large) would be over 300 MiB.
// When either bound is passed the least recently used answers go first; an answer larger than the
// whole byte bound is not kept at all.
//
// Segmented (SLRU, as in Caffeine's and memcached's caches): a new answer starts "cold" and is
// evicted first; one used again becomes "hot", and hot answers take at most four fifths of each
// bound. So a flood of names asked once (an attacker's mail from ever new domains, with large
// records) churns the cold answers only, and the senders' answers in use stay cached.
#pragma once

#include "auth/dns_answer.h"

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace svc::plugins::email {

class DnsCache {
 public:
  using Clock = std::chrono::steady_clock;

  DnsCache(std::size_t max_entries, std::size_t max_bytes);

  /// @return the answer kept for key, unless it expired by now (then it is dropped).
  std::optional<DnsAnswer> find(const std::string& key, Clock::time_point now);
  /// Keeps answer for key until expires, evicting the least recently used to stay in bounds.
  void put(const std::string& key, const DnsAnswer& answer, Clock::time_point expires);

  std::size_t size() const;
  std::size_t bytes() const;
  /// @return what an entry counts against the byte bound: its name and its records' bytes (the
  /// fixed cost of an entry is what the entry bound limits).
  static std::size_t cost(const std::string& key, const DnsAnswer& answer);

 private:
  struct Entry {
    std::string key;
    DnsAnswer answer;
    Clock::time_point expires;
    std::size_t bytes;
    bool hot = false;  // used again since it was kept: in hot_
  };
  using Lru = std::list<Entry>;  // most recently used first
  // mutex_ held for these:
  void erase(Lru::iterator it);
  /// Moves the least recently used hot answers to the cold ones while hot ones pass their share.
  void coolDown();

  const std::size_t max_entries_, max_bytes_;
  mutable std::mutex mutex_;
  Lru cold_, hot_;  // an iterator stays valid when its entry is spliced to the other list
  std::unordered_map<std::string, Lru::iterator> index_;
  std::size_t bytes_ = 0, hot_bytes_ = 0;
};

}  // namespace svc::plugins::email
