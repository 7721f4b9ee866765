#include "auth/dns_cache.h"

namespace svc::plugins::email {

DnsCache::DnsCache(std::size_t max_entries, std::size_t max_bytes)
    : max_entries_(max_entries), max_bytes_(max_bytes) {}

std::size_t DnsCache::cost(const std::string& key, const DnsAnswer& answer) {
  // What the entry holds in memory, not only its text: an answer of a thousand empty strings
  // costs a thousand strings (and its list and map nodes).
  constexpr std::size_t kNode = 4 * sizeof(void*);
  std::size_t n = sizeof(DnsAnswer) + 2 * (sizeof(std::string) + kNode) + 2 * key.size();
  for (const auto& r : answer.records) n += sizeof(std::string) + r.size();
  return n;
}

std::optional<DnsAnswer> DnsCache::find(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  if (it->second->expires <= now) {
    erase(it->second);
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second);  // now the most recently used
  return it->second->answer;
}

void DnsCache::put(const std::string& key, const DnsAnswer& answer, Clock::time_point expires) {
  const std::size_t bytes = cost(key, answer);
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) erase(it->second);
  if (bytes > max_bytes_ || max_entries_ == 0) return;
  lru_.push_front(Entry{key, answer, expires, bytes});
  index_.emplace(key, lru_.begin());
  bytes_ += bytes;
  while (lru_.size() > max_entries_ || bytes_ > max_bytes_) erase(std::prev(lru_.end()));
}

void DnsCache::erase(Lru::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->key);
  lru_.erase(it);
}

std::size_t DnsCache::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

std::size_t DnsCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace svc::plugins::email
