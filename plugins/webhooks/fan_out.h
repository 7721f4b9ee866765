// The fan-out: turns events from the durable log into deliveries, once, whichever svcd does it.
//
// The cursor (webhook_cursor) is the last event sequence turned into deliveries. One round reads
// the events after it (sdk::EventBus::read), and in one transaction moves the cursor from the
// value it read to the last event's (compare-and-set: a second svcd that read the same value
// finds it moved, rolls back and tries again from the new one) and inserts a delivery for every
// enabled webhook each event matches (unique per webhook and event). An event committed just
// before a crash is still after the cursor at the next start: nothing is lost, nothing is made
// twice. While no webhook is enabled no event is read: the cursor jumps to the newest event now and
// then, so a new install starts at the present, not at the start of the log.
#pragma once

#include "webhook_store.h"

#include <svc/sdk/events.h>
#include <svc/sdk/storage.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace svc::plugins::webhooks {

/// @return whether a webhook wants an event: its account, its identity when it has one, one of
/// its types when it names any, and committed after the webhook was made.
bool matches(const WebhookRow& webhook, const sdk::Event& event);
/// @return the body a delivery of the event carries: the event stream's envelope, `{id, type,
/// created_dt, account, identity, object}`, members in that order.
std::string payloadOf(const sdk::Event& event);

class FanOut {
 public:
  FanOut(sdk::Database& db, sdk::EventBus& events, WebhookStore& store)
      : db_(db), events_(events), store_(store) {}
  /// One round. @return the deliveries it made (0: nothing new, or another svcd moved the cursor
  /// first). @throws what the database throws.
  std::size_t runOnce();
  /// @return whether the last round read a full batch (more may wait).
  bool more() const { return more_; }

 private:
  sdk::Database& db_;
  sdk::EventBus& events_;
  WebhookStore& store_;
  bool more_ = false;
  bool had_hooks_ = true;  // at the last look; true at first, so the first round reads all
  std::chrono::steady_clock::time_point idle_advanced_{};
};

}  // namespace svc::plugins::webhooks
