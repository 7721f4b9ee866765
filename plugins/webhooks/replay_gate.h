// Whether a delivery may be replayed now, and when the replayed delivery is due.
//
// A replay makes a delivery pending again. Unchecked it also made it due at once, so whoever held
// a webhook's key could cancel the backoff of a receiver that hangs, again and again, and keep
// delivery workers on it (7,380 replays in one run). Two rules now:
//   - Backoff stands: while the webhook backs off (a pending delivery failed and waits for its
//     retry), replaying a pending delivery is 429 `throttled` with the seconds until that retry,
//     and a delivered or failed one is made pending and due with that retry (it goes first, in
//     event order), never sooner.
//   - At most `per_minute` replays of a webhook's deliveries in any minute, else 429 `throttled`.
//     A sliding window over the replays recorded in webhook_replays (rows, not memory: every
//     svcd on the database counts the same ones).
// Both answers carry `retry_after_seconds` and `Retry-After`, as the API contract says.
#pragma once

#include "webhook_store.h"

#include <svc/sdk/http.h>

#include <Poco/Data/Session.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::webhooks {

/// @param backoff_until_us when the webhook's backing-off delivery is next tried (0: none).
/// @param pending whether the delivery replayed is pending. @param recent the webhook's replays
/// within the last minute, newest first (at most per_minute). @param per_minute the limit
/// (0: none). @param now_us now. @return the 429 to answer, or nullopt when it may be replayed.
std::optional<sdk::HttpError> replayRefusal(std::int64_t backoff_until_us, bool pending,
                                            const std::vector<std::int64_t>& recent, int per_minute,
                                            std::int64_t now_us);

class ReplayGate {
 public:
  /// @param per_minute replays of one webhook's deliveries a minute (0: unlimited).
  explicit ReplayGate(int per_minute) : per_minute_(per_minute) {}

  /// Checks a replay of delivery d of webhook and records it (in the caller's transaction).
  /// @return when the replayed delivery is due. @throws sdk::HttpError 429 `throttled`.
  std::int64_t admit(Poco::Data::Session& tx, const std::string& webhook, const DeliveryRow& d,
                     std::int64_t now_us);

 private:
  const int per_minute_;
};

}  // namespace svc::plugins::webhooks
