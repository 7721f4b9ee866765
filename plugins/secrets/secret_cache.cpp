#include "secret_cache.h"

namespace svc::plugins::secrets {

std::string SecretCache::slot(const std::string& identity, const std::string& key) {
  return identity + '\0' + key;
}

std::uint64_t SecretCache::ticket() {
  std::lock_guard lock(mutex_);
  return drops_;
}

std::shared_ptr<const CachedSecret> SecretCache::find(const std::string& identity,
                                                      const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(slot(identity, key));
  if (it == entries_.end()) return nullptr;
  if (Clock::now() >= it->second.until) {
    eraseLocked(it);
    return nullptr;
  }
  return it->second.secret;
}

void SecretCache::keep(std::uint64_t ticket, std::shared_ptr<const CachedSecret> secret) {
  const SecretRow& row = secret->row;
  const std::size_t bytes = sizeof(Entry) + sizeof(CachedSecret) +
                            2 * (row.identity_uuid.size() + row.key.size() + row.id.size()) +
                            secret->stored.bytes();
  if (bytes > kMaxEntryBytes || fresh_for_ <= Clock::duration::zero()) return;
  std::string where = slot(row.identity_uuid, row.key);
  std::string id = row.id;
  std::lock_guard lock(mutex_);
  if (ticket != drops_) return;
  if (auto old = entries_.find(where); old != entries_.end()) eraseLocked(old);
  if (bytes_ + bytes > kMaxBytes) {
    entries_.clear();
    slots_.clear();
    bytes_ = 0;
  }
  entries_[where] = Entry{std::move(secret), Clock::now() + fresh_for_, bytes};
  slots_[id] = std::move(where);
  bytes_ += bytes;
}

void SecretCache::drop(const std::string& id) {
  std::lock_guard lock(mutex_);
  ++drops_;
  auto s = slots_.find(id);
  if (s == slots_.end()) return;
  auto it = entries_.find(s->second);
  if (it != entries_.end()) eraseLocked(it);
}

void SecretCache::follow(const sdk::Event& event) {
  if (event.type.rfind("secret.", 0) == 0 && event.object) {
    drop(event.object->optValue<std::string>("uuid", ""));
  }
}

std::size_t SecretCache::size() {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void SecretCache::eraseLocked(std::unordered_map<std::string, Entry>::iterator it) {
  slots_.erase(it->second.secret->row.id);
  bytes_ -= it->second.bytes;
  entries_.erase(it);
}

}  // namespace svc::plugins::secrets
