#include "secret_cache.h"

namespace svc::plugins::secrets {

std::string SecretCache::slot(const std::string& identity, const std::string& key) {
  return identity + '\0' + key;
}

std::uint64_t SecretCache::claim() {
  std::lock_guard lock(mutex_);
  return drops_;
}

std::shared_ptr<const CachedSecret> SecretCache::find(const std::string& identity,
                                                      const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(slot(identity, key));
  if (it != entries_.end() && now_() >= it->second.until) {
    eraseLocked(it);
    it = entries_.end();
  }
  ++(it == entries_.end() ? misses_ : hits_);
  return it == entries_.end() ? nullptr : it->second.secret;
}

void SecretCache::keep(std::uint64_t claim, std::shared_ptr<const CachedSecret> secret) {
  const SecretRow& row = secret->row;
  const std::size_t bytes = sizeof(Entry) + sizeof(CachedSecret) +
                            2 * (row.identity_uuid.size() + row.key.size() + row.id.size()) +
                            secret->stored.bytes();
  if (bytes > kMaxEntryBytes || fresh_for_ <= Clock::duration::zero()) return;
  std::string where = slot(row.identity_uuid, row.key);
  const std::string id = row.id;
  std::lock_guard lock(mutex_);
  if (claim != drops_) return;
  dropLocked(id);  // an older copy, under the key it had before a rename
  if (auto old = entries_.find(where); old != entries_.end()) eraseLocked(old);
  if (bytes_ + bytes > kMaxBytes) {
    entries_.clear();
    slot_by_id_.clear();
    bytes_ = 0;
  }
  auto [it, inserted] =
      entries_.emplace(where, Entry{std::move(secret), now_() + fresh_for_, bytes});
  try {
    slot_by_id_[id] = std::move(where);
  } catch (...) {
    entries_.erase(it);
    throw;
  }
  bytes_ += bytes;
}

void SecretCache::drop(const std::string& id) {
  std::lock_guard lock(mutex_);
  ++drops_;
  dropLocked(id);
}

void SecretCache::dropLocked(const std::string& id) {
  auto s = slot_by_id_.find(id);
  if (s == slot_by_id_.end()) return;
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

std::size_t SecretCache::bytes() {
  std::lock_guard lock(mutex_);
  return bytes_;
}

void SecretCache::eraseLocked(Entries::iterator it) {
  // The id's entry, unless the secret has since been kept under another key.
  auto s = slot_by_id_.find(it->second.secret->row.id);
  if (s != slot_by_id_.end() && s->second == it->first) slot_by_id_.erase(s);
  bytes_ -= it->second.bytes;
  entries_.erase(it);
}

}  // namespace svc::plugins::secrets
