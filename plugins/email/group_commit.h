// Group commit: many small writes that must each be durable before they are acknowledged, in
// few transactions. A caller submits its work and waits; whoever finds no commit under way leads,
// running everything queued so far in one transaction (one fsync for all of it), while the
// next callers queue up behind. A batch that fails is retried one job per transaction, so one
// bad job fails alone.
#pragma once

#include <svc/sdk/storage.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>

namespace svc::plugins::email {

class GroupCommit {
 public:
  using Work = std::function<void(Poco::Data::Session&)>;
  /// @param db the database. @param max_batch most jobs in one transaction.
  explicit GroupCommit(sdk::Database& db, std::size_t max_batch = 128)
      : db_(db), max_batch_(max_batch) {}
  /// Runs work in a transaction shared with other callers' and returns once it committed.
  /// @throws what work threw (then none of its changes were kept).
  void run(const Work& work);

 private:
  struct Job {
    const Work* work;
    std::exception_ptr error;
    bool done = false;
  };
  void commit(std::deque<Job*>& batch);
  sdk::Database& db_;
  const std::size_t max_batch_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job*> queue_;
  bool leading_ = false;
};

}  // namespace svc::plugins::email
