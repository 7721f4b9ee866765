// Held requests do not outlive their access: the kernel's side of sdk::Revocation.
//
// Every held request (an event stream, a wait, an MCP tool call) is tracked with what opened it.
// A revocation is a row of svc_revocations written in the revoker's transaction; one thread per
// process reads the rows (woken by this process's commits, else every 200 ms for the others')
// and ends the held requests each covers. Rows are read by time with a wide overlap, not by an
// auto-increment (whose order is not the commit order on MySQL), and remembered by id, so a row
// committed late is still seen and none is applied twice. The clocks of the machines sharing a
// database are taken to agree within the overlap (as Galera's own do, by NTP).
#pragma once

#include "database.h"

#include <svc/sdk/auth.h>
#include <svc/sdk/http.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace svc::kernel {

/// The kernel's migrations for svc_revocations (recorded as `kernel.access`).
std::vector<sdk::Migration> accessWatchMigrations();

/// What a held request was opened with.
struct Holder {
  std::string account;         ///< The principal's account.
  std::string credential;      ///< Principal::credential.
  std::string identity;        ///< The identity the request targets, if any.
  std::string bound_identity;  ///< An identity key's identity, if any.
};

class AccessWatch : public sdk::AccessRevocations {
 public:
  using Clock = std::chrono::steady_clock;
  /// How far back each read looks, for rows committed late or stamped by a clock behind ours.
  static constexpr std::int64_t kOverlapMicros = 30'000'000;

  explicit AccessWatch(SqlDatabase& db);
  ~AccessWatch() override;
  AccessWatch(const AccessWatch&) = delete;
  AccessWatch& operator=(const AccessWatch&) = delete;

  /// Starts the reading thread (revocations made before this watch was are not applied).
  void start();
  void stop();

  void revoke(Poco::Data::Session& s, const sdk::Revocation& revocation) override;

  /// Tracks a held request until it closes. A revocation covering it that this process received
  /// after `authenticated_at` ends it at once (it was authenticated before the revocation was
  /// seen here, and held after). @param stream the held request. @param holder what opened it.
  void track(const std::shared_ptr<sdk::Stream>& stream, Holder holder,
             Clock::time_point authenticated_at);

  /// @return held requests tracked and still open.
  std::size_t trackedCount() const;

  /// Reads the revocations not seen yet and applies them (the thread's work; tests call it).
  void poll();

  /// @return whether `revocation` covers a request opened with `holder`.
  static bool covers(const sdk::Revocation& revocation, const Holder& holder);

 private:
  struct Tracked {
    std::weak_ptr<sdk::Stream> stream;
    Holder holder;
  };
  struct Received {
    sdk::Revocation revocation;
    Clock::time_point at;
  };
  void run();
  void apply(const sdk::Revocation& revocation);
  static void end(sdk::Stream& stream, const sdk::Revocation& revocation);
  void wake();
  /// Drops the closed requests of a list.
  static void dropClosed(std::vector<Tracked>& list);
  /// Drops closed requests and the accounts left with none.
  void sweep();
  void prune(std::int64_t now_us);

  SqlDatabase& db_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::vector<Tracked>> by_account_;
  std::deque<Received> recent_;               // what this process applied, newest last
  std::map<std::string, std::int64_t> seen_;  // row id -> created_us, within the overlap
  const std::int64_t started_us_;             // revocations made before are not this process's
  std::int64_t read_from_us_;                 // the next read looks from here
  std::uint64_t polls_ = 0;

  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool woken_ = false;
  bool running_ = false;
  std::thread thread_;
  std::int64_t last_prune_us_ = 0;
};

}  // namespace svc::kernel
