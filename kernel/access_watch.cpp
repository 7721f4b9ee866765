#include "access_watch.h"

#include "pipeline.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Logger.h>
#include <Poco/Tuple.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>

using namespace Poco::Data::Keywords;

namespace svc::kernel {

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(200);
constexpr auto kRememberApplied = std::chrono::seconds(60);  // for requests held after auth
// How long after a revocation an authenticator may still accept what it revoked (the auth
// plugin's caches follow revocations every 500 ms).
constexpr auto kAuthenticatorLag = std::chrono::seconds(2);
constexpr int kSweepEveryPolls = 50;  // closed requests leave the lists every ~10 s
constexpr std::int64_t kKeepRowsMicros = 3600LL * 1000000;  // rows older than an hour go
constexpr std::int64_t kPruneEveryMicros = 600LL * 1000000;

// The machine's clock, not sdk::nowMicros(): a test moving one svcd's clock must not hide its
// revocations from another's reads.
std::int64_t wallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::vector<sdk::Migration> accessWatchMigrations() {
  sdk::Migration m;
  m.version = 1;
  m.description = "revocations that end held requests on every svcd";
  const std::string table =
      "CREATE TABLE svc_revocations (id CHAR(36) NOT NULL PRIMARY KEY, "
      "account_id VARCHAR(64) NOT NULL, credential VARCHAR(128) NOT NULL, "
      "identity_id VARCHAR(64) NOT NULL, status INTEGER NOT NULL, code VARCHAR(64) NOT NULL, "
      "detail VARCHAR(500) NOT NULL, created_us BIGINT NOT NULL)";
  const std::string index = "CREATE INDEX svc_revocations_created ON svc_revocations (created_us)";
  m.sqlite = {table, index};
  m.mysql = {table, index};
  return {m};
}

AccessWatch::AccessWatch(SqlDatabase& db)
    : db_(db), started_us_(wallMicros()), read_from_us_(started_us_ - kOverlapMicros) {}

AccessWatch::~AccessWatch() {
  stop();
}

void AccessWatch::start() {
  {
    std::lock_guard lock(wake_mutex_);
    if (running_) return;
    running_ = true;
  }
  thread_ = std::thread([this] { run(); });
}

void AccessWatch::stop() {
  {
    std::lock_guard lock(wake_mutex_);
    if (!running_) return;
    running_ = false;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AccessWatch::revoke(Poco::Data::Session& s, const sdk::Revocation& r) {
  if (r.account_id.empty()) throw std::invalid_argument("a revocation names its account");
  // What the columns hold: a longer value would fail the revoking transaction on MariaDB.
  if (r.account_id.size() > 64 || r.credential.size() > 128 || r.identity.size() > 64 ||
      r.code.size() > 64) {
    throw std::invalid_argument("a revocation's account, credential, identity or code is too long");
  }
  std::string id = sdk::newUuid();
  std::string account = r.account_id, credential = r.credential, identity = r.identity;
  std::string code = r.code, detail = sdk::truncateUtf8(r.detail, 500);
  int status = r.status;
  Poco::Int64 created = wallMicros();
  s << "INSERT INTO svc_revocations (id, account_id, credential, identity_id, status, code, "
       "detail, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      use(id), use(account), use(credential), use(identity), use(status), use(code), use(detail),
      use(created), now;
  db_.afterCommit([this] { wake(); });
}

void AccessWatch::wake() {
  {
    std::lock_guard lock(wake_mutex_);
    woken_ = true;
  }
  wake_.notify_all();
}

void AccessWatch::track(const std::shared_ptr<sdk::Stream>& stream, Holder holder,
                        Clock::time_point authenticated_at) {
  std::vector<sdk::Revocation> missed;
  {
    std::lock_guard lock(mutex_);
    for (const auto& seen : recent_) {
      // A revoked credential never works again, so any revocation of it ends the request: the
      // authenticator may have let it through a moment after this watch applied the revocation
      // (its caches follow within a second). One of a whole account (a suspension, which may be
      // lifted) counts when it came after the authentication, or within that second before it.
      const bool in_time =
          !seen.revocation.credential.empty() || seen.at + kAuthenticatorLag >= authenticated_at;
      if (in_time && covers(seen.revocation, holder)) missed.push_back(seen.revocation);
    }
    if (missed.empty()) {
      auto& list = by_account_[holder.account];
      // Closed ones leave as new ones come, so a list never holds more than were open at once.
      dropClosed(list);
      list.push_back({stream, std::move(holder)});
      return;
    }
  }
  end(*stream, missed.front());
}

std::size_t AccessWatch::trackedCount() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& [account, list] : by_account_) {
    for (const auto& t : list) {
      if (auto s = t.stream.lock(); s && s->isOpen()) ++n;
    }
  }
  return n;
}

bool AccessWatch::covers(const sdk::Revocation& r, const Holder& h) {
  if (r.account_id != h.account) return false;
  if (!r.credential.empty() && r.credential != h.credential) return false;
  if (!r.identity.empty() && r.identity != h.identity && r.identity != h.bound_identity) {
    return false;
  }
  return true;
}

void AccessWatch::end(sdk::Stream& stream, const sdk::Revocation& r) {
  // A held answer gets the error; a stream already under way has sent its status, so it closes.
  if (!stream.respond(
          errorResponse(sdk::HttpError(r.status, r.code, r.detail), stream.requestId()))) {
    stream.finish();
  }
}

void AccessWatch::apply(const sdk::Revocation& r) {
  std::vector<std::shared_ptr<sdk::Stream>> ending;
  {
    std::lock_guard lock(mutex_);
    recent_.push_back({r, Clock::now()});
    while (!recent_.empty() && Clock::now() - recent_.front().at > kRememberApplied) {
      recent_.pop_front();
    }
    auto it = by_account_.find(r.account_id);
    if (it == by_account_.end()) return;
    auto& list = it->second;
    for (std::size_t i = 0; i < list.size();) {
      auto stream = list[i].stream.lock();
      const bool gone = !stream || !stream->isOpen();
      if (gone || covers(r, list[i].holder)) {
        if (!gone) ending.push_back(std::move(stream));
        list[i] = std::move(list.back());
        list.pop_back();
      } else {
        ++i;
      }
    }
    if (list.empty()) by_account_.erase(it);
  }
  for (auto& stream : ending) end(*stream, r);
}

void AccessWatch::poll() {
  using Row = Poco::Tuple<std::string, std::string, std::string, std::string, int, std::string,
                          std::string, Poco::Int64>;
  std::vector<Row> rows;
  Poco::Int64 from = read_from_us_;
  const std::int64_t read_at = wallMicros();
  {
    Poco::Data::Session s = db_.session();
    s << "SELECT id, account_id, credential, identity_id, status, code, detail, created_us "
         "FROM svc_revocations WHERE created_us > ? ORDER BY created_us",
        use(from), into(rows), now;
  }
  std::vector<sdk::Revocation> fresh;
  for (const Row& row : rows) {
    if (!seen_.emplace(row.get<0>(), row.get<7>()).second) continue;
    // Made before this watch was: nothing this process holds was opened before it.
    if (row.get<7>() < started_us_) continue;
    sdk::Revocation r;
    r.account_id = row.get<1>();
    r.credential = row.get<2>();
    r.identity = row.get<3>();
    r.status = row.get<4>();
    r.code = row.get<5>();
    r.detail = row.get<6>();
    fresh.push_back(std::move(r));
  }
  read_from_us_ = read_at - kOverlapMicros;
  for (auto it = seen_.begin(); it != seen_.end();) {
    it = it->second <= read_from_us_ ? seen_.erase(it) : std::next(it);
  }
  for (const auto& r : fresh) apply(r);
  if (++polls_ % kSweepEveryPolls == 0) sweep();
  prune(read_at);
}

void AccessWatch::dropClosed(std::vector<Tracked>& list) {
  list.erase(std::remove_if(list.begin(), list.end(),
                            [](const Tracked& t) {
                              auto open = t.stream.lock();
                              return !open || !open->isOpen();
                            }),
             list.end());
}

void AccessWatch::sweep() {
  std::lock_guard lock(mutex_);
  for (auto it = by_account_.begin(); it != by_account_.end();) {
    auto& list = it->second;
    dropClosed(list);
    it = list.empty() ? by_account_.erase(it) : std::next(it);
  }
}

void AccessWatch::prune(std::int64_t now_us) {
  if (now_us - last_prune_us_ < kPruneEveryMicros) return;
  last_prune_us_ = now_us;
  Poco::Int64 before = now_us - kKeepRowsMicros;
  db_.transaction([&](Poco::Data::Session& s) {
    s << "DELETE FROM svc_revocations WHERE created_us < ?", use(before), now;
  });
}

void AccessWatch::run() {
  Poco::Logger& log = Poco::Logger::get("svcd");
  std::unique_lock lock(wake_mutex_);
  while (running_) {
    lock.unlock();
    try {
      poll();
    } catch (const std::exception& e) {
      // The database may be briefly unreachable: the next read looks back far enough.
      log.warning(std::string("revocations: ") + e.what());
    }
    lock.lock();
    wake_.wait_for(lock, kPollInterval, [this] { return woken_ || !running_; });
    woken_ = false;
  }
}

}  // namespace svc::kernel
