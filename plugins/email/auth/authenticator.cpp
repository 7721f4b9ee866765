#include "auth/authenticator.h"

#include "auth/checks.h"

namespace svc::plugins::email {

Authenticator::Authenticator(Options options, DnsResolver& dns)
    : options_(std::move(options)), dns_(dns) {}

Authenticator::~Authenticator() {
  stop();
}

void Authenticator::start() {
  std::lock_guard lock(mutex_);
  stopping_ = false;
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { run(); });
}

void Authenticator::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();  // the queue is drained first: every session is answered
  threads_.clear();
}

bool Authenticator::post(std::function<void()> job, std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || threads_.empty() || queue_.size() >= options_.max_queued ||
        (!queue_.empty() && queued_bytes_ + bytes > options_.max_queued_bytes)) {
      return false;
    }
    queue_.emplace_back(std::move(job), bytes);
    queued_bytes_ += bytes;
  }
  cv_.notify_one();
  return true;
}

void Authenticator::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front().first);
      queued_bytes_ -= queue_.front().second;
      queue_.pop_front();
    }
    try {
      job();
    } catch (...) {
      // A job answers its session itself (Ingest::deliverAsync); what escapes it must not end
      // the thread, or the process.
    }
  }
}

std::optional<Authenticator::Decision> Authenticator::checkCached(const SmtpClient& client,
                                                                  const std::string& mail_from,
                                                                  std::string_view data) {
  DnsResolver::CacheOnly cache_only;
  Decision d = check(client, mail_from, data);
  if (cache_only.missed()) return std::nullopt;
  return d;
}

Authenticator::Decision Authenticator::check(const SmtpClient& client, const std::string& mail_from,
                                             std::string_view data) {
  Decision d;
  Authentication& a = d.authentication;
  if (!options_.verify) {
    a.reason = "not checked: email.inbound.verify is off";
  } else {
    DnsResolver::Deadline deadline(options_.dns_budget);
    const std::string from_domain = fromDomain(data);
    prefetchDmarc(dns_, from_domain);  // the policy first, whatever the sender's zones cost
    a.spf = checkSpf(dns_, client.ip, client.helo, mail_from);
    a.dkim = checkDkim(dns_, data);
    a.dmarc = checkDmarc(dns_, from_domain, *a.spf, a.dkim);
  }
  decideVerdict(a);
  a.header = authenticationResults(a, options_.hostname);
  if (options_.enforce) d.action = dmarcAction(a.dmarc);
  if (d.action == PolicyAction::kReject) {
    d.refusal = "550 5.7.1 Message refused: " + a.dmarc->from_domain +
                " publishes DMARC p=reject and neither SPF nor DKIM passed aligned with it";
  } else if (d.action == PolicyAction::kDefer) {
    d.refusal = "451 4.7.5 Try again later: " + a.dmarc->from_domain +
                " publishes DMARC p=reject, and a DNS lookup of a domain aligned with it failed";
  }
  return d;
}

}  // namespace svc::plugins::email
