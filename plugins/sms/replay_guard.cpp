#include "replay_guard.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Session.h>

#include <algorithm>

using namespace Poco::Data::Keywords;

namespace svc::plugins::sms {

namespace {

// How often old rows are deleted: hourly, or as often as the window, when that is shorter.
constexpr std::int64_t kPruneEveryUs = 3600LL * 1000000;

}  // namespace

sdk::Migration ReplayGuard::migration(int version) {
  return sdk::Migration::portable(
      version, "Twilio webhook requests seen (replays refused)",
      {"CREATE TABLE sms_twilio_seen (digest CHAR(64) NOT NULL PRIMARY KEY, seen_us BIGINT NOT "
       "NULL)",
       "CREATE INDEX sms_twilio_seen_time ON sms_twilio_seen (seen_us)"});
}

ReplayGuard::ReplayGuard(sdk::Database& db, std::int64_t window_us)
    : db_(db), window_us_(window_us) {}

void ReplayGuard::prune(std::int64_t at) {
  std::int64_t last = last_prune_us_.load();
  if (at - last < std::min(kPruneEveryUs, window_us_)) return;
  if (!last_prune_us_.compare_exchange_strong(last, at)) return;  // another thread prunes
  std::int64_t before = at - window_us_;
  Poco::Data::Session s = db_.session();
  s << "DELETE FROM sms_twilio_seen WHERE seen_us < ?", use(before), now;
}

bool ReplayGuard::admit(const std::string& key) {
  std::int64_t at = sdk::nowMicros();
  prune(at);
  std::string digest = key;
  Poco::Data::Session s = db_.session();
  // The primary key decides between two copies arriving at once: one row is inserted.
  Poco::Data::Statement insert =
      (s << (db_.dialect() == sdk::Dialect::kSqlite ? "INSERT OR IGNORE" : "INSERT IGNORE") +
                std::string(" INTO sms_twilio_seen (digest, seen_us) VALUES (?, ?)"),
       use(digest), use(at));
  return insert.execute() == 1;
}

void ReplayGuard::forget(const std::string& key) {
  std::string digest = key;
  Poco::Data::Session s = db_.session();
  s << "DELETE FROM sms_twilio_seen WHERE digest = ?", use(digest), now;
}

}  // namespace svc::plugins::sms
