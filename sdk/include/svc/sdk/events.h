// Publishing events.
//
// A plugin publishes what happened (`email.received`, `key.revoked`, ...) with the account and
// identity it concerns and the object as its own GET shows it, minus bodies and secret values.
// Consumers (the SSE stream, other plugins) subscribe in-process; a consumer that must not miss
// an event across restarts (outbound webhooks) keeps its own cursor, a sequence number, and reads
// the stored log after it with read(). The log is durable and shared by every svcd process on the
// database, numbered in commit order, and kept `events.retention_days`.
#pragma once

#include <Poco/Data/Session.h>
#include <Poco/JSON/Object.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace svc::sdk {

/// One event.
struct Event {
  /// The event's place in the log, assigned by the kernel; increases. On MySQL/MariaDB events
  /// are numbered just after they commit, so what publish() returns there has 0; what
  /// subscribers and read() see always has it.
  std::int64_t sequence = 0;
  std::string id;                  ///< A UUID assigned by the kernel.
  std::string type;                ///< For example `email.received`.
  std::int64_t created_us = 0;     ///< Microseconds since the epoch, assigned by the kernel.
  std::string account;             ///< The account it concerns.
  std::string identity;            ///< The identity it concerns, or empty.
  Poco::JSON::Object::Ptr object;  ///< The resource as its GET shows it, minus secrets.
};

/// Publishes events and lets consumers subscribe. Available to every plugin.
class EventBus {
 public:
  virtual ~EventBus();
  /// Publishes an event. @param type the type. @param account the account. @param identity the
  /// identity or empty. @param object the resource. @param transaction the session of the
  /// transaction that made the change, so the event is stored with it; nullptr when none.
  /// @return the stored event: its id, time and, on SQLite, its sequence (0 on MySQL/MariaDB,
  /// which numbers it after the commit). To act from "this event on", keep its id.
  virtual Event publish(const std::string& type, const std::string& account,
                        const std::string& identity, Poco::JSON::Object::Ptr object,
                        Poco::Data::Session* transaction) = 0;
  /// Calls fn for every event published from now on, by any svcd process on this database, in
  /// sequence order, on the kernel's event thread, after the change committed. fn must not block.
  /// @param fn the consumer. @return a token for unsubscribe().
  virtual std::uint64_t subscribe(std::function<void(const Event&)> fn) = 0;
  /// Stops calling a consumer. @param token what subscribe() returned.
  virtual void unsubscribe(std::uint64_t token) = 0;
  /// Reads stored (committed) events after a sequence number, from the durable log that every
  /// svcd process on the database shares, in sequence order. A reader that has seen sequence N
  /// has seen every event numbered below it: no event is numbered below one already committed
  /// with its number. Events older than
  /// the log keeps are gone. The default (a bus without a durable log, such as a test's stand-in)
  /// reads nothing. @param after the last sequence already seen (0: from the oldest kept).
  /// @param limit the most events to read. @return them, objects included.
  virtual std::vector<Event> read(std::int64_t after, std::size_t limit);
  /// @return every event type the loaded plugins declare (PluginInfo::events), sorted: what a
  /// consumer may ask for by name. The default (a stand-in without declarations) is none.
  virtual std::vector<std::string> declaredTypes() const;
};

}  // namespace svc::sdk
