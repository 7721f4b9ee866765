#include "delivery_engine.h"

#include "signature.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Tuple.h>

#include <future>
#include <random>

using namespace Poco::Data::Keywords;

namespace svc::plugins::webhooks {

namespace {

constexpr int kRunBatch = 500;  // deliveries sent between two records of their outcomes, at most
// and for so long at most: a lost lease or a disabled webhook is noticed, and what was sent is
// recorded, within about this.
constexpr std::chrono::milliseconds kRunTime{1000};
// How long a drained webhook's lease (and connection) is kept for more deliveries.
constexpr std::chrono::milliseconds kIdleHold{400};
// A worker's fair share of a webhook while another is due: so many deliveries, or so long.
constexpr int kFairDeliveries = 200;
constexpr std::chrono::milliseconds kFairTime{2000};
// An attempt running longer than this parks its thread: the pool starts another (DeliveryWorkers).
// Well above a healthy receiver's answer, well below webhooks.timeout_seconds.
constexpr std::chrono::milliseconds kPatience{250};
// How often the delivery log is pruned and its pending rows counted (and once at start).
constexpr std::chrono::minutes kSweepEvery{10};
std::int64_t wallSeconds() {
  // The signature's timestamp is the real time: receivers compare it with their own clock.
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double unitRandom() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
}

}  // namespace

DeliveryEngine::DeliveryEngine(sdk::Database& db, sdk::EventBus& events, WebhookStore& store,
                               EngineSettings settings, Poco::Logger& log)
    : db_(db),
      events_(events),
      store_(store),
      settings_(settings),
      policy_(settings.retry_base_us, settings.retry_window_us),
      log_(log),
      leases_(db, std::chrono::microseconds(settings.lease_us), settings.account_workers),
      fan_out_(db, events, store),
      sweep_(db, store, settings.retention_us),
      workers_(settings.workers, settings.max_workers, kPatience) {}

DeliveryEngine::~DeliveryEngine() {
  stop();
}

void DeliveryEngine::start() {
  running_ = true;
  fan_out_thread_ = std::thread([this] { fanOutLoop(); });
  workers_.start([this](DeliveryWorkers::Worker& w) { workerLoop(w); });
}

void DeliveryEngine::stop() {
  if (!running_.exchange(false)) return;
  watchdog_.stop();  // cuts the sends in flight: a slow receiver does not hold the stop
  fan_out_wake_.notify_all();
  workers_wake_.notify_all();
  fan_out_thread_.join();
  workers_.stop();
}

void DeliveryEngine::eventArrived() {
  {
    std::lock_guard lock(mutex_);
    event_arrived_ = true;
  }
  fan_out_wake_.notify_one();
}

void DeliveryEngine::wakeWorkers() {
  {
    std::lock_guard lock(mutex_);
    ++work_generation_;
  }
  workers_wake_.notify_all();
}

void DeliveryEngine::fanOutLoop() {
  while (running_) {
    {
      std::unique_lock lock(mutex_);
      fan_out_wake_.wait_for(lock, settings_.poll, [this] { return event_arrived_ || !running_; });
      event_arrived_ = false;
    }
    if (!running_) break;
    try {
      do {
        if (fan_out_.runOnce() > 0) wakeWorkers();
      } while (fan_out_.more() && running_);
    } catch (const std::exception& e) {
      // The database may be briefly unreachable, or a deadlock chose this round: next round.
      log_.warning(std::string("webhooks fan-out: ") + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    sweep();
    // Retries come due and other processes make deliveries: the workers look for those every
    // poll interval by themselves (woken each round, they queried the database per event).
  }
}

void DeliveryEngine::sweep() {
  const auto now_time = std::chrono::steady_clock::now();
  if (swept_ != std::chrono::steady_clock::time_point{} && now_time - swept_ < kSweepEvery) return;
  swept_ = now_time;
  try {
    const std::int64_t now_us = sdk::nowMicros();
    const std::size_t pruned = sweep_.prune(now_us);
    const std::size_t disabled = sweep_.capPending(now_us);
    if (pruned || disabled) {
      log_.information("webhooks: pruned " + std::to_string(pruned) +
                       " finished deliveries; disabled " + std::to_string(disabled) +
                       " webhooks with too many pending");
    }
  } catch (const std::exception& e) {
    log_.warning(std::string("webhooks sweep: ") + e.what());  // next time
  }
}

void DeliveryEngine::workerLoop(DeliveryWorkers::Worker& worker) {
  Sender sender(settings_.allow_private_urls, settings_.timeout, watchdog_);
  std::uint64_t seen = 0;
  while (running_ && worker.keep()) {
    std::optional<Lease> webhook;
    try {
      webhook = leases_.takeOne();
    } catch (const std::exception& e) {
      log_.warning(std::string("webhooks lease: ") + e.what());
    }
    if (webhook) {
      try {
        deliverFor(*webhook, sender, worker);
      } catch (const std::exception& e) {
        log_.warning("webhooks delivery for " + webhook->webhook + ": " + e.what());
        sender.reset();
      }
      try {
        leases_.release(*webhook);
      } catch (const std::exception&) {
        // The lease lapses by itself.
      }
      continue;
    }
    std::unique_lock lock(mutex_);
    workers_wake_.wait_for(lock, settings_.poll,
                           [&] { return work_generation_ != seen || !running_; });
    seen = work_generation_;
  }
}

std::vector<DeliveryRow> DeliveryEngine::pendingOf(const std::string& webhook,
                                                   const std::unordered_set<std::string>& skip) {
  Poco::Data::Session s = db_.session();
  std::string id = webhook;
  // The rows being recorded are the oldest pending ones (or gone, once their record commits).
  int limit = kRunBatch + static_cast<int>(skip.size());
  Poco::Data::Statement select =
      (s << "SELECT id, seq, event_id, event_type, payload, attempts, first_attempt_us, "
            "next_attempt_us FROM webhook_deliveries WHERE webhook_id = ? AND state = "
            "'pending' ORDER BY seq, id LIMIT ?",
       use(id), use(limit));
  std::vector<Poco::Tuple<std::string, Poco::Int64, std::string, std::string, std::string, int,
                          Poco::Int64, Poco::Int64>>
      rows;
  select, into(rows), now;
  std::vector<DeliveryRow> pending;
  for (const auto& t : rows) {
    if (skip.count(t.get<0>()) || pending.size() >= static_cast<std::size_t>(kRunBatch)) continue;
    DeliveryRow d;
    d.id = t.get<0>();
    d.webhook_id = webhook;
    d.seq = t.get<1>();
    d.event_id = t.get<2>();
    d.event_type = t.get<3>();
    d.payload = t.get<4>();
    d.attempts = t.get<5>();
    d.first_attempt_us = t.get<6>();
    d.next_attempt_us = t.get<7>();
    pending.push_back(std::move(d));
  }
  return pending;
}

void DeliveryEngine::deliverFor(Lease& lease, Sender& sender, DeliveryWorkers::Worker& worker) {
  const std::string& webhook = lease.webhook;
  const auto leased_at = std::chrono::steady_clock::now();
  auto idle_since = leased_at;
  int sent = 0;
  std::uint64_t seen = 0;
  // An attempt is cut at the timeout; recording its outcome takes a moment more. The lease is
  // renewed before a send when less than this is left of it.
  const auto longest = 2 * settings_.timeout;
  // Whether an attempt started now ends before the lease's deadline (this process's clock).
  const auto timeLeft = [&] { return lease.deadline - leases_.clock() >= longest; };
  // Its fair share spent (looked at now and then: othersDue() is a query).
  auto looked = leased_at;
  const auto shareSpent = [&] {
    const auto now_time = std::chrono::steady_clock::now();
    if (sent < kFairDeliveries && now_time - leased_at < kFairTime) return false;
    if (now_time - looked < kFairTime / 8) return false;
    looked = now_time;
    return true;
  };
  // The batch being recorded while the next is sent: only batches delivered whole (a failure
  // stops the run and is recorded before anything else is sent, so the order holds).
  std::future<std::optional<Lease::Clock::time_point>> recording;
  std::unordered_set<std::string> recording_ids;
  bool lost = false;  // a record found the lease no longer this one's (or the webhook gone)
  // Waits for the batch being recorded. @return false when the lease is no longer this one's.
  const auto settled = [&] {
    if (recording.valid()) {
      const std::optional<Lease::Clock::time_point> renewed = recording.get();
      recording_ids.clear();
      if (renewed) {
        leases_.extend(lease, *renewed);
      } else {
        lost = true;
      }
    }
    return !lost;
  };
  while (running_) {
    std::optional<WebhookRow> hook;
    {
      Poco::Data::Session s = db_.session();
      hook = store_.find(s, webhook);
    }
    if (!hook || !hook->enabled) break;
    {
      std::lock_guard lock(mutex_);
      seen = work_generation_;
    }
    const std::vector<DeliveryRow> pending = pendingOf(webhook, recording_ids);
    if (pending.empty()) {
      if (recording.valid()) {
        if (!settled()) return;
        continue;
      }
      // Drained: keep the lease (and the connection) a moment for what the fan-out makes next,
      // so a steady flow of events does not cost a lease and a release each; not while another
      // webhook waits for a worker.
      if (std::chrono::steady_clock::now() - idle_since > kIdleHold || leases_.othersDue(webhook))
        return;
      std::unique_lock lock(mutex_);
      workers_wake_.wait_for(lock, kIdleHold / 4,
                             [&] { return work_generation_ != seen || !running_; });
      continue;
    }
    std::vector<Outcome> outcomes;
    bool stop_run = false;
    const auto batch_started = std::chrono::steady_clock::now();
    for (const auto& d : pending) {
      if (!running_) {
        stop_run = true;
        break;
      }
      // The batch before this one recorded meanwhile: a lost lease stops the sending now.
      if (recording.valid() &&
          recording.wait_for(std::chrono::seconds(0)) == std::future_status::ready && !settled()) {
        stop_run = true;
        break;
      }
      if (std::chrono::steady_clock::now() - batch_started > kRunTime) break;  // record, go on
      std::int64_t now_us = sdk::nowMicros();
      if (d.next_attempt_us > now_us) {
        // The oldest waits for its retry, and everything after it waits behind it.
        stop_run = true;
        if (outcomes.empty()) {
          db_.transaction([&](Poco::Data::Session& tx) {
            std::string id = webhook;
            Poco::Int64 at = d.next_attempt_us;
            tx << "UPDATE webhooks SET retry_at_us = ? WHERE id = ?", use(at), use(id), now;
          });
        }
        break;
      }
      // Too little of the lease left for one more attempt: renew it first, so it cannot lapse
      // (and go to another worker) while this one still sends; unrenewed, this worker stops
      // before its deadline, and a taker waits longer than that (LeaseTable).
      if (!timeLeft() && (!leases_.renew(lease) || !timeLeft())) {
        stop_run = true;
        break;
      }
      const std::int64_t timestamp = wallSeconds();
      const std::vector<std::pair<std::string, std::string>> headers = {
          {"webhook-id", d.event_id},
          {"webhook-timestamp", std::to_string(timestamp)},
          {"webhook-signature",
           signatureHeader(hook->signingSecrets(now_us), d.event_id, timestamp, d.payload)},
      };
      worker.attemptStarted();
      SendResult r = sender.post(hook->url, headers, d.payload);
      worker.attemptEnded();
      if (!running_ && !r.ok()) break;  // cut by stop(): not the receiver's failure
      outcomes.push_back({d, r, sdk::nowMicros()});
      ++sent;
      if (!r.ok()) {
        stop_run = true;
        break;
      }
      if (shareSpent() && leases_.othersDue(webhook)) {
        stop_run = true;  // the worker goes to a webhook waiting for one
        break;
      }
    }
    const bool mine = settled();
    if (outcomes.empty()) return;
    if (!mine || stop_run || !running_) {
      // What was sent is recorded whatever became of the lease (else it is sent again).
      if (auto renewed = record(lease, outcomes); renewed && mine) leases_.extend(lease, *renewed);
      return;
    }
    for (const auto& o : outcomes) recording_ids.insert(o.delivery.id);
    recording = std::async(std::launch::async,
                           [this, l = lease, o = std::move(outcomes)] { return record(l, o); });
    idle_since = std::chrono::steady_clock::now();
  }
  settled();
}

std::optional<Lease::Clock::time_point> DeliveryEngine::record(
    const Lease& lease, const std::vector<Outcome>& outcomes) {
  const std::string& webhook = lease.webhook;
  bool still_mine = true;
  std::uint64_t ok = 0, failed = 0;
  // Before the transaction (and any retry of it): the deadline counts from no later than the
  // renewal that committed.
  const Lease::Clock::time_point started = leases_.clock();
  db_.transaction([&](Poco::Data::Session& tx) {
    ok = failed = 0;
    std::string id = webhook;
    // Renewed first: the beat's row lock orders this record after any takeover.
    still_mine = LeaseTable::renewIn(tx, lease);
    Poco::Int64 retry_at = 0;
    for (const auto& o : outcomes) {
      std::string did = o.delivery.id, error = o.result.error;
      int status = o.result.status;
      Poco::Int64 at = o.at_us;
      Poco::Int64 first = o.delivery.first_attempt_us ? o.delivery.first_attempt_us : o.at_us;
      // As read before the send: a replay asked meanwhile moved it, and then the replay stands
      // (the delivery is sent again) rather than this outcome.
      Poco::Int64 was_due = o.delivery.next_attempt_us;
      if (o.result.ok()) {
        ++ok;
        tx << "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, "
              "last_status = ?, last_error = '', first_attempt_us = ?, last_attempt_us = ?, "
              "delivered_us = ?, next_attempt_us = 0 WHERE id = ? AND state = 'pending' AND "
              "next_attempt_us = ?",
            use(status), use(first), use(at), bind(at), use(did), use(was_due), now;
        continue;
      }
      ++failed;
      if (!policy_.givesUp(first, at)) {
        Poco::Int64 next = at + policy_.delay(o.delivery.attempts + 1, unitRandom());
        retry_at = next;
        tx << "UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = ?, "
              "last_error = ?, first_attempt_us = ?, last_attempt_us = ?, next_attempt_us = ? "
              "WHERE id = ? AND state = 'pending' AND next_attempt_us = ?",
            use(status), use(error), use(first), use(at), use(next), use(did), use(was_due), now;
        continue;
      }
      // Failing for the whole window: the delivery is failed and the webhook disabled.
      tx << "UPDATE webhook_deliveries SET state = 'failed', attempts = attempts + 1, "
            "last_status = ?, last_error = ?, first_attempt_us = ?, last_attempt_us = ?, "
            "next_attempt_us = 0 WHERE id = ? AND state = 'pending' AND next_attempt_us = ?",
          use(status), use(error), use(first), use(at), use(did), use(was_due), now;
      if (auto hook = store_.find(tx, webhook); hook && hook->enabled) {
        hook->enabled = false;
        hook->disabled_reason =
            "Deliveries failed for " + std::to_string(policy_.window() / 3600000000LL) +
            " hours (the last: " + sdk::truncateUtf8(error.empty() ? "no answer" : error, 300) +
            "); fix the receiver, then PATCH enabled=true to resume.";
        hook->updated_us = at;
        store_.update(tx, *hook, "webhook.disabled");
        still_mine = false;
      }
    }
    tx << "UPDATE webhooks SET retry_at_us = ? WHERE id = ?", use(retry_at), use(id), now;
  });
  delivered_ += ok;
  failed_attempts_ += failed;
  if (!still_mine) return std::nullopt;
  return started;
}

}  // namespace svc::plugins::webhooks
