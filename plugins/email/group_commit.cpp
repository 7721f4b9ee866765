#include "group_commit.h"

namespace svc::plugins::email {

void GroupCommit::run(const Work& work) {
  Job job{&work, nullptr, false};
  std::unique_lock lock(mutex_);
  queue_.push_back(&job);
  while (!job.done) {
    if (leading_) {
      cv_.wait(lock);
      continue;
    }
    leading_ = true;
    std::deque<Job*> batch;
    while (!queue_.empty() && batch.size() < max_batch_) {
      batch.push_back(queue_.front());
      queue_.pop_front();
    }
    lock.unlock();
    commit(batch);
    lock.lock();
    for (Job* j : batch) j->done = true;
    leading_ = false;
    cv_.notify_all();
  }
  if (job.error) std::rethrow_exception(job.error);
}

void GroupCommit::commit(std::deque<Job*>& batch) {
  try {
    db_.transaction([&](Poco::Data::Session& tx) {
      for (Job* j : batch) (*j->work)(tx);
    });
    return;
  } catch (...) {
    if (batch.size() == 1) {
      batch.front()->error = std::current_exception();
      return;
    }
  }
  for (Job* j : batch) {  // one of them failed the batch: find out which, alone
    try {
      db_.transaction([&](Poco::Data::Session& tx) { (*j->work)(tx); });
    } catch (...) {
      j->error = std::current_exception();
    }
  }
}

}  // namespace svc::plugins::email
