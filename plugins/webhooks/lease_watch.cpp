#include "lease_watch.h"

namespace svc::plugins::webhooks {

std::vector<LeaseWatch::Held> LeaseWatch::observe(const std::vector<Held>& held,
                                                  Clock::time_point now) {
  std::vector<Held> lapsed;
  std::map<std::string, Seen> next;
  std::lock_guard lock(mutex_);
  for (const auto& h : held) {
    Seen s{h.owner, h.beat, now};
    if (const auto it = seen_.find(h.key);
        it != seen_.end() && it->second.owner == h.owner && it->second.beat == h.beat) {
      s.since = it->second.since;
    }
    if (now - s.since > patience_) lapsed.push_back(h);
    next.emplace(h.key, std::move(s));
  }
  seen_ = std::move(next);
  return lapsed;
}

}  // namespace svc::plugins::webhooks
