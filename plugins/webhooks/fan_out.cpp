#include "fan_out.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/JSON/Stringifier.h>

#include <algorithm>
#include <sstream>

using namespace Poco::Data::Keywords;

namespace svc::plugins::webhooks {

namespace {

constexpr std::size_t kBatch = 500;
constexpr std::chrono::seconds kIdleAdvance{5};

// Thrown inside the transaction when another process moved the cursor: rolls it back.
struct CursorMoved {};

std::string quoted(const std::string& s) {
  std::ostringstream out;
  Poco::JSON::Stringifier::formatString(s, out, Poco::JSON_WRAP_STRINGS);
  return out.str();
}

}  // namespace

bool matches(const WebhookRow& w, const sdk::Event& e) {
  if (!w.enabled || !w.after_event.empty() || e.sequence <= w.after_seq ||
      e.account != w.account_id) {
    return false;
  }
  if (!w.identity_uuid.empty() && e.identity != w.identity_uuid) return false;
  return w.event_types.empty() ||
         std::find(w.event_types.begin(), w.event_types.end(), e.type) != w.event_types.end();
}

std::string payloadOf(const sdk::Event& e) {
  std::ostringstream object;
  if (e.object) {
    e.object->stringify(object);
  } else {
    object << "{}";
  }
  return "{\"id\":" + quoted(e.id) + ",\"type\":" + quoted(e.type) + ",\"created_dt\":\"" +
         sdk::isoTimestamp(e.created_us) + "\",\"account\":" + quoted(e.account) +
         ",\"identity\":" + (e.identity.empty() ? "null" : quoted(e.identity)) +
         ",\"object\":" + object.str() + "}";
}

std::size_t FanOut::runOnce() {
  more_ = false;
  Poco::Int64 cursor = 0, newest = 0;
  Poco::Data::Session s = db_.session();
  // None at the last look (most installs, most of the time): one read says whether there is one
  // now; the cursor and the newest event are read when there is, or when the idle cursor is due.
  const auto now_time = std::chrono::steady_clock::now();
  const bool advance_due = idle_advanced_ == std::chrono::steady_clock::time_point{} ||
                           now_time - idle_advanced_ >= kIdleAdvance;
  if (!had_hooks_ && !advance_due && store_.enabled(s).empty()) return 0;
  s << "SELECT seq FROM webhook_cursor WHERE name = 'fanout'", into(cursor), now;
  // The newest sequence before the webhooks: a webhook this read misses was made by a later
  // commit, so its own event (after_seq) is after `newest` and it wants nothing up to it. Read
  // from the kernel's log table: the bus has no call for it, and this is one indexed MAX.
  s << "SELECT COALESCE(MAX(seq), 0) FROM svc_events", into(newest), now;
  if (newest <= cursor) return 0;
  const std::vector<WebhookRow> hooks = store_.enabled(s);
  had_hooks_ = !hooks.empty();
  if (hooks.empty()) {
    // Nothing to deliver: no event is read. The cursor jumps to the newest event (now and
    // then, not a write per event), so a new install, or one whose webhooks were all disabled,
    // does not page through history when a webhook comes.
    if (!advance_due) return 0;
    idle_advanced_ = now_time;
    Poco::Int64 from = cursor, to = newest;
    db_.transaction([&](Poco::Data::Session& tx) {
      tx << "UPDATE webhook_cursor SET seq = ? WHERE name = 'fanout' AND seq = ? AND seq < ?",
          use(to), use(from), bind(to), now;
    });
    return 0;
  }
  auto batch = events_.read(cursor, kBatch);
  more_ = batch.size() == kBatch;
  // Nothing past `newest`: a webhook made after the read of the webhooks may wait for its own
  // event there (after_event), and must find it after the cursor.
  while (!batch.empty() && batch.back().sequence > newest) {
    batch.pop_back();
    more_ = true;
  }
  if (batch.empty()) return 0;
  std::size_t made = 0;
  const char* ignore =
      db_.dialect() == sdk::Dialect::kSqlite ? "INSERT OR IGNORE" : "INSERT IGNORE";
  try {
    db_.transaction([&](Poco::Data::Session& tx) {
      made = 0;
      // The compare-and-set first: on MariaDB it locks the cursor row, so a second svcd waits
      // here, then finds the cursor moved and inserts nothing.
      Poco::Int64 from = cursor, to = batch.back().sequence;
      Poco::Data::Statement cas =
          (tx << "UPDATE webhook_cursor SET seq = ? WHERE name = 'fanout' AND seq = ?", use(to),
           use(from));
      if (cas.execute() == 0) throw CursorMoved{};
      const Poco::Int64 at = sdk::nowMicros();
      std::vector<WebhookRow> waiting = hooks;  // this attempt's copy: a retry starts afresh
      for (const auto& e : batch) {
        for (auto& w : waiting) {
          if (!w.after_event.empty() && w.after_event == e.id) {
            // Its own event, numbered after commit: it gets what follows. Unless it was disabled
            // and enabled again since it was read: then it waits for that newer event.
            if (store_.startAt(tx, w, e.sequence)) {
              w.after_seq = e.sequence;
              w.after_event.clear();
            } else {
              w.enabled = false;  // for this round
            }
            continue;
          }
          if (!matches(w, e)) continue;
          std::string id = sdk::newUuid(), hook = w.id, event_id = e.id, type = e.type,
                      payload = payloadOf(e);
          Poco::Int64 seq = e.sequence, created = e.created_us, when = at;
          // A delivery that exists already (the cursor set back, by an operator or a restore of
          // an older backup) is left as it is: one duplicate must not roll back the batch,
          // which would stall the fan-out on it for good.
          Poco::Data::Statement insert =
              (tx << std::string(ignore) +
                         " INTO webhook_deliveries (id, webhook_id, seq, event_id, event_type, "
                         "payload, event_created_us, state, attempts, last_status, last_error, "
                         "first_attempt_us, last_attempt_us, next_attempt_us, delivered_us, "
                         "created_us) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, 0, '', 0, 0, ?, "
                         "0, ?)",
               use(id), use(hook), use(seq), use(event_id), use(type), use(payload), use(created),
               use(when), bind(at));
          made += insert.execute();
        }
      }
    });
  } catch (const CursorMoved&) {
    more_ = true;  // another svcd did this batch: look again from where it left the cursor
    return 0;
  }
  return made;
}

}  // namespace svc::plugins::webhooks
