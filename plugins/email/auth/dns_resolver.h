// The DNS resolver of inbound mail checks (SPF, DKIM, DMARC): A, AAAA, MX, PTR and TXT queries
// to the server `email.dns.server` names (or the system's), answers cached by their TTL and shared
// by every SMTP session, in a cache of bounded size.
//
// Every query has a time limit, and so has each message's whole check (a Deadline on the calling
// thread): a DNS server that never answers costs a message at most the deadline, and its checks
// then say temperror. A failed query is not cached. When the server did not answer at all (the
// query ran out of time), for `failure_pause` after, questions not in the cache fail at once
// instead of waiting out the same dead server again: an outage costs each message nothing, not
// seconds, and the mail waiting for its checks does not pile up. (A quick failure, SERVFAIL for
// one broken domain, pauses nothing: the server is there.)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace svc::plugins::email {

struct DnsAnswer {
  enum class Status { kOk, kNotFound, kNoData, kFailed };
  Status status = Status::kFailed;
  /// TXT: each record's strings joined; A and AAAA: the 4 or 16 address bytes; MX, PTR: names.
  std::vector<std::string> records;
  std::uint32_t ttl = 0;    ///< Seconds (the smallest of the records').
  bool unanswered = false;  ///< kFailed because the server said nothing within the time.
};

class DnsResolver {
 public:
  using Clock = std::chrono::steady_clock;
  /// Asks a server: (name, type, timeout) -> answer. Tests give a fake one.
  using Transport = std::function<DnsAnswer(const std::string&, int, std::chrono::milliseconds)>;
  struct Options {
    std::size_t max_entries = 20000;
    std::chrono::milliseconds query_timeout{2000};
    std::uint32_t negative_ttl = 60;  ///< Seconds a "no such record" is kept.
    std::uint32_t max_ttl = 3600;     ///< Longer TTLs are cut to this.
    std::chrono::milliseconds failure_pause{5000};
  };

  /// @param server `host:port` (IPv4) or empty for the system's resolver.
  DnsResolver(std::string server, Options options);
  /// For tests: answers come from transport, time from now.
  DnsResolver(Options options, Transport transport, std::function<Clock::time_point()> now);

  /// @param type ns_t_a, ns_t_aaaa, ns_t_mx, ns_t_ptr or ns_t_txt. @return the answer, from the
  /// cache while its TTL lasts. Past the calling thread's deadline: kFailed without asking.
  DnsAnswer query(const std::string& name, int type);
  /// @return entries in the cache now.
  std::size_t size() const;

  /// Bounds the DNS time of everything the calling thread asks while it lives.
  class Deadline {
   public:
    explicit Deadline(std::chrono::milliseconds budget);
    ~Deadline();
    Deadline(const Deadline&) = delete;
    Deadline& operator=(const Deadline&) = delete;
    /// @return the time left on this thread's deadline (none set: nullopt).
    static std::optional<std::chrono::milliseconds> left();

   private:
    std::optional<Clock::time_point> previous_;
  };

  /// The real transport: one query to server (or the system's resolver), within timeout.
  static DnsAnswer ask(const std::string& server, const std::string& name, int type,
                       std::chrono::milliseconds timeout);

 private:
  struct Entry {
    DnsAnswer answer;
    Clock::time_point expires;
  };
  void store(const std::string& key, const DnsAnswer& answer, Clock::time_point now);

  Options options_;
  Transport transport_;
  std::function<Clock::time_point()> now_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> cache_;
  Clock::time_point failing_until_{};  // guarded by mutex_
};

}  // namespace svc::plugins::email
