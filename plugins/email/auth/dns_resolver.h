// The DNS resolver of inbound mail checks (SPF, DKIM, DMARC): A, AAAA, MX, PTR and TXT queries
// to the server `email.dns.server` names (or the system's), answers cached by their TTL and shared
// by every SMTP session, in a cache bounded by entries and by bytes (dns_cache.h).
//
// Every query has a time limit, and so has each message's whole check (a Deadline on the calling
// thread): a DNS server that never answers costs a message at most the deadline, and its checks
// then say temperror. A failed query is not cached. What a zone that does not answer, or answers
// slowly, may cost is bounded per zone (dns_zones.h): its further questions fail at once for
// `failure_pause`, and at most `zone_in_flight` of its questions wait on the network at once,
// while other zones are still asked; only several silent zones in a row, and then the server
// silent to a question of its own, pause every question.
// (A quick failure, SERVFAIL for one broken domain, pauses nothing: the server is there.)
// Questions for the same name and type asked at once go to the network once: the others wait
// for that answer (within their own time) and take no turn of the zone's, so a burst of mail from
// one domain on a cold cache costs one question per record, not one per message.
#pragma once

#include "auth/dns_answer.h"
#include "auth/dns_cache.h"
#include "auth/dns_zones.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace svc::plugins::email {

class DnsResolver {
 public:
  using Clock = std::chrono::steady_clock;
  /// Asks a server: (name, type, timeout) -> answer. Tests give a fake one.
  using Transport = std::function<DnsAnswer(const std::string&, int, std::chrono::milliseconds)>;
  struct Options {
    std::size_t max_entries = 20000;
    std::size_t max_bytes = 16u << 20;  ///< Names and records in the cache, at most.
    std::chrono::milliseconds query_timeout{2000};
    std::uint32_t negative_ttl = 60;  ///< Seconds a "no such record" is kept.
    std::uint32_t max_ttl = 3600;     ///< Longer TTLs are cut to this.
    /// How long a zone that left a question unanswered is not asked again (and the server,
    /// after `server_down_zones` distinct zones in a row went unanswered).
    std::chrono::milliseconds failure_pause{5000};
    std::size_t server_down_zones = 3;
    std::size_t max_paused_zones = 1000;
    std::size_t zone_in_flight = 2;  ///< Questions to one zone waiting on the network, at most.
    std::chrono::milliseconds zone_wait{200};  ///< Beyond them, the longest wait for a turn.
  };

  /// @param server `host:port` (IPv4) or empty for the system's resolver.
  DnsResolver(std::string server, Options options);
  /// Answers come from transport, time from now: for tests, and for replaying().
  DnsResolver(Options options, Transport transport, std::function<Clock::time_point()> now);

  /// @param type ns_t_a, ns_t_aaaa, ns_t_mx, ns_t_ptr or ns_t_txt. @return the answer, from the
  /// cache while its TTL lasts. Past the calling thread's deadline: kFailed without asking.
  DnsAnswer query(const std::string& name, int type);
  /// @return entries in the cache now.
  std::size_t size() const;
  /// @return the bytes the cache counts against max_bytes now.
  std::size_t bytes() const;
  /// @return zones paused (or whose pause ended but was not yet dropped).
  std::size_t pausedZones() const;
  /// @return questions on their way now (each asked by one thread for every thread wanting it).
  std::size_t inFlight() const;
  /// @return threads waiting for another's question now.
  std::size_t joining() const { return joining_.load(); }

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

  /// While it lives, the calling thread asks the cache alone: a question the cache cannot answer
  /// fails at once (kFailed: nothing is sent, cached or paused) and missed() says so, so a check
  /// made under it is thrown away and made again where waiting is allowed. The SMTP listener's
  /// threads check mail this way, which must never wait on the network.
  class CacheOnly {
   public:
    CacheOnly();
    ~CacheOnly();
    CacheOnly(const CacheOnly&) = delete;
    CacheOnly& operator=(const CacheOnly&) = delete;
    /// @return true when a question could not be answered from the cache.
    bool missed() const;
    /// @return true when this thread is in a scope that has missed already: the rest of its
    /// work would be thrown away.
    static bool missedHere();

   private:
    bool previous_active_, previous_missed_;
  };

  /// An answer query() gave, with its question.
  struct Recorded {
    std::string name;
    int type = 0;
    DnsAnswer answer;
  };
  /// While it lives, every answer query() gives the calling thread is kept, so that a check can
  /// be done again later from those answers alone (replaying()), asking no server anything.
  class Recording {
   public:
    Recording();
    ~Recording();
    Recording(const Recording&) = delete;
    Recording& operator=(const Recording&) = delete;
    /// @return the answers given so far, in order.
    const std::vector<Recorded>& answers() const { return answers_; }

   private:
    friend class DnsResolver;
    Recording* previous_;
    std::vector<Recorded> answers_;
  };
  /// @return a resolver that answers the questions of answers with their answers and any other
  /// with kFailed (temperror), at once: no network, no cache of its own to outlive it. Not to be
  /// asked under CacheOnly or a spent Deadline, which fail every question before it is asked.
  static std::unique_ptr<DnsResolver> replaying(std::vector<Recorded> answers);

  /// The real transport: one query to server (or the system's resolver), within timeout.
  static DnsAnswer ask(const std::string& server, const std::string& name, int type,
                       std::chrono::milliseconds timeout);

 private:
  /// How a question ended for the threads that joined it.
  struct Landed {
    DnsAnswer answer;    ///< A failure unless asked.
    bool asked = false;  ///< From the network (or the cache), not the asker's own lack of time.
  };
  /// Asks for the threads joining this question (its flight is `promise`), lands the answer for
  /// them, then probes the server when the zone guard asks for it.
  DnsAnswer askFor(const std::string& name, int type, const std::string& lower,
                   const std::string& key, std::promise<Landed>& promise);
  /// Asks the network (within the zone's bounds) and caches the answer. @param key the cache key.
  /// @param probe set when the server should be probed (several zones silent in a row).
  Landed fetch(const std::string& name, int type, const std::string& lower, const std::string& key,
               bool& probe);
  /// query() without its recording.
  DnsAnswer answer(const std::string& name, int type);

  Options options_;
  Transport transport_;
  mutable std::mutex flights_mutex_;
  std::unordered_map<std::string, std::shared_future<Landed>> flights_;  // by cache key
  std::atomic<std::size_t> joining_{0};
  std::function<Clock::time_point()> now_;
  DnsCache cache_;
  ZoneGuard zones_;
};

}  // namespace svc::plugins::email
