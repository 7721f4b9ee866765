#include "event_log.h"

#include <svc/sdk/http.h>
#include <svc/sdk/schema.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/JSON/Parser.h>
#include <Poco/JSON/Stringifier.h>
#include <Poco/Logger.h>
#include <Poco/Tuple.h>

#include <sstream>

using namespace Poco::Data::Keywords;

namespace svc::kernel {

namespace {

constexpr std::size_t kBatch = 500;
constexpr std::size_t kReplayPage = 200;
constexpr std::size_t kReplayWhileQueuedBelow = 256 * 1024;
constexpr std::size_t kPingSlice = 256;  // streams pinged between two looks for new events

std::string jsonString(const std::string& s) {
  std::ostringstream out;
  Poco::JSON::Stringifier::formatString(s, out, Poco::JSON_WRAP_STRINGS);
  return out.str();
}

std::string frame(std::int64_t seq, const std::string& type, const std::string& data) {
  return "id: " + std::to_string(seq) + "\nevent: " + type + "\ndata: " + data + "\n\n";
}

}  // namespace

std::vector<sdk::Migration> eventLogMigrations() {
  sdk::Migration m;
  m.version = 1;
  m.description = "the event log and its sequence counter";
  const char* counter =
      "CREATE TABLE svc_event_counter (name VARCHAR(16) NOT NULL PRIMARY KEY, "
      "seq BIGINT NOT NULL)";
  const char* seed = "INSERT INTO svc_event_counter (name, seq) VALUES ('events', 0)";
  auto events = [](const char* text_type) {
    return std::string(
               "CREATE TABLE svc_events (seq BIGINT NOT NULL PRIMARY KEY, id CHAR(36) NOT NULL, "
               "type VARCHAR(64) NOT NULL, account_id CHAR(36) NOT NULL, "
               "identity_id VARCHAR(36) NOT NULL, created_us BIGINT NOT NULL, data ") +
           text_type + " NOT NULL)";
  };
  m.sqlite = {counter, seed, events("TEXT"),
              "CREATE INDEX svc_events_account ON svc_events (account_id, seq)",
              "CREATE INDEX svc_events_created ON svc_events (created_us)"};
  m.mysql = {counter, seed, events("MEDIUMTEXT"),
             "CREATE INDEX svc_events_account ON svc_events (account_id, seq)",
             "CREATE INDEX svc_events_created ON svc_events (created_us)"};
  // Poco's MySQL connector gives a result column a buffer of its declared size: MEDIUMTEXT
  // meant 48-64 MB allocated and cleared for every read of the log. Events are small (bodies
  // and secrets are never in them; publish() keeps them under 60 KB), so TEXT it is, in utf8mb4.
  sdk::Migration text;
  text.version = 2;
  text.description = "event data as utf8mb4 TEXT";
  text.mysql = {"ALTER TABLE svc_events CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
                "ALTER TABLE svc_events MODIFY data TEXT CHARACTER SET utf8mb4 COLLATE "
                "utf8mb4_bin NOT NULL"};
  // MySQL/MariaDB: events are stored unnumbered and numbered after commit (EventSequencer), so
  // that no row is written by every publishing transaction; the insert order is kept by row_id,
  // and the counter row also holds the numbering lease. SQLite numbers as before.
  sdk::Migration sequencer;
  sequencer.version = 3;
  sequencer.description = "events numbered after commit; the sequencer's lease";
  sequencer.mysql = {
      "ALTER TABLE svc_events DROP PRIMARY KEY, "
      "ADD COLUMN row_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY FIRST, "
      "MODIFY seq BIGINT NULL, ADD UNIQUE INDEX svc_events_seq (seq)",
      "ALTER TABLE svc_event_counter ADD COLUMN holder VARCHAR(64) NOT NULL DEFAULT '', "
      "ADD COLUMN beat BIGINT NOT NULL DEFAULT 0"};
  return {m, text, sequencer};
}

struct EventLog::StreamState {
  std::shared_ptr<sdk::Stream> stream;
  StreamFilter filter;
  std::int64_t last = 0;  // the last sequence this stream has been given (or skipped)
  std::int64_t resume_after = -1;

