// The DNS resolver's cache: answers kept until their TTL runs out, bounded both by entries and by
// bytes. A bound by entries alone is not a bound on memory: 20,000 TXT answers of 16 KiB each
// (DKIM keys, long SPF records, or an attacker's names made to be large) would be over 300 MiB.
// When either bound is passed the least recently used answers go first; an answer larger than the
// whole byte bound is not kept at all.
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
  };
  using Lru = std::list<Entry>;  // most recently used first
  void erase(Lru::iterator it);  // mutex_ held

  const std::size_t max_entries_, max_bytes_;
  mutable std::mutex mutex_;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> index_;
  std::size_t bytes_ = 0;
};

}  // namespace svc::plugins::email
