#include "auth/dns_resolver.h"

#include <Poco/String.h>

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace svc::plugins::email {

namespace {

thread_local std::optional<DnsResolver::Clock::time_point> t_deadline;
thread_local bool t_cache_only = false, t_missed = false;
thread_local DnsResolver::Recording* t_recording = nullptr;

// One resource record's data as DnsAnswer keeps it. @return false when it cannot be read.
bool readRecord(const ns_msg& msg, const ns_rr& rr, std::string& out) {
  const unsigned char* p = ns_rr_rdata(rr);
  const unsigned char* end = p + ns_rr_rdlen(rr);
  char name[NS_MAXDNAME];
  switch (ns_rr_type(rr)) {
    case ns_t_a:
    case ns_t_aaaa:
      out.assign(reinterpret_cast<const char*>(p), ns_rr_rdlen(rr));
      return ns_rr_rdlen(rr) == (ns_rr_type(rr) == ns_t_a ? 4 : 16);
    case ns_t_txt:
      while (p < end) {  // character-strings, joined (RFC 7208 section 3.3)
        unsigned n = *p++;
        if (p + n > end) return false;
        out.append(reinterpret_cast<const char*>(p), n);
        p += n;
      }
      return true;
    case ns_t_mx:
      if (ns_rr_rdlen(rr) < 3) return false;
      p += 2;  // the preference: SPF does not use it
      [[fallthrough]];
    case ns_t_ptr:
      if (dn_expand(ns_msg_base(msg), ns_msg_end(msg), p, name, sizeof name) < 0) return false;
      out = name;
      return true;
    default:
      return false;
  }
}

}  // namespace

DnsResolver::Deadline::Deadline(std::chrono::milliseconds budget) : previous_(t_deadline) {
  t_deadline = Clock::now() + budget;
}

DnsResolver::Deadline::~Deadline() {
  t_deadline = previous_;
}

std::optional<std::chrono::milliseconds> DnsResolver::Deadline::left() {
  if (!t_deadline) return std::nullopt;
  return std::max(
      std::chrono::milliseconds(0),
      std::chrono::duration_cast<std::chrono::milliseconds>(*t_deadline - Clock::now()));
}

DnsResolver::CacheOnly::CacheOnly() : previous_active_(t_cache_only), previous_missed_(t_missed) {
  t_cache_only = true;
  t_missed = false;
}

DnsResolver::CacheOnly::~CacheOnly() {
  t_cache_only = previous_active_;
  // An outer scope learns of this one's miss: it missed too.
  t_missed = previous_missed_ || (previous_active_ && t_missed);
}

bool DnsResolver::CacheOnly::missed() const {
  return t_missed;
}

bool DnsResolver::CacheOnly::missedHere() {
  return t_cache_only && t_missed;
}

DnsResolver::Recording::Recording() : previous_(t_recording) {
  t_recording = this;
}

DnsResolver::Recording::~Recording() {
  t_recording = previous_;
}

std::unique_ptr<DnsResolver> DnsResolver::replaying(std::vector<Recorded> answers) {
  // What came late then must not pause a zone now: filing asks in another order.
  for (auto& r : answers) r.answer.unanswered = false;
  auto given = std::make_shared<const std::vector<Recorded>>(std::move(answers));
  Options options;
  options.max_entries = 0;  // each question goes to the answers given
  return std::make_unique<DnsResolver>(
      options,
      [given](const std::string& name, int type, std::chrono::milliseconds) {
        // A question asked twice then (two signatures of one key) may have failed once: every
        // signature of that key gets the answer that did not fail. (A check made at once could
        // have judged the first temperror; here DKIM could not change the SMTP answer, and each
        // refile judges the same.)
        const DnsAnswer* found = nullptr;
        for (const auto& r : *given) {
          if (r.type != type || Poco::icompare(r.name, name) != 0) continue;
          if (r.answer.status != DnsAnswer::Status::kFailed) return r.answer;
          if (found == nullptr) found = &r.answer;
        }
        return found != nullptr ? *found : DnsAnswer{};
      },
      [] { return Clock::now(); });
}

DnsResolver::DnsResolver(std::string server, Options options)
    : DnsResolver(
          options,
          [server = std::move(server)](const std::string& name, int type,
                                       std::chrono::milliseconds timeout) {
            return ask(server, name, type, timeout);
          },
          [] { return Clock::now(); }) {}

DnsResolver::DnsResolver(Options options, Transport transport,
                         std::function<Clock::time_point()> now)
    : options_(options),
      transport_(std::move(transport)),
      now_(std::move(now)),
      cache_(options.max_entries, options.max_bytes),
      zones_(
          ZoneGuard::Options{options.failure_pause, options.server_down_zones,
                             options.max_paused_zones, options.zone_in_flight, options.zone_wait},
          now_) {}

std::size_t DnsResolver::size() const {
  return cache_.size();
}

std::size_t DnsResolver::bytes() const {
  return cache_.bytes();
}

std::size_t DnsResolver::pausedZones() const {
  return zones_.pausedZones();
}

namespace {

constexpr std::chrono::milliseconds kProbeTime{1000};

// @return the time a query may take now: the query's limit, or what is left of the thread's
// deadline when that is less.
std::chrono::milliseconds queryTime(std::chrono::milliseconds limit) {
  if (auto left = DnsResolver::Deadline::left()) return std::min(limit, *left);
  return limit;
}

}  // namespace

DnsAnswer DnsResolver::query(const std::string& name, int type) {
  DnsAnswer a = answer(name, type);
  if (t_recording != nullptr) t_recording->answers_.push_back({name, type, a});
  return a;
}

DnsAnswer DnsResolver::answer(const std::string& name, int type) {
  // Letters, digits, hyphens, underscores and dots only: the resolver library reads `\DDD`
  // escapes, so other spellings of one name would each be a zone and a cache entry of their own.
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
  if (!plain) return {DnsAnswer::Status::kNotFound, {}, 0, false};
  const std::string lower = Poco::toLower(name);
  const std::string key = std::to_string(type) + " " + lower;
  // A few rounds at most: each joins one question or asks one (a thread without a deadline must
  // not go round for ever behind askers that keep failing for want of time).
  for (int round = 0; round < 4; ++round) {
    if (auto hit = cache_.find(key, now_())) return *hit;
    if (t_cache_only) {  // nothing asked, joined or waited for: the caller checks elsewhere
      t_missed = true;
      return {};
    }
    if (queryTime(options_.query_timeout).count() == 0) return {};  // the message's time is spent
    std::promise<Landed> promise;
    std::shared_future<Landed> flight;
    {
      std::lock_guard lock(flights_mutex_);
      auto [it, mine] = flights_.try_emplace(key);
      if (mine) {
        it->second = promise.get_future().share();
      } else {
        flight = it->second;
      }
    }
    if (!flight.valid()) return askFor(name, type, lower, key, promise);
    // Another thread is asking: its answer, if it comes within this thread's time.
    ++joining_;
    const bool ready =
        flight.wait_for(queryTime(options_.query_timeout)) == std::future_status::ready;
    --joining_;
    if (!ready) return {};
    Landed landed;
    try {
      landed = flight.get();
    } catch (const std::exception&) {  // the asker could not even say how it ended
      return {};
    }
    // A failure of the asker's own (its time spent, no turn of the zone's for it) is not the
    // network's answer: with time left, this thread asks (or joins the next asker) itself.
    if (landed.asked) return landed.answer;
  }
  return {};
}

DnsAnswer DnsResolver::askFor(const std::string& name, int type, const std::string& lower,
                              const std::string& key, std::promise<Landed>& promise) {
  // The waiting threads get what this thread gets, a failure however it fails (a bad_alloc too).
  const auto land = [&](const Landed& landed) {
    {
      std::lock_guard lock(flights_mutex_);
      flights_.erase(key);
    }
    promise.set_value(landed);
  };
  Landed landed;
  bool probe = false;
  try {
    // The answer may have come between this thread's look at the cache and its flight.
    if (auto hit = cache_.find(key, now_())) {
      landed = {*hit, true};
    } else {
      landed = fetch(name, type, lower, key, probe);
    }
  } catch (...) {
    land(Landed{});
    throw;
  }
  land(landed);
  if (probe) {
    // Is the server there at all? Any reply (REFUSED from a server that does not recurse too)
    // says yes. A second at most, outside the message's own budget: once per silent spell.
    // After landing: the threads that joined this question do not wait for it.
    bool answered = false;
    try {
      answered = !transport_(".", ns_t_ns, std::min(options_.query_timeout, kProbeTime)).unanswered;
    } catch (...) {  // only bad_alloc: take the server for silent, as nothing was heard
    }
    zones_.probed(answered);
  }
  return landed.answer;
}

std::size_t DnsResolver::inFlight() const {
  std::lock_guard lock(flights_mutex_);
  return flights_.size();
}

DnsResolver::Landed DnsResolver::fetch(const std::string& name, int type, const std::string& lower,
                                       const std::string& key, bool& probe) {
  const std::string zone = dnsZone(lower);
  if (zones_.begin(zone, queryTime(options_.query_timeout)) != ZoneGuard::Turn::kGo) return {};
  // The turn is given back however this ends (a bad_alloc included): a turn kept would leave
  // the zone busy for good.
  struct Turn {
    ZoneGuard& zones;
    const std::string& zone;
    bool open = true;
    bool end(ZoneGuard::Outcome o) {
      open = false;
      return zones.end(zone, o);
    }
    ~Turn() {
      if (open) zones.end(zone, ZoneGuard::Outcome::kNotAsked);
    }
  } turn{zones_, zone};
  // While this question waited for its turn, another may have brought its answer.
  if (auto hit = cache_.find(key, now_())) return {*hit, true};
  const std::chrono::milliseconds timeout = queryTime(options_.query_timeout);
  DnsAnswer answer;
  if (timeout.count() > 0) answer = transport_(name, type, timeout);
  if (answer.status == DnsAnswer::Status::kNotFound ||
      answer.status == DnsAnswer::Status::kNoData) {
    answer.ttl = options_.negative_ttl;
  }
  answer.ttl = std::min(answer.ttl, options_.max_ttl);
  if (!answer.unanswered && answer.status != DnsAnswer::Status::kFailed && answer.ttl > 0) {
    cache_.put(key, answer, now_() + std::chrono::seconds(answer.ttl));
  }
  // Cached first: a question waiting for this turn finds the answer when it gets the turn.
  probe = turn.end(timeout.count() == 0 ? ZoneGuard::Outcome::kNotAsked
                   : answer.unanswered  ? ZoneGuard::Outcome::kUnanswered
                                        : ZoneGuard::Outcome::kAnswered);
  return {answer, timeout.count() > 0};
}

DnsAnswer DnsResolver::ask(const std::string& server, const std::string& name, int type,
                           std::chrono::milliseconds timeout) {
  DnsAnswer out;
  struct __res_state state;
  std::memset(&state, 0, sizeof state);
  if (res_ninit(&state) != 0) return out;
  struct Closer {
    struct __res_state* s;
    ~Closer() { res_nclose(s); }
  } closer{&state};
  if (!server.empty()) {
    std::string host = server;
    int port = 53;
    std::size_t colon = server.rfind(':');
    if (colon != std::string::npos) {
      host = server.substr(0, colon);
      port = std::atoi(server.substr(colon + 1).c_str());
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return out;
    state.nsaddr_list[0] = addr;
    state.nscount = 1;
  }
  // One try of at most `timeout` (whole seconds: the resolver counts no finer).
  state.retry = 1;
  state.retrans = static_cast<int>(std::max<long>(1, (timeout.count() + 999) / 1000));
  state.options |= RES_USE_EDNS0;  // DKIM keys outgrow 512 bytes
  unsigned char answer[16384];
  const auto started = Clock::now();
  int len = res_nquery(&state, name.c_str(), ns_c_in, type, answer, sizeof answer);
  if (len < 0) {
    // Failed after (nearly) the whole wait: nobody answered, as opposed to a quick SERVFAIL.
    out.unanswered = Clock::now() - started >= std::chrono::milliseconds(state.retrans * 900);
    if (state.res_h_errno == HOST_NOT_FOUND) out.status = DnsAnswer::Status::kNotFound;
    if (state.res_h_errno == NO_DATA) out.status = DnsAnswer::Status::kNoData;
    return out;
  }
  // res_nquery returns an answer's whole length even when it did not fit (a TCP answer larger
  // than the buffer): parsing that length would read past it. Too large is a failed lookup.
  if (static_cast<std::size_t>(len) > sizeof answer) return out;
  ns_msg msg;
  if (ns_initparse(answer, len, &msg) != 0) return out;
  std::uint32_t ttl = UINT32_MAX;
  for (int i = 0; i < ns_msg_count(msg, ns_s_an); ++i) {
    ns_rr rr;
    if (ns_parserr(&msg, ns_s_an, i, &rr) != 0 || ns_rr_type(rr) != type) continue;
    std::string data;
    if (!readRecord(msg, rr, data)) continue;
    out.records.push_back(std::move(data));
    ttl = std::min<std::uint32_t>(ttl, ns_rr_ttl(rr));
  }
  out.status = out.records.empty() ? DnsAnswer::Status::kNoData : DnsAnswer::Status::kOk;
  out.ttl = out.records.empty() ? 0 : ttl;
  return out;
}

}  // namespace svc::plugins::email
