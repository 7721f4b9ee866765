// The durable event log and the Server-Sent Events streams that read it.
//
// publish() appends to the svc_events table, inside the caller's transaction when it gives one.
// On SQLite a counter row taken in that transaction numbers events and serializes their commits;
// on MySQL/MariaDB events are numbered after they commit, by one svcd at a time, so writes share
// no row (event_sequencer.h). Either way a reader that has seen sequence N has seen everything
// before it, in every svcd process sharing the database. One event thread per process reads the log
// (woken by local publishes, and every 50 ms for other processes' events) and hands each event,
// once and in order, to in-process subscribers and to the SSE streams held in the kernel's hub.
#pragma once

#include "database.h"
#include "event_sequencer.h"
#include "event_types.h"

#include <svc/sdk/events.h>
#include <svc/sdk/http.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

namespace svc::kernel {

/// The kernel's migrations for the event log.
std::vector<sdk::Migration> eventLogMigrations();

/// What one SSE stream wants.
struct StreamFilter {
  std::string account;          ///< Only this account's events.
  std::string identity;         ///< Only this identity's, when not empty.
  std::set<std::string> types;  ///< Only these types, when not empty.
};

class EventLog : public sdk::EventBus {
 public:
  /// @param retention_days how long events are kept. @param ping_seconds SSE keep-alive comment.
  EventLog(SqlDatabase& db, int retention_days, int ping_seconds = 15);
  ~EventLog() override;

  /// Gives the log the declared event types (before start()): publish() then reports an
  /// undeclared type, and an oversized object keeps its type's key fields. Without it (tests),
  /// every type is accepted silently.
  void setEventTypes(EventTypeRegistry* types) { types_ = types; }
  /// With server.check_responses: every published object is checked against its type's declared
  /// object, and one that does not fit is logged as an error (`event_mismatch`), which the test
  /// suites fail on.
  void checkObjects(bool on) { check_objects_ = on; }

  void start();
  void stop();

  sdk::Event publish(const std::string& type, const std::string& account,
                     const std::string& identity, Poco::JSON::Object::Ptr object,
                     Poco::Data::Session* transaction) override;
  std::uint64_t subscribe(std::function<void(const sdk::Event&)> fn) override;
  void unsubscribe(std::uint64_t token) override;
  std::vector<sdk::Event> read(std::int64_t after, std::size_t limit) override;
  /// The types plugins declare (the kernel's own, which the log never stores, left out).
  std::vector<std::string> declaredTypes() const override;

  /// Adds an SSE stream (already begun). @param resume_after the Last-Event-ID, or newest() taken
  /// before the client saw the stream open, and never past it. Events after it are replayed from
  /// the log first (a `stream.truncated` event first when it is older than the log keeps), then
  /// live ones follow.
  void addStream(std::shared_ptr<sdk::Stream> stream, StreamFilter filter,
                 std::int64_t resume_after);
  /// @return SSE streams open now.
  std::size_t streamCount() const { return stream_count_.load(); }
  /// @return the last sequence the event thread has handed out.
  std::int64_t position() const { return position_.load(); }
  /// @return the newest sequence stored (committed) by any process.
  std::int64_t newest();
  /// Deletes events older than the retention. @return how many.
  std::size_t prune();

 private:
  struct Subscriber;
  struct StreamState;
  void run();
  /// Has the event thread look at the log (and its new streams) now.
  void wakeEventThread();
  /// SQLite: the next sequence, taken in the transaction of s (the counter row stays locked
  /// until it ends, so events commit in sequence order).
  std::int64_t numberInTransaction(Poco::Data::Session& s);
  /// Has the sequencer (MySQL) number what this process just committed.
  void wakeSequencer();
  void poll();
  void catchUp(StreamState& s);
  void dispatch(const sdk::Event& e, const std::string& frame);
  std::vector<std::pair<sdk::Event, std::string>> read(std::int64_t after, std::int64_t up_to,
                                                       const std::string& account,
                                                       std::size_t limit);

  SqlDatabase& db_;
  EventTypeRegistry* types_ = nullptr;
  bool check_objects_ = false;
  const int retention_days_;
  const int ping_seconds_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool woken_ = false;
  std::atomic<std::int64_t> position_{0};
  std::atomic<std::size_t> stream_count_{0};
  std::unique_ptr<EventSequencer> sequencer_;  // MySQL/MariaDB only

  std::mutex subscribers_mutex_;
  std::uint64_t next_token_ = 1;
  std::map<std::uint64_t, std::function<void(const sdk::Event&)>> subscribers_;

  // New streams and closed ones, handed to the event thread.
  std::mutex pending_mutex_;
  std::vector<std::shared_ptr<StreamState>> added_;
  // Owned by the event thread only.
  std::unordered_map<std::string, std::vector<std::shared_ptr<StreamState>>> live_;  // by account
  std::vector<std::shared_ptr<StreamState>> catching_up_;
  std::vector<std::weak_ptr<sdk::Stream>> pinging_;  // streams this ping round has yet to ping
};

}  // namespace svc::kernel
