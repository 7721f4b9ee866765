#include "replay_gate.h"

#include <svc/sdk/rate_limit.h>

#include <Poco/Data/Statement.h>

#include <algorithm>

using namespace Poco::Data::Keywords;

namespace svc::plugins::webhooks {

namespace {

constexpr int kWindowSeconds = 60;

int secondsUntil(std::int64_t at_us, std::int64_t now_us) {
  return static_cast<int>(std::max<std::int64_t>(1, (at_us - now_us + 999999) / 1000000));
}

}  // namespace

std::optional<sdk::HttpError> replayRefusal(std::int64_t backoff_until_us, bool pending,
                                            const std::vector<std::int64_t>& recent, int per_minute,
                                            std::int64_t now_us) {
  if (pending && backoff_until_us > now_us) {
    const int wait = secondsUntil(backoff_until_us, now_us);
    sdk::HttpError e(429, "throttled",
                     "The webhook is backing off after failed attempts: its next attempt is in " +
                         std::to_string(wait) +
                         " seconds, and a replay does not bring it sooner. Retry after it.");
    e.extra("retry_after_seconds", wait);
    e.header("Retry-After", std::to_string(wait));
    return e;
  }
  if (auto wait = sdk::windowWait(recent, per_minute, kWindowSeconds, now_us)) {
    return sdk::RateLimiter::throttled(*wait, "replays of this webhook's deliveries (it may have " +
                                                  std::to_string(per_minute) + " a minute)");
  }
  return std::nullopt;
}

std::int64_t ReplayGate::admit(Poco::Data::Session& tx, const std::string& webhook,
                               const DeliveryRow& d, std::int64_t now_us) {
  std::string id = webhook;
  // The webhook backs off while a delivery that failed waits for its retry (the oldest pending
  // one is tried first; the latest retry of any of them is when the webhook is tried again).
  Poco::Int64 backoff = 0;
  tx << "SELECT COALESCE(MAX(next_attempt_us), 0) FROM webhook_deliveries WHERE webhook_id = ? "
        "AND state = 'pending' AND attempts > 0",
      use(id), into(backoff), now;
  Poco::Int64 since = now_us - kWindowSeconds * 1000000LL;
  tx << "DELETE FROM webhook_replays WHERE webhook_id = ? AND at_us <= ?", use(id), use(since), now;
  std::vector<Poco::Int64> times;
  if (per_minute_ > 0) {
    int limit = per_minute_;
    tx << "SELECT at_us FROM webhook_replays WHERE webhook_id = ? AND at_us > ? ORDER BY at_us "
          "DESC LIMIT ?",
        use(id), use(since), use(limit), into(times), now;
  }
  const std::vector<std::int64_t> recent(times.begin(), times.end());
  if (auto refusal = replayRefusal(backoff, d.state == "pending", recent, per_minute_, now_us)) {
    throw *refusal;
  }
  Poco::Int64 at = now_us;
  tx << "INSERT INTO webhook_replays (webhook_id, at_us) VALUES (?, ?)", use(id), use(at), now;
  return std::max<std::int64_t>(now_us, backoff);
}

}  // namespace svc::plugins::webhooks
