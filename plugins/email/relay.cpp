#include "relay.h"

#include "relay_client.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

#include <algorithm>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

Relay::Relay(RelayConfig config, MailStore& store, BounceStore& bounces, Poco::Logger& logger)
    : config_(std::move(config)), store_(store), bounces_(bounces), logger_(logger) {}

Relay::~Relay() {
  stop();
}

void Relay::start() {
  std::lock_guard lock(mutex_);
  stopping_ = false;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void Relay::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Relay::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  cv_.notify_all();
}

void Relay::run() {
  std::int64_t pruned_us = 0;
  for (;;) {
    bool sent_any = false;
    try {
      // Bounce tokens are honoured 30 days; older rows are deleted once an hour (and at start).
      if (sdk::nowMicros() - pruned_us >= 3600LL * 1000000) {
        pruned_us = sdk::nowMicros();
        if (const std::size_t n = bounces_.prune(pruned_us)) {
          logger_.information("outbox: pruned %z bounce tokens older than 30 days", n);
        }
      }
      while (sendOne()) {
        sent_any = true;
        std::lock_guard lock(mutex_);
        if (stopping_) return;
      }
    } catch (const std::exception& e) {
      logger_.error("outbox: %s", std::string(e.what()));
    }
    (void)sent_any;
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_ || woken_; });
    woken_ = false;
    if (stopping_) return;
  }
}

namespace {

// The relay's refusals so far, as bounces with its answer as the reason.
std::vector<Bounce> relayBounces(const RelayResult& result) {
  std::vector<Bounce> bounces;
  for (const auto& r : result.refused) {
    bounces.push_back({Poco::toLower(r.recipient), r.status, r.answer, "relay", sdk::nowMicros()});
  }
  return bounces;
}

}  // namespace

// Between one message's transactions (one per recipient with VERP): the recipients the relay has
// answered for leave the row and the refused are recorded, while this process holds the lease,
// which is renewed. So neither a crash nor a lease that runs out in a long attempt sends a
// recipient the message twice. @return false when the lease is no longer this process's (or the
// database is away): send no more.
bool Relay::settle(const std::string& id, const std::vector<std::string>& recipients,
                   const RelayResult& so_far, Poco::Int64& lease) {
  std::vector<std::string> rest;
  for (const auto& r : recipients) {
    const bool answered =
        std::find(so_far.delivered.begin(), so_far.delivered.end(), r) != so_far.delivered.end() ||
        std::any_of(so_far.refused.begin(), so_far.refused.end(),
                    [&](const RelayResult::Refused& x) { return x.recipient == r; });
    if (!answered) rest.push_back(r);
  }
  bool held = false;
  try {
    store_.db().transaction([&](Poco::Data::Session& tx) {
      Poco::Int64 mine = lease, renewed = std::max(sdk::nowMicros() + kLeaseUs, lease + 1);
      std::string left = jsonList(rest), message = id;
      Poco::Data::Statement renew =
          (tx << "UPDATE email_outbox SET next_attempt_us = ?, recipients = ? WHERE message_id "
                 "= ? AND next_attempt_us = ?",
           use(renewed), use(left), use(message), use(mine));
      held = renew.execute() == 1;
      if (!held) return;
      bounces_.record(tx, id, relayBounces(so_far));
      lease = renewed;
    });
  } catch (const std::exception& e) {
    logger_.warning("outbox: %s: keeping the attempt's progress failed (%s); the rest later", id,
                    std::string(e.what()));
    return false;
  }
  return held;
}

