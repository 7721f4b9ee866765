#include "lease_table.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Tuple.h>

#include <vector>

using namespace Poco::Data::Keywords;

namespace svc::plugins::webhooks {

namespace {

// The accounts holding their share of leases (rows with an owner, lapsed ones included until
// taken over); binds the cap.
constexpr const char* kAtCap =
    "SELECT account_id FROM webhooks WHERE lease_owner <> '' GROUP BY account_id HAVING "
    "COUNT(*) >= ?";

}  // namespace

LeaseTable::LeaseTable(sdk::Database& db, std::chrono::microseconds lease, int account_workers,
                       Now now)
    : db_(db),
      lease_(lease),
      account_workers_(account_workers),
      now_(std::move(now)),
      watch_(takeoverAfter()) {}

std::optional<Lease> LeaseTable::takeOne() {
  const std::int64_t now_us = sdk::nowMicros();  // what is due: wall clock, never the lease
  if (auto l = takeLapsed(now_us)) return l;
  return takeFree(now_us);
}

std::optional<Lease> LeaseTable::takeLapsed(std::int64_t) {
  std::vector<Poco::Tuple<std::string, std::string, Poco::Int64>> rows;
  {
    // Every held lease (few: at most the workers of every svcd, and those of dead ones), so
    // that the watch counts from the first look whether or not anything is due yet.
    Poco::Data::Session s = db_.session();
    s << "SELECT id, lease_owner, lease_beat FROM webhooks WHERE lease_owner <> ''", into(rows),
        now;
  }
  std::vector<LeaseWatch::Held> held;
  held.reserve(rows.size());
  for (const auto& r : rows) held.push_back({r.get<0>(), r.get<1>(), r.get<2>()});
  for (const auto& h : watch_.observe(held, now_())) {
    Lease l{h.key, sdk::newUuid(), now_() + lease_};
    std::size_t taken = 0;
    db_.transaction([&](Poco::Data::Session& tx) {
      std::string token = l.token, id = l.webhook, was = h.owner;
      Poco::Int64 beat = h.beat;
      Poco::Data::Statement q =
          (tx << "UPDATE webhooks SET lease_owner = ?, lease_beat = lease_beat + 1 WHERE id = ? "
                 "AND lease_owner = ? AND lease_beat = ?",
           use(token), use(id), use(was), use(beat));
      taken = q.execute();
    });
    if (taken == 1) return l;
  }
  return std::nullopt;
}

std::optional<Lease> LeaseTable::takeFree(std::int64_t now_us) {
  std::vector<Poco::Tuple<std::string, Poco::Int64>> candidates;
  {
    // Of the account holding the fewest leases now first (one account's hanging receivers do
    // not keep the next free worker from another account), then the webhook served longest ago
    // (lease_until_us: when it was last released), then the one due longest: one given up for
    // its fair share does not come straight back ahead of the webhooks that waited for a
    // worker. Never of an account holding its share already.
    Poco::Data::Session s = db_.session();
    Poco::Int64 a = now_us, b = now_us;
    int cap = account_workers_;
    s << "SELECT d.webhook_id, MIN(d.next_attempt_us) AS due FROM webhook_deliveries d JOIN "
         "webhooks w ON w.id = d.webhook_id LEFT JOIN (SELECT account_id, COUNT(*) AS held FROM "
         "webhooks WHERE lease_owner <> '' GROUP BY account_id) h ON h.account_id = "
         "w.account_id WHERE d.state = 'pending' AND d.next_attempt_us <= ? AND w.enabled = 1 "
         "AND w.retry_at_us <= ? AND w.lease_owner = '' AND COALESCE(h.held, 0) < ? GROUP BY "
         "d.webhook_id, w.lease_until_us, h.held ORDER BY COALESCE(h.held, 0), "
         "w.lease_until_us, due LIMIT 16",
        use(a), use(b), use(cap), into(candidates), now;
  }
  for (const auto& candidate : candidates) {
    // The deadline counts from before the take: never later than the holder's real one.
    Lease l{candidate.get<0>(), sdk::newUuid(), now_() + lease_};
    std::size_t taken = 0;
    db_.transaction([&](Poco::Data::Session& tx) {
      std::string token = l.token, id = l.webhook;
      Poco::Data::Statement q =
          (tx << "UPDATE webhooks SET lease_owner = ?, lease_beat = lease_beat + 1 WHERE id = ? "
                 "AND lease_owner = '' AND enabled = 1",
           use(token), use(id));
      taken = q.execute();
    });
    if (taken == 1) return l;
  }
  return std::nullopt;
}

bool LeaseTable::renewIn(Poco::Data::Session& tx, const Lease& lease) {
  std::string id = lease.webhook, owner = lease.token;
  Poco::Data::Statement q =
      (tx << "UPDATE webhooks SET lease_beat = lease_beat + 1 WHERE id = ? AND lease_owner = ?",
       use(id), use(owner));
  return q.execute() == 1;
}

void LeaseTable::extend(Lease& lease, Clock::time_point renewal_started) const {
  lease.deadline = std::max(lease.deadline, renewal_started + lease_);
}

bool LeaseTable::renew(Lease& lease) {
  const Clock::time_point started = now_();
  bool kept = false;
  db_.transaction([&](Poco::Data::Session& tx) { kept = renewIn(tx, lease); });
  if (kept) extend(lease, started);
  return kept;
}

void LeaseTable::release(const Lease& lease) {
  db_.transaction([&](Poco::Data::Session& tx) {
    std::string id = lease.webhook, owner = lease.token;
    Poco::Int64 at = sdk::nowMicros();  // served now (takeFree's order)
    tx << "UPDATE webhooks SET lease_owner = '', lease_beat = lease_beat + 1, lease_until_us = ? "
          "WHERE id = ? AND lease_owner = ?",
        use(at), use(id), use(owner), now;
  });
}

bool LeaseTable::othersDue(const std::string& webhook) {
  Poco::Data::Session s = db_.session();
  const Poco::Int64 now_us = sdk::nowMicros();
  Poco::Int64 a = now_us, b = now_us;
  std::string id = webhook;
  int cap = account_workers_;
  std::vector<std::string> due;
  s << std::string(
           "SELECT d.webhook_id FROM webhook_deliveries d JOIN webhooks w ON w.id = "
           "d.webhook_id WHERE d.state = 'pending' AND d.next_attempt_us <= ? AND "
           "w.enabled = 1 AND w.retry_at_us <= ? AND w.lease_owner = '' AND w.account_id NOT "
           "IN (") +
           kAtCap + ") AND w.id <> ? LIMIT 1",
      use(a), use(b), use(cap), use(id), into(due), now;
  return !due.empty();
}

}  // namespace svc::plugins::webhooks