  bool wants(const sdk::Event& e) const {
    if (!filter.identity.empty() && e.identity != filter.identity) return false;
    return filter.types.empty() || filter.types.count(e.type) > 0;
  }
};

namespace {

// Sequence numbers handed out by the transaction this thread is in (see publish()).
struct Numbering {
  std::uint64_t transaction = 0;
  std::int64_t first = 0;
  std::int64_t last = 0;
};
thread_local Numbering numbering;

// Live streams are grouped by what they see: an account's streams under the account, an
// identity's under account/identity, so an event visits only the streams that may want it.
std::string liveKey(const std::string& account, const std::string& identity) {
  return identity.empty() ? account : account + "/" + identity;
}

}  // namespace

EventLog::EventLog(SqlDatabase& db, int retention_days, int ping_seconds)
    : db_(db), retention_days_(retention_days), ping_seconds_(ping_seconds) {
  if (db_.dialect() == sdk::Dialect::kMysql) {
    sequencer_ = std::make_unique<EventSequencer>(db_, [this] { wakeEventThread(); });
  }
}

EventLog::~EventLog() {
  stop();
}

void EventLog::start() {
  Poco::Data::Session s = db_.session();
  Poco::Int64 max = 0;
  s << "SELECT COALESCE(MAX(seq), 0) FROM svc_events", into(max), now;
  position_ = max;
  if (sequencer_) sequencer_->start();
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void EventLog::stop() {
  if (sequencer_) sequencer_->stop();
  if (!running_.exchange(false)) return;
  wakeEventThread();
  thread_.join();
  for (auto& [account, list] : live_) {
    for (auto& s : list) s->stream->finish();
  }
  for (auto& s : catching_up_) s->stream->finish();
  live_.clear();
  catching_up_.clear();
}

sdk::Event EventLog::publish(const std::string& type, const std::string& account,
                             const std::string& identity, Poco::JSON::Object::Ptr object,
                             Poco::Data::Session* transaction) {
  if (type.empty() || type.size() > 64 || account.size() > 36 || identity.size() > 36) {
    throw std::invalid_argument("event type, account or identity out of bounds");
  }
  // An undeclared type is a programming error in the publisher, logged once per type. The event
  // is still stored and delivered: the publisher's change is already made (often in this very
  // transaction), so refusing would either lose the event for every consumer or fail a request
  // that did its work; an unfiltered stream and in-process subscribers still see it, and only a
  // `?types=` filter, which accepts declared types alone, cannot ask for it.
  const sdk::EventType* declared = nullptr;
  if (types_ && types_->checkPublished(type, Poco::Logger::get("svcd"))) {
    declared = types_->find(type);
  }
  sdk::Event e;
  e.id = sdk::newUuid();
  e.type = type;
  e.created_us = sdk::nowMicros();
  e.account = account;
  e.identity = identity;
  e.object = object ? object : Poco::JSON::Object::Ptr(new Poco::JSON::Object);
  if (check_objects_ && declared && declared->object) {
    sdk::FieldErrors problems;
    declared->object->validate(e.object, "object", problems);
    try {
      problems.throwIfAny();
    } catch (const sdk::HttpError& mismatch) {
      std::string named;
      for (const auto& [field, messages] : mismatch.errors()) {
        for (const auto& m : messages) named += " " + field + ": " + m + ";";
      }
      Poco::Logger::get("svcd").error("event_mismatch: a published " + type +
                                      " does not fit its declared object:" + named);
    }
  }
  std::ostringstream object_json;
  e.object->stringify(object_json);
  if (object_json.str().size() > 60000) {
    // Too large to be an event (a publisher put a body in it): say which object, not what, by
    // the fields that identify any object and those its type declares as identifying it.
    Poco::JSON::Object::Ptr small = new Poco::JSON::Object;
    std::vector<std::string> keys = {"id", "uuid", "identity"};
    if (declared) keys.insert(keys.end(), declared->key_fields.begin(), declared->key_fields.end());
    for (const auto& key : keys) {
      if (e.object->has(key)) small->set(key, e.object->get(key));
    }
    small->set("truncated", true);
    e.object = small;
    object_json.str("");
    e.object->stringify(object_json);
  }
  const std::string data = "{\"id\":\"" + e.id + "\",\"type\":" + jsonString(type) +
                           ",\"created_dt\":\"" + sdk::isoTimestamp(e.created_us) +
                           "\",\"account\":" + jsonString(account) +
                           ",\"identity\":" + (identity.empty() ? "null" : jsonString(identity)) +
                           ",\"object\":" + object_json.str() + "}";
  auto append = [&](Poco::Data::Session& s) {
    std::string id = e.id, t = type, a = account, i = identity, d = data;
    Poco::Int64 at = e.created_us;
    if (sequencer_) {
      // Numbered after commit by the sequencer (event_sequencer.h): e.sequence stays 0.
      s << "INSERT INTO svc_events (id, type, account_id, identity_id, created_us, data) "
           "VALUES (?, ?, ?, ?, ?, ?)",
          use(id), use(t), use(a), use(i), use(at), use(d), now;
      return;
    }
    Poco::Int64 seq = numberInTransaction(s);
    s << "INSERT INTO svc_events (seq, id, type, account_id, identity_id, created_us, data) "
         "VALUES (?, ?, ?, ?, ?, ?, ?)",
        use(seq), use(id), use(t), use(a), use(i), use(at), use(d), now;
    e.sequence = seq;
  };
  // The sequencer, or the event thread, looks once the event is visible: after the commit.
  auto wake = [this] { sequencer_ ? wakeSequencer() : wakeEventThread(); };
  if (transaction) {
    append(*transaction);
    db_.afterCommit(wake);
  } else {
    db_.transaction(append);
    wake();
  }
  return e;
}

std::int64_t EventLog::numberInTransaction(Poco::Data::Session& s) {
  const std::uint64_t serial = db_.transactionSerial();
  if (serial != 0 && serial == numbering.transaction) {
    // This transaction holds the counter row already: number on, and store the counter once,
    // before the commit (a transaction that stores a batch publishes an event for each).
    return ++numbering.last;
  }
  // The counter row is locked until this transaction ends: events commit in sequence order.
  Poco::Int64 seq = 0;
  s << "UPDATE svc_event_counter SET seq = seq + 1 WHERE name = 'events'", now;
  s << "SELECT seq FROM svc_event_counter WHERE name = 'events'", into(seq), now;
  if (serial != 0) {
    numbering = {serial, seq, seq};
    db_.beforeCommit([](Poco::Data::Session& tx) {
      if (numbering.last == numbering.first) return;
      Poco::Int64 last = numbering.last;
      tx << "UPDATE svc_event_counter SET seq = ? WHERE name = 'events'", use(last), now;
    });
  }
  return seq;
}

std::uint64_t EventLog::subscribe(std::function<void(const sdk::Event&)> fn) {
  std::lock_guard lock(subscribers_mutex_);
  std::uint64_t token = next_token_++;
  subscribers_.emplace(token, std::move(fn));
  return token;
}

void EventLog::unsubscribe(std::uint64_t token) {
  std::lock_guard lock(subscribers_mutex_);
  subscribers_.erase(token);
}

std::vector<sdk::Event> EventLog::read(std::int64_t after, std::size_t limit) {
  auto rows = read(after, std::numeric_limits<std::int64_t>::max(), "", limit);
  std::vector<sdk::Event> out;
  out.reserve(rows.size());
  for (auto& [event, data] : rows) {
    try {
      auto parsed = Poco::JSON::Parser().parse(data).extract<Poco::JSON::Object::Ptr>();
      event.object = parsed->getObject("object");
    } catch (...) {
    }
    if (!event.object) event.object = new Poco::JSON::Object;
    out.push_back(std::move(event));
  }
  return out;
}

std::vector<std::string> EventLog::declaredTypes() const {
  std::vector<std::string> out;
  if (!types_) return out;
  for (const auto& name : types_->names()) {
    if (types_->owner(name) != EventTypeRegistry::kKernel) out.push_back(name);
  }
  return out;
}

void EventLog::addStream(std::shared_ptr<sdk::Stream> stream, StreamFilter filter,
                         std::int64_t resume_after) {
  auto state = std::make_shared<StreamState>();
  state->stream = std::move(stream);
  state->filter = std::move(filter);
  state->resume_after = resume_after;
  {
    std::lock_guard lock(pending_mutex_);
    added_.push_back(state);
  }
  ++stream_count_;
  wakeEventThread();
}

void EventLog::wakeSequencer() {
  if (sequencer_) sequencer_->wake();
}

void EventLog::wakeEventThread() {
  {
    std::lock_guard lock(wake_mutex_);
    woken_ = true;
  }
  wake_.notify_one();
}

std::vector<std::pair<sdk::Event, std::string>> EventLog::read(std::int64_t after,
                                                               std::int64_t up_to,
                                                               const std::string& account,
                                                               std::size_t limit) {
  using Row = Poco::Tuple<Poco::Int64, std::string, std::string, std::string, std::string,
                          Poco::Int64, std::string>;
  std::vector<Row> rows;
  Poco::Data::Session s = db_.session();
  Poco::Int64 from = after, to = up_to;
  int n = static_cast<int>(limit);
  if (account.empty()) {
    s << "SELECT seq, id, type, account_id, identity_id, created_us, data FROM svc_events "
         "WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
        use(from), use(to), use(n), into(rows), now;
  } else {
    std::string a = account;
    s << "SELECT seq, id, type, account_id, identity_id, created_us, data FROM svc_events "
         "WHERE account_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
        use(a), use(from), use(to), use(n), into(rows), now;
  }
  std::vector<std::pair<sdk::Event, std::string>> out;
  out.reserve(rows.size());
  for (auto& r : rows) {
    sdk::Event e;
    e.sequence = r.get<0>();
    e.id = r.get<1>();
    e.type = r.get<2>();
    e.account = r.get<3>();
    e.identity = r.get<4>();
    e.created_us = r.get<5>();
    out.emplace_back(std::move(e), r.get<6>());
  }
  return out;
}

void EventLog::dispatch(const sdk::Event& e, const std::string& data) {
  std::string bytes;  // framed once, for the first stream that wants it
  auto deliver = [&](const std::string& key) {
    auto it = live_.find(key);
    if (it == live_.end()) return;
    auto& list = it->second;
    for (std::size_t i = 0; i < list.size();) {
      StreamState& s = *list[i];
      if (e.sequence > s.last) {
        s.last = e.sequence;
        if (s.wants(e)) {
          if (bytes.empty()) bytes = frame(e.sequence, e.type, data);
          // A peer too slow is cut here (and resumes later); a closed stream leaves the list.
          if (!s.stream->write(bytes) && !s.stream->isOpen()) {
            list[i] = list.back();
            list.pop_back();
            --stream_count_;
            continue;
          }
        }
      }
      ++i;
    }
    if (list.empty()) live_.erase(it);
  };
  deliver(e.account);
  if (!e.identity.empty()) deliver(liveKey(e.account, e.identity));
}

void EventLog::poll() {
  while (running_) {
    auto batch = read(position_.load(), std::numeric_limits<std::int64_t>::max(), "", kBatch);
    if (batch.empty()) return;
    std::vector<std::function<void(const sdk::Event&)>> targets;
    {
      std::lock_guard lock(subscribers_mutex_);
      for (auto& [token, fn] : subscribers_) targets.push_back(fn);
    }
    for (auto& [event, data] : batch) {
      if (!targets.empty()) {
        try {
          auto parsed = Poco::JSON::Parser().parse(data).extract<Poco::JSON::Object::Ptr>();
          event.object = parsed->getObject("object");
        } catch (...) {
          event.object = new Poco::JSON::Object;
        }
        for (auto& fn : targets) {
          try {
            fn(event);
          } catch (const std::exception& ex) {
            Poco::Logger::get("svcd").error(std::string("event subscriber failed: ") + ex.what());
          }
        }
      }
      dispatch(event, data);
      position_ = event.sequence;
    }
    if (batch.size() < kBatch) return;
  }
}

// Replays the log to a resuming stream a page at a time, as fast as its peer takes it.
void EventLog::catchUp(StreamState& s) {
  const std::int64_t up_to = position_.load();
  while (s.stream->isOpen() && s.stream->queued() < kReplayWhileQueuedBelow) {
    auto page = read(s.last, up_to, s.filter.account, kReplayPage);
    for (auto& [event, data] : page) {
      if (s.wants(event)) s.stream->write(frame(event.sequence, event.type, data));
      s.last = event.sequence;
    }
    if (page.size() < kReplayPage) {
      s.last = up_to;
      return;
    }
  }
}

std::int64_t EventLog::newest() {
  Poco::Data::Session session = db_.session();
  Poco::Int64 seq = 0;
  session << "SELECT COALESCE(MAX(seq), 0) FROM svc_events", into(seq), now;
  return seq;
}

std::size_t EventLog::prune() {
  std::size_t removed = 0;
  db_.transaction([&](Poco::Data::Session& s) {
    Poco::Int64 before =
        sdk::nowMicros() - static_cast<Poco::Int64>(retention_days_) * 86400000000LL;
    Poco::Data::Statement del = (s << "DELETE FROM svc_events WHERE created_us < ?", use(before));
    removed = del.execute();
  });
  return removed;
}

void EventLog::run() {
  using Clock = std::chrono::steady_clock;
  Poco::Logger& log = Poco::Logger::get("svcd");
  auto last_ping = Clock::now();
  auto last_sweep = Clock::now();
  // Pruning follows the wall clock (sdk::nowMicros, which tests can move), every ten minutes.
  std::int64_t last_prune_us = 0;
  while (running_) {
    {
      // Local publishes wake this thread once committed; other processes' events are polled for.
      // While a ping round is under way, only look for new events between its slices.
      std::unique_lock lock(wake_mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(pinging_.empty() ? 50 : 0),
                     [this] { return woken_; });
      woken_ = false;
    }
    if (!running_) break;
    try {
      poll();
      std::vector<std::shared_ptr<StreamState>> added;
      {
        std::lock_guard lock(pending_mutex_);
        added.swap(added_);
      }
      const std::int64_t at = position_.load();
      for (auto& s : added) {
        if (s->resume_after < 0) s->resume_after = at;
        if (s->resume_after >= at) {
          // Ahead of this thread (another process handed it out, or it was stored a moment
          // ago): live from there; the poller brings what lies between.
          s->last = s->resume_after;
          live_[liveKey(s->filter.account, s->filter.identity)].push_back(s);
          continue;
        }
        Poco::Data::Session session = db_.session();
        Poco::Int64 oldest = 0;
        session << "SELECT COALESCE(MIN(seq), 0) FROM svc_events", into(oldest), now;
        if (oldest == 0) oldest = at + 1;
        if (s->resume_after < oldest - 1) {
          // The log no longer holds what came right after the resume point: say so, then
          // start from the oldest kept event.
          s->stream->write(
              "event: stream.truncated\ndata: {\"type\":\"stream.truncated\","
              "\"requested_after\":" +
              std::to_string(s->resume_after) + ",\"oldest_kept\":" + std::to_string(oldest) +
              "}\n\n");
          s->last = oldest - 1;
        } else {
          s->last = s->resume_after;
        }
        catching_up_.push_back(s);
      }
      for (std::size_t i = 0; i < catching_up_.size();) {
        auto s = catching_up_[i];
        if (s->stream->isOpen()) catchUp(*s);
        if (!s->stream->isOpen()) {
          catching_up_[i] = catching_up_.back();
          catching_up_.pop_back();
          --stream_count_;
        } else if (s->last >= position_.load()) {
          live_[liveKey(s->filter.account, s->filter.identity)].push_back(s);
          catching_up_[i] = catching_up_.back();
          catching_up_.pop_back();
        } else {
          ++i;
        }
      }
      // A ping round writes to every stream: done a slice at a time, with the events that
      // arrive meanwhile delivered between slices (10,000 sends at once held them ~100 ms).
      for (std::size_t n = 0; n < kPingSlice && !pinging_.empty(); ++n) {
        if (auto stream = pinging_.back().lock()) stream->write(": ping\n\n");
        pinging_.pop_back();
      }
      const auto now_time = Clock::now();
      // A round starts only when the last one is done: a round that outlasted the interval (a
      // slow machine, many streams) must not be joined by the next, whose streams, pinged from
      // the back, would go first again and again while those at the front waited for good.
      const bool ping =
          pinging_.empty() && now_time - last_ping >= std::chrono::seconds(ping_seconds_);
      if (ping || now_time - last_sweep >= std::chrono::seconds(1)) {
        for (auto it = live_.begin(); it != live_.end();) {
          auto& list = it->second;
          for (std::size_t i = 0; i < list.size();) {
            if (ping) pinging_.push_back(list[i]->stream);
            if (!list[i]->stream->isOpen()) {
              list[i] = list.back();
              list.pop_back();
              --stream_count_;
            } else {
              ++i;
            }
          }
          it = list.empty() ? live_.erase(it) : std::next(it);
        }
        if (ping) {
          for (auto& s : catching_up_) pinging_.push_back(s->stream);
          last_ping = now_time;
        }
        last_sweep = now_time;
      }
      if (sdk::nowMicros() - last_prune_us >= 600LL * 1000000) {
        last_prune_us = sdk::nowMicros();
        if (std::size_t n = prune()) log.information("event log: pruned " + std::to_string(n));
      }
    } catch (const std::exception& e) {
      // The database may be briefly unreachable: try again on the next round.
      log.warning(std::string("event log: ") + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

}  // namespace svc::kernel