// Takes one due message (a lease of ten minutes makes it this process's), sends it, and records
// the outcome. @return true when there was one.
bool Relay::sendOne() {
  using Row = Poco::Tuple<std::string, std::string, std::string, int, Poco::Int64>;
  std::vector<Row> rows;
  const Poco::Int64 now_us = sdk::nowMicros();
  {
    Poco::Data::Session s = store_.db().session();
    Poco::Int64 due = now_us;
    s << "SELECT message_id, sender, recipients, attempts, next_attempt_us FROM "
         "email_outbox WHERE next_attempt_us <= ? ORDER BY next_attempt_us LIMIT 1",
        use(due), into(rows), now;
  }
  if (rows.empty()) return false;
  const Row& row = rows.front();
  std::string id = row.get<0>();
  const int attempts = row.get<3>() + 1;
  bool claimed = false;
  Poco::Int64 lease = now_us + kLeaseUs;  // next_attempt_us while this process sends it
  store_.db().transaction([&](Poco::Data::Session& tx) {
    Poco::Int64 seen = row.get<4>();
    int a = attempts;
    Poco::Data::Statement claim =
        (tx << "UPDATE email_outbox SET next_attempt_us = ?, attempts = ? WHERE message_id = ? "
               "AND next_attempt_us = ?",
         use(lease), use(a), use(id), use(seen));
    claimed = claim.execute() == 1;
  });
  if (!claimed) return true;  // another process took it; look again

  RelayResult result;
  bool whole = false;  // the attempt failed before the relay answered for the recipients
  try {
    std::string raw;
    std::vector<Envelope> envelopes;
    {
      Poco::Data::Session s = store_.db().session();
      raw = readLongText(s, store_.db().dialect(), "email_outbox", "raw", "message_id", id);
      envelopes =
          bounces_.envelopes(s, id, row.get<1>(), parseJsonList(row.get<2>()), config_.verp);
    }
    const std::vector<std::string> recipients = parseJsonList(row.get<2>());
    result = relayMessage(config_, envelopes, raw, [&](const RelayResult& so_far) {
      return settle(id, recipients, so_far, lease);
    });
    whole = result.deferred_at_mail;
  } catch (const Poco::Exception& e) {
    result.deferred = parseJsonList(row.get<2>());
    result.deferred_answer = replyLine(e.displayText());
    whole = true;
  } catch (const std::exception& e) {
    result.deferred = parseJsonList(row.get<2>());
    result.deferred_answer = replyLine(e.what());
    whole = true;
  }
  const bool retry =
      result.message_error.empty() && !result.deferred.empty() && attempts < config_.max_attempts;
  bool expired = false;  // still-deferred recipients recorded as bounces
  bool lost = false;     // the lease ran out and another process took the message over
  try {
    store_.db().transaction([&](Poco::Data::Session& tx) {
      // Still this process's (which also locks the row until the outcome is written)?
      Poco::Int64 mine = lease, bumped = lease + 1;
      Poco::Data::Statement hold =
          (tx << "UPDATE email_outbox SET next_attempt_us = ? WHERE message_id = ? AND "
                 "next_attempt_us = ?",
           use(bumped), use(id), use(mine));
      if (hold.execute() != 1) {
        lost = true;
        return;
      }
      // The relay's refusals are bounces, with its answer as the reason.
      std::vector<Bounce> bounces = relayBounces(result);
      if (retry) {
        bounces_.record(tx, id, bounces);
        // Only the deferred recipients are tried again. 30 s, 1 min, 2 min ... at most an hour.
        Poco::Int64 wait = std::min<Poco::Int64>(3600, 30LL << std::min(attempts - 1, 7)) * 1000000;
        Poco::Int64 next = sdk::nowMicros() + wait;
        std::string rest = jsonList(result.deferred), error = result.deferred_answer;
        tx << "UPDATE email_outbox SET next_attempt_us = ?, last_error = ?, recipients = ? WHERE "
              "message_id = ?",
            use(next), use(error), use(rest), use(id), now;
        return;
      }
      // Out of attempts. Recipients the relay answered for (while others bounced or got it)
      // bounce, so the sender learns who did not get it; when the relay was never reached for
      // any of them and none bounced before, the message failed as a whole.
      auto head = store_.messageHead(tx, id);
      expired = !result.deferred.empty() && result.message_error.empty() &&
                (!whole || !bounces.empty() || (head && head->status == "bounced"));
      if (expired) {
        for (const auto& r : result.deferred) {
          bounces.push_back({Poco::toLower(r), "4.4.7",
                             replyLine("delivery time expired: " + result.deferred_answer), "relay",
                             sdk::nowMicros()});
        }
      }
      bounces_.record(tx, id, bounces);
      tx << "DELETE FROM email_outbox WHERE message_id = ?", use(id), now;
      // A bounced message stays bounced (setStatus leaves it); else sent, or failed.
      const bool failed = !result.message_error.empty() || (!result.deferred.empty() && !expired);
      store_.setStatus(tx, id, failed ? "failed" : "sent");
    });
  } catch (const std::exception& e) {
    // The outcome could not be recorded: end the row anyway, in its own transaction, so the
    // message is not sent again to every recipient when the lease runs out.
    logger_.error("outbox: %s: recording the outcome failed (%s); the message is marked failed", id,
                  std::string(e.what()));
    store_.db().transaction([&](Poco::Data::Session& tx) {
      tx << "DELETE FROM email_outbox WHERE message_id = ?", use(id), now;
    });
    try {
      store_.db().transaction([&](Poco::Data::Session& tx) { store_.setStatus(tx, id, "failed"); });
    } catch (const std::exception& e2) {
      logger_.error("outbox: %s: marking it failed failed too: %s", id, std::string(e2.what()));
    }
    outcomes_.failed.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (lost) {
    logger_.warning(
        "outbox: %s: the attempt outlasted its lease and another process took the "
        "message over; its outcome is that process's to record",
        id);
    return true;
  }
  if (!result.message_error.empty()) {
    outcomes_.failed.fetch_add(1, std::memory_order_relaxed);
    logger_.warning(
        "outbox: %s failed: the relay refused the sender (check email.relay.username "
        "and email.relay.verp): %s",
        id, result.message_error);
  }
  if (!result.delivered.empty()) {
    outcomes_.sent.fetch_add(1, std::memory_order_relaxed);
    logger_.information("outbox: %s sent to %z recipients", id, result.delivered.size());
  }
  if (!result.refused.empty() || expired) {
    outcomes_.bounced.fetch_add(1, std::memory_order_relaxed);
    for (const auto& r : result.refused)
      logger_.warning("outbox: %s bounced for %s: %s", id, r.recipient, r.answer);
  }
  if (!result.deferred.empty()) {
    if (retry) outcomes_.deferred.fetch_add(1, std::memory_order_relaxed);
    if (!retry && !expired) outcomes_.failed.fetch_add(1, std::memory_order_relaxed);
    logger_.warning("outbox: %s attempt %d failed for %z recipients%s: %s", id, attempts,
                    result.deferred.size(),
                    std::string(retry     ? ""
                                : expired ? ", the last attempt: they bounced"
                                          : ", the last attempt"),
                    result.deferred_answer);
  }
  return true;
}

}  // namespace svc::plugins::email
