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
  for (;;) {
    bool sent_any = false;
    try {
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
  store_.db().transaction([&](Poco::Data::Session& tx) {
    Poco::Int64 lease = now_us + 600LL * 1000000, seen = row.get<4>();
    int a = attempts;
    Poco::Data::Statement claim =
        (tx << "UPDATE email_outbox SET next_attempt_us = ?, attempts = ? WHERE message_id = ? "
               "AND next_attempt_us = ?",
         use(lease), use(a), use(id), use(seen));
    claimed = claim.execute() == 1;
  });
  if (!claimed) return true;  // another process took it; look again

  RelayResult result;
  try {
    std::string raw;
    {
      Poco::Data::Session s = store_.db().session();
      raw = readLongText(s, store_.db().dialect(), "email_outbox", "raw", "message_id", id);
    }
    result = relayMessage(config_, row.get<1>(), parseJsonList(row.get<2>()), raw);
  } catch (const Poco::Exception& e) {
    result.deferred = parseJsonList(row.get<2>());
    result.deferred_answer = e.displayText();
  } catch (const std::exception& e) {
    result.deferred = parseJsonList(row.get<2>());
    result.deferred_answer = e.what();
  }
  const bool retry = !result.deferred.empty() && attempts < config_.max_attempts;
  store_.db().transaction([&](Poco::Data::Session& tx) {
    // The relay's refusals are bounces, with its answer as the reason.
    std::vector<Bounce> bounces;
    for (const auto& r : result.refused) {
      bounces.push_back(
          {Poco::toLower(r.recipient), r.status, r.answer, "relay", sdk::nowMicros()});
    }
    bounces_.record(tx, id, bounces);
    if (retry) {
      // Only the deferred recipients are tried again. 30 s, 1 min, 2 min ... at most an hour.
      Poco::Int64 wait = std::min<Poco::Int64>(3600, 30LL << std::min(attempts - 1, 7)) * 1000000;
      Poco::Int64 next = sdk::nowMicros() + wait;
      std::string rest = jsonList(result.deferred), error = result.deferred_answer;
      tx << "UPDATE email_outbox SET next_attempt_us = ?, last_error = ?, recipients = ? WHERE "
            "message_id = ?",
          use(next), use(error), use(rest), use(id), now;
      return;
    }
    tx << "DELETE FROM email_outbox WHERE message_id = ?", use(id), now;
    // A bounced message stays bounced (setStatus leaves it); else sent, or failed when
    // recipients were still deferred after the last attempt.
    store_.setStatus(tx, id, result.deferred.empty() ? "sent" : "failed");
  });
  if (!result.delivered.empty()) {
    outcomes_.sent.fetch_add(1, std::memory_order_relaxed);
    logger_.information("outbox: %s sent to %z recipients", id, result.delivered.size());
  }
  if (!result.refused.empty()) {
    outcomes_.bounced.fetch_add(1, std::memory_order_relaxed);
    for (const auto& r : result.refused)
      logger_.warning("outbox: %s bounced for %s: %s", id, r.recipient, r.answer);
  }
  if (!result.deferred.empty()) {
    (retry ? outcomes_.deferred : outcomes_.failed).fetch_add(1, std::memory_order_relaxed);
    logger_.warning("outbox: %s attempt %d failed for %z recipients%s: %s", id, attempts,
                    result.deferred.size(), std::string(retry ? "" : ", the last attempt"),
                    result.deferred_answer);
  }
  return true;
}

}  // namespace svc::plugins::email
