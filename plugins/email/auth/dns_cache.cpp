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
  Entry& e = *it->second;
  // Now the most recently used of the hot: used again, a cold one becomes hot.
  hot_.splice(hot_.begin(), e.hot ? hot_ : cold_, it->second);
  if (!e.hot) {
    e.hot = true;
    hot_bytes_ += e.bytes;
    coolDown();
  }
  return e.answer;
}

void DnsCache::coolDown() {
  while (!hot_.empty() && (hot_.size() > max_entries_ * 4 / 5 || hot_bytes_ > max_bytes_ / 5 * 4)) {
    auto last = std::prev(hot_.end());
    last->hot = false;
    hot_bytes_ -= last->bytes;
    cold_.splice(cold_.begin(), hot_, last);
  }
}

void DnsCache::put(const std::string& key, const DnsAnswer& answer, Clock::time_point expires) {
  const std::size_t bytes = cost(key, answer);
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) erase(it->second);
  if (bytes > max_bytes_ || max_entries_ == 0) return;
  cold_.push_front(Entry{key, answer, expires, bytes});
  index_.emplace(key, cold_.begin());
  bytes_ += bytes;
  // The cold go first: a hot answer goes only when no cold one is left.
  while (cold_.size() + hot_.size() > max_entries_ || bytes_ > max_bytes_) {
    erase(std::prev(cold_.empty() ? hot_.end() : cold_.end()));
  }
}

void DnsCache::erase(Lru::iterator it) {
  bytes_ -= it->bytes;
  if (it->hot) hot_bytes_ -= it->bytes;
  index_.erase(it->key);
  (it->hot ? hot_ : cold_).erase(it);
}

std::size_t DnsCache::size() const {
  std::lock_guard lock(mutex_);
  return cold_.size() + hot_.size();
}

std::size_t DnsCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace svc::plugins::email
