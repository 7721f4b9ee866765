#include "auth/authenticator.h"

#include "auth/checks.h"

#include <Poco/Net/IPAddress.h>
#include <Poco/String.h>

#include <algorithm>
#include <cstring>
#include <ctime>

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

bool Authenticator::post(const std::string& client, std::function<void()> job, std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || threads_.empty() || queued_ >= options_.max_queued ||
        (queued_ > 0 && queued_bytes_ + bytes > options_.max_queued_bytes)) {
      return false;
    }
    const std::string key = clientKey(client);
    auto& jobs = waiting_[key];
    if (jobs.empty()) turns_.push_back(key);
    jobs.push_back({std::move(job), bytes});
    ++queued_;
    queued_bytes_ += bytes;
  }
  cv_.notify_one();
  return true;
}

std::string Authenticator::clientKey(const std::string& ip) {
  Poco::Net::IPAddress address;
  if (!Poco::Net::IPAddress::tryParse(ip, address)) return ip;  // not an address: as written
  if (address.family() != Poco::Net::IPAddress::IPv6 || address.isIPv4Mapped()) {
    return address.toString();
  }
  // The first 64 bits (Poco's mask() does not take IPv6 addresses).
  unsigned char prefix[16] = {};
  std::memcpy(prefix, address.addr(), 8);
  return Poco::Net::IPAddress(prefix, sizeof prefix).toString() + "/64";
}

std::deque<Authenticator::Job>* Authenticator::nextTurn(std::string& client) {
  for (auto it = turns_.begin(); it != turns_.end(); ++it) {
    auto busy = running_.find(*it);
    // Stopping, every message is answered as fast as the threads go: no share holds one back.
    if (!stopping_ && busy != running_.end() && busy->second >= std::max(1, options_.per_client)) {
      continue;
    }
    client = *it;
    turns_.erase(it);
    return &waiting_[client];
  }
  return nullptr;
}

void Authenticator::run() {
  for (;;) {
    Job job;
    std::string client;
    {
      std::unique_lock lock(mutex_);
      std::deque<Job>* jobs = nullptr;
      cv_.wait(lock, [&] {
        jobs = nextTurn(client);
        return jobs != nullptr || (stopping_ && queued_ == 0);
      });
      if (!jobs) return;  // stopping, and every session answered
      job = std::move(jobs->front());
      jobs->pop_front();
      if (jobs->empty()) {
        waiting_.erase(client);
      } else {
        turns_.push_back(client);  // its next job after the other clients' turns
      }
      --queued_;
      queued_bytes_ -= job.bytes;
      ++running_[client];
    }
    try {
      job.run();
    } catch (...) {
      // A job answers its session itself (Ingest::deliverAsync); what escapes it must not end
      // the thread, or the process.
    }
    bool more, stopping;
    {
      std::lock_guard lock(mutex_);
      if (--running_[client] == 0) running_.erase(client);
      more = waiting_.count(client) > 0;
      stopping = stopping_;
    }
    if (stopping) {
      cv_.notify_all();  // the threads waiting for the last jobs to end may leave now
    } else if (more) {
      cv_.notify_one();  // this client's next job may go now
    }
  }
}

std::optional<Authenticator::Decision> Authenticator::checkCached(const SmtpClient& client,
                                                                  const std::string& mail_from,
                                                                  std::string_view data,
                                                                  bool may_defer) {
  DnsResolver::CacheOnly cache_only;
  Decision d = check(client, mail_from, data, may_defer);
  if (cache_only.missed()) return std::nullopt;
  return d;
}

// SPF passed for the From's own domain (the envelope sender's, not the HELO name's): aligned
// however the record asks (strict or relaxed), so DMARC passes whatever DKIM says.
bool Authenticator::dmarcPassesBySpf(const std::string& from_domain, const SpfOutcome& spf) {
  const std::size_t at = spf.mail_from.rfind('@');
  return !from_domain.empty() && spf.result == "pass" && at != std::string::npos &&
         Poco::icompare(spf.mail_from.substr(at + 1), from_domain) == 0;
}

Authenticator::Decision Authenticator::check(const SmtpClient& client, const std::string& mail_from,
                                             std::string_view data, bool may_defer) {
  Decision d;
  Authentication& a = d.authentication;
  if (!options_.verify) {
    a.reason = "not checked: email.inbound.verify is off";
    return decided(d);
  }
  DnsResolver::Deadline deadline(options_.dns_budget);
  const std::string from_domain = fromDomain(data);
  // The policy first, whatever the sender's zones cost; its answers kept for complete().
  bool may_reject;
  std::vector<DnsResolver::Recorded> asked;
  {
    DnsResolver::Recording policy;
    may_reject = dmarcMayReject(dns_, from_domain);
    asked = policy.answers();
  }
  // From the cache only, a miss means the message is checked again on a checking thread:
  // the costly parts (the body's hash, RSA) are not done twice.
  if (DnsResolver::CacheOnly::missedHere()) return d;
  a.spf = checkSpf(dns_, client.ip, client.helo, mail_from);
  if (DnsResolver::CacheOnly::missedHere()) return d;
  if (may_defer && (!options_.enforce || !may_reject || dmarcPassesBySpf(from_domain, *a.spf))) {
    // Nothing DKIM says can change the answer: it is checked when the message is filed, from
    // the answers asked now.
    DnsResolver::Recording keys;
    prefetchDkimKeys(dns_, data);
    if (DnsResolver::CacheOnly::missedHere()) return d;
    asked.insert(asked.end(), keys.answers().begin(), keys.answers().end());
    d.later =
        DeferredChecks{*a.spf, static_cast<std::int64_t>(std::time(nullptr)), std::move(asked)};
    return d;
  }
  a.dkim = checkDkim(dns_, data);
  a.dmarc = checkDmarc(dns_, from_domain, *a.spf, a.dkim);
  return decided(d);
}

Authenticator::Decision Authenticator::complete(const DeferredChecks& later,
                                                std::string_view data) const {
  const std::unique_ptr<DnsResolver> asked = DnsResolver::replaying(later.answers);
  Decision d;
  Authentication& a = d.authentication;
  a.spf = later.spf;
  a.dkim = checkDkim(*asked, data, later.arrived);
  a.dmarc = checkDmarc(*asked, fromDomain(data), later.spf, a.dkim);
  decided(d);
  if (d.action != PolicyAction::kAccept) d.action = PolicyAction::kQuarantine;
  d.refusal.clear();
  return d;
}

Authenticator::Decision Authenticator::incomplete(const DeferredChecks* later,
                                                  std::string_view data) const {
  Decision d;
  Authentication& a = d.authentication;
  if (later) a.spf = later->spf;
  a.dkim.push_back({"temperror", "", ""});  // as verifyDkim reports a message it cannot check
  a.dmarc = DmarcOutcome{"temperror", "", fromDomain(data)};
  decideVerdict(a);
  a.reason = "the checks could not be completed when the message was filed";
  a.header = authenticationResults(a, options_.hostname);
  if (options_.enforce) d.action = PolicyAction::kQuarantine;
  return d;
}

Authenticator::Decision& Authenticator::decided(Decision& d) const {
  Authentication& a = d.authentication;
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
