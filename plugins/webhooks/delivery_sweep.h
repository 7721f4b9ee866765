// Keeps the delivery log bounded.
//
// Delivered and failed deliveries are deleted once older than the event log keeps events
// (events.retention_days): the log answers "what happened to this event", and the event itself
// is gone by then. A webhook whose receiver falls behind by more than kMaxPending pending
// deliveries is disabled, with a `webhook.disabled` event saying why: its deliveries are kept (a
// replayable record, delivered in order once it is enabled again) and the fan-out stops adding
// to them. Failing the oldest instead would drop events silently while the webhook looks healthy.
#pragma once

#include "webhook_store.h"

#include <svc/sdk/storage.h>

#include <cstddef>
#include <cstdint>

namespace svc::plugins::webhooks {

class DeliverySweep {
 public:
  static constexpr long kMaxPending = 10000;

  DeliverySweep(sdk::Database& db, WebhookStore& store, std::int64_t retention_us)
      : db_(db), store_(store), retention_us_(retention_us) {}
  /// Deletes finished deliveries past the retention. @return how many.
  std::size_t prune(std::int64_t now_us);
  /// Disables the webhooks with more than kMaxPending pending deliveries. @return how many.
  std::size_t capPending(std::int64_t now_us);

 private:
  sdk::Database& db_;
  WebhookStore& store_;
  const std::int64_t retention_us_;
};

}  // namespace svc::plugins::webhooks
