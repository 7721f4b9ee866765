// The resolver's cache: answers kept for their TTL (and no longer), failures never kept,
// negative answers kept briefly, the size bounded (entries and bytes), and a thread's deadline
// honoured. What a silent or slow zone may cost: a pause of that zone alone (of the server only
// after several silent zones in a row), and at most two of its questions on the network at once;
// the same question asked at once goes out once.
#include "auth/dns_resolver.h"

#include <arpa/nameser.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <thread>

namespace svc::plugins::email {
namespace {

struct FakeDns {
  int asked = 0;
  DnsAnswer next;
  std::set<std::string> silent;  ///< Names whose questions go unanswered.
  DnsResolver::Clock::time_point now{};
  std::chrono::milliseconds last_timeout{0};

  DnsResolver resolver(DnsResolver::Options options = {}) {
    return DnsResolver(
        options,
        [this](const std::string& name, int, std::chrono::milliseconds timeout) {
          ++asked;
          last_timeout = timeout;
          if (silent.count(name)) return DnsAnswer{DnsAnswer::Status::kFailed, {}, 0, true};
          return next;
        },
        [this] { return now; });
  }
};

DnsAnswer txt(const std::string& text, std::uint32_t ttl) {
  return {DnsAnswer::Status::kOk, {text}, ttl};
}

TEST(DnsResolverTest, AnswersAreKeptForTheirTtl) {
  FakeDns dns;
  DnsResolver r = dns.resolver();
  dns.next = txt("v=spf1 -all", 300);
  EXPECT_EQ(r.query("example.org", ns_t_txt).records.front(), "v=spf1 -all");
  dns.next = txt("v=spf1 +all", 300);
  dns.now += std::chrono::seconds(299);
  EXPECT_EQ(r.query("EXAMPLE.org", ns_t_txt).records.front(), "v=spf1 -all");  // any case
  EXPECT_EQ(dns.asked, 1);
  dns.now += std::chrono::seconds(2);  // past the TTL: asked again
  EXPECT_EQ(r.query("example.org", ns_t_txt).records.front(), "v=spf1 +all");
  EXPECT_EQ(dns.asked, 2);
  // Another type is another question.
  r.query("example.org", ns_t_a);
  EXPECT_EQ(dns.asked, 3);
}

// The listener's threads check mail asking the cache alone: a miss asks nobody, keeps nothing,
// and says it missed, so the check is made again where it may wait; a hit is the cached answer.
TEST(DnsResolverTest, CacheOnlyAsksNobodyAndSaysWhenItMissed) {
  FakeDns dns;
  DnsResolver r = dns.resolver();
  dns.next = txt("v=spf1 -all", 300);
  {
    DnsResolver::CacheOnly cache_only;
    EXPECT_FALSE(cache_only.missed());
    EXPECT_EQ(r.query("example.org", ns_t_txt).status, DnsAnswer::Status::kFailed);
    EXPECT_TRUE(cache_only.missed());
  }
  EXPECT_EQ(dns.asked, 0);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.query("example.org", ns_t_txt).records.front(), "v=spf1 -all");  // asked now
  EXPECT_EQ(dns.asked, 1);
  {
    DnsResolver::CacheOnly cache_only;
    EXPECT_EQ(r.query("example.org", ns_t_txt).records.front(), "v=spf1 -all");
    EXPECT_FALSE(cache_only.missed());
  }
  // Outside the scope the thread asks the network again.
  r.query("other.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 2);
}

// A check stops early once its scope has missed (its work would be thrown away), and a scope
// inside another tells the outer one of its miss.
TEST(DnsResolverTest, AMissIsSeenWhileInTheScopeAndByAnOuterScope) {
  FakeDns dns;
  DnsResolver r = dns.resolver();
  EXPECT_FALSE(DnsResolver::CacheOnly::missedHere());  // no scope
  DnsResolver::CacheOnly outer;
  EXPECT_FALSE(DnsResolver::CacheOnly::missedHere());
  {
    DnsResolver::CacheOnly inner;
    r.query("example.org", ns_t_txt);
    EXPECT_TRUE(DnsResolver::CacheOnly::missedHere());
  }
  EXPECT_TRUE(outer.missed());
  EXPECT_TRUE(DnsResolver::CacheOnly::missedHere());
}

TEST(DnsResolverTest, ATtlOfZeroAndFailuresAreNotKept) {
  FakeDns dns;
  DnsResolver r = dns.resolver();
  dns.next = txt("x", 0);
  r.query("a.example", ns_t_txt);
  r.query("a.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 2);
  dns.next = DnsAnswer{};  // kFailed
  EXPECT_EQ(r.query("b.example", ns_t_txt).status, DnsAnswer::Status::kFailed);
  dns.now += std::chrono::seconds(6);  // past the pause after a failure: asked again
  r.query("b.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 4);
}

TEST(DnsResolverTest, ZonesAreOrganizationalDomainsAndReverseNetworks) {
  EXPECT_EQ(dnsZone("s1._domainkey.Pass.test."), "pass.test");
  EXPECT_EQ(dnsZone("_dmarc.mail.example.co.uk"), "example.co.uk");
  EXPECT_EQ(dnsZone("x1.x2.x3.attacker.example"), "attacker.example");
  EXPECT_EQ(dnsZone("example.org"), "example.org");
  EXPECT_EQ(dnsZone("a.b.example.co.uk"), "example.co.uk");
  EXPECT_EQ(dnsZone("example.co.uk"), "example.co.uk");
  EXPECT_EQ(dnsZone("test"), "test");
  EXPECT_EQ(dnsZone("4.3.2.1.in-addr.arpa"), "3.2.1.in-addr.arpa");
  EXPECT_EQ(dnsZone("2.1.in-addr.arpa"), "2.1.in-addr.arpa");
  const std::string nibbles = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.";
  EXPECT_EQ(dnsZone(nibbles + "8.b.d.0.1.0.0.2.1.2.3.4.ip6.arpa"),
            "8.b.d.0.1.0.0.2.1.2.3.4.ip6.arpa");
}

TEST(DnsResolverTest, ASilentZoneIsPausedAloneAndOthersAreStillAsked) {
  FakeDns dns;
  DnsResolver::Options o;
  o.failure_pause = std::chrono::milliseconds(5000);
  DnsResolver r = dns.resolver(o);
  dns.next = txt("cached", 300);
  r.query("cached.attacker.example", ns_t_txt);
  dns.next = DnsAnswer{};  // a quick failure (SERVFAIL): nothing is paused
  r.query("a.example", ns_t_txt);
  r.query("a.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 3);
  dns.silent = {"x.attacker.example"};  // the attacker's zone stops answering
  EXPECT_EQ(r.query("x.attacker.example", ns_t_txt).status, DnsAnswer::Status::kFailed);
  EXPECT_EQ(dns.asked, 4);
  dns.now += std::chrono::seconds(4);
  // Its other names (wildcards, _dmarc.) fail at once: the zone failed a moment ago ...
  EXPECT_EQ(r.query("_dmarc.y.attacker.example", ns_t_txt).status, DnsAnswer::Status::kFailed);
  EXPECT_EQ(dns.asked, 4);
  EXPECT_EQ(r.query("cached.attacker.example", ns_t_txt).records.front(), "cached");
  // ... while every other sender's zone is still asked, over and over.
  dns.next = txt("v=DMARC1; p=none", 300);
  for (const char* other : {"_dmarc.example.org", "_dmarc.example.net", "_dmarc.example.com"}) {
    EXPECT_EQ(r.query(other, ns_t_txt).status, DnsAnswer::Status::kOk) << other;
  }
  EXPECT_EQ(dns.asked, 7);
  EXPECT_EQ(r.pausedZones(), 1u);
  dns.now += std::chrono::seconds(2);  // the pause is over: the zone is asked again
  dns.next = txt("back", 300);
  EXPECT_EQ(r.query("z.attacker.example", ns_t_txt).records.front(), "back");
  EXPECT_EQ(dns.asked, 8);
}

TEST(DnsResolverTest, SeveralSilentZonesInARowPauseEveryQuestion) {
  FakeDns dns;
  DnsResolver::Options o;
  o.failure_pause = std::chrono::milliseconds(5000);
  o.server_down_zones = 3;
  DnsResolver r = dns.resolver(o);
  dns.next = txt("cached", 300);
  r.query("cached.example", ns_t_txt);
  dns.silent = {"a.example", "b.example", "c.example", "d.example"};  // the server is down
  r.query("a.example", ns_t_txt);
  dns.now += std::chrono::seconds(1);
  r.query("b.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 3);
  EXPECT_EQ(r.query("example.org", ns_t_txt).status, DnsAnswer::Status::kOk);  // asked: 2 < 3
  EXPECT_EQ(dns.asked, 4);
  // That answer came between: the count starts again, and takes three more silent zones.
  r.query("c.example", ns_t_txt);
  r.query("d.example", ns_t_txt);
  EXPECT_EQ(r.query("example.net", ns_t_txt).status, DnsAnswer::Status::kOk);
  EXPECT_EQ(dns.asked, 7);
  dns.silent = {"e.example", "f.example", "g.example", "."};  // "." too: the server is gone
  r.query("e.example", ns_t_txt);
  r.query("f.example", ns_t_txt);
  r.query("f.example", ns_t_txt);  // paused: not asked, and the same zone counts once
  EXPECT_EQ(dns.asked, 9);
  r.query("g.example", ns_t_txt);  // a third distinct zone without an answer between ...
  EXPECT_EQ(dns.asked, 11);        // ... and the server's own probe, unanswered too
  dns.now += std::chrono::seconds(4);
  EXPECT_EQ(r.query("example.com", ns_t_txt).status, DnsAnswer::Status::kFailed);
  EXPECT_EQ(dns.asked, 11);  // not asked: the server is presumed down
  EXPECT_EQ(r.query("cached.example", ns_t_txt).records.front(), "cached");  // the cache serves
  dns.now += std::chrono::seconds(2);
  EXPECT_EQ(r.query("example.com", ns_t_txt).status, DnsAnswer::Status::kOk);
  EXPECT_EQ(dns.asked, 12);
}

// An attacker can make its zones silent, and have them asked at once so that nothing is
// answered between; it cannot make the server ignore a question of its own.
TEST(DnsResolverTest, SilentZonesOfAServerThatAnswersItsProbePauseOnlyThemselves) {
  FakeDns dns;
  DnsResolver r = dns.resolver();
  dns.next = txt("x", 300);
  dns.silent = {"evil1.example", "evil2.example", "evil3.example", "evil4.example"};
  for (const char* name : {"evil1.example", "evil2.example", "evil3.example"}) {
    r.query(name, ns_t_txt);
  }
  EXPECT_EQ(dns.asked, 4);  // three zones and the probe of the server, which answered
  EXPECT_EQ(r.query("example.org", ns_t_txt).status, DnsAnswer::Status::kOk);
  EXPECT_EQ(dns.asked, 5);
  r.query("evil2.example", ns_t_txt);  // still paused itself
  EXPECT_EQ(dns.asked, 5);
  EXPECT_EQ(r.pausedZones(), 3u);
}

TEST(DnsResolverTest, SilentZonesFarApartDoNotPauseTheServer) {
  FakeDns dns;
  DnsResolver::Options o;
  o.failure_pause = std::chrono::milliseconds(5000);
  DnsResolver r = dns.resolver(o);
  dns.next = txt("x", 300);
  dns.silent = {"a.example", "b.example", "c.example"};
  for (const char* name : {"a.example", "b.example", "c.example"}) {
    r.query(name, ns_t_txt);
    dns.now += std::chrono::seconds(6);  // each one's pause window is over before the next
  }
  EXPECT_EQ(r.query("example.org", ns_t_txt).status, DnsAnswer::Status::kOk);
  EXPECT_EQ(dns.asked, 4);
}

TEST(DnsResolverTest, ThePausedZonesAreBounded) {
  FakeDns dns;
  DnsResolver::Options o;
  o.max_paused_zones = 10;
  DnsResolver r = dns.resolver(o);
  dns.next = txt("x", 0);
  for (int i = 0; i < 100; ++i) {
    const std::string name = "n" + std::to_string(i) + ".example";
    dns.silent.insert(name);
    r.query(name, ns_t_txt);
    r.query("answered.example", ns_t_txt);  // the server answers between: never paused whole
    dns.now += std::chrono::milliseconds(1);
  }
  EXPECT_EQ(r.pausedZones(), 10u);
  // The newest pauses are the ones kept.
  const int before = dns.asked;
  r.query("n99.example", ns_t_txt);
  EXPECT_EQ(dns.asked, before);
}

TEST(DnsResolverTest, ReverseNamesArePausedByNetwork) {
  FakeDns dns;
  DnsResolver r = dns.resolver();
  dns.next = txt("x", 0);
  dns.silent = {"4.3.2.1.in-addr.arpa"};
  r.query("4.3.2.1.in-addr.arpa", ns_t_ptr);
  r.query("5.3.2.1.in-addr.arpa", ns_t_ptr);  // the same /24: paused
  EXPECT_EQ(dns.asked, 1);
  r.query("4.3.9.1.in-addr.arpa", ns_t_ptr);  // another network: asked
  EXPECT_EQ(dns.asked, 2);
}

TEST(DnsResolverTest, NoSuchRecordIsKeptForTheNegativeTtl) {
  FakeDns dns;
  DnsResolver::Options o;
  o.negative_ttl = 60;
  DnsResolver r = dns.resolver(o);
  dns.next = DnsAnswer{DnsAnswer::Status::kNotFound, {}, 0};
  EXPECT_EQ(r.query("_dmarc.none.example", ns_t_txt).status, DnsAnswer::Status::kNotFound);
  dns.now += std::chrono::seconds(59);
  r.query("_dmarc.none.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 1);
  dns.now += std::chrono::seconds(2);
  r.query("_dmarc.none.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 2);
}

TEST(DnsResolverTest, LongTtlsAreCutAndTheCacheIsBounded) {
  FakeDns dns;
  DnsResolver::Options o;
  o.max_entries = 100;
  o.max_ttl = 600;
  DnsResolver r = dns.resolver(o);
  dns.next = txt("x", 86400);
  r.query("long.example", ns_t_txt);
  dns.now += std::chrono::seconds(601);
  r.query("long.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 2);
  for (int i = 0; i < 1000; ++i) r.query("n" + std::to_string(i) + ".example", ns_t_txt);
  EXPECT_LE(r.size(), 100u);
  EXPECT_GT(r.size(), 50u);
}

// An answer of many tiny records costs what it holds in memory (a string each), not its text.
TEST(DnsResolverTest, ManyTinyRecordsCostTheirStrings) {
  FakeDns dns;
  DnsResolver::Options o;
  o.max_bytes = 1 << 20;
  DnsResolver r = dns.resolver(o);
  DnsAnswer many = txt("", 3600);
  many.records.assign(2000, "");
  dns.next = many;
  for (int i = 0; i < 100; ++i) r.query("m" + std::to_string(i) + ".example", ns_t_txt);
  EXPECT_LE(r.size(), (1u << 20) / (2000 * sizeof(std::string)));
  EXPECT_GE(r.size(), 1u);
}

TEST(DnsResolverTest, TheCacheIsBoundedByBytesToo) {
  FakeDns dns;
  DnsResolver::Options o;
  o.max_entries = 20000;
  o.max_bytes = 1 << 20;
  DnsResolver r = dns.resolver(o);
  dns.next = txt(std::string(16000, 'k'), 3600);  // a large TXT answer, as DKIM keys can be
  for (int i = 0; i < 500; ++i) r.query("s" + std::to_string(i) + "._domainkey.example", ns_t_txt);
  EXPECT_LE(r.bytes(), o.max_bytes);
  EXPECT_LE(r.size(), (1u << 20) / 16000);
  EXPECT_GE(r.size(), (1u << 20) / 16000 - 2);
  // The most recent are kept, the oldest went.
  const int before = dns.asked;
  r.query("s499._domainkey.example", ns_t_txt);
  EXPECT_EQ(dns.asked, before);
  r.query("s0._domainkey.example", ns_t_txt);
  EXPECT_EQ(dns.asked, before + 1);
  // An answer larger than the whole bound is not kept (nor does it empty the cache).
  const std::size_t size = r.size();
  dns.next = txt(std::string(2 << 20, 'k'), 3600);
  r.query("huge.example", ns_t_txt);
  r.query("huge.example", ns_t_txt);
  EXPECT_EQ(dns.asked, before + 3);
  EXPECT_EQ(r.size(), size);
}

TEST(DnsResolverTest, TheLeastRecentlyUsedGoFirst) {
  FakeDns dns;
  DnsResolver::Options o;
  o.max_entries = 3;
  DnsResolver r = dns.resolver(o);
  dns.next = txt("x", 300);
  for (const char* n : {"a.example", "b.example", "c.example"}) r.query(n, ns_t_txt);
  r.query("a.example", ns_t_txt);  // used again: b is now the least recent
  r.query("d.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 4);
  r.query("a.example", ns_t_txt);
  r.query("c.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 4);
  r.query("b.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 5);
  EXPECT_EQ(r.size(), 3u);
}

// Names asked once (a flood of mail from ever new domains) churn only the answers not used
// again: the senders' answers in use stay cached, as long as they are used.
TEST(DnsResolverTest, AFloodOfNamesAskedOnceLeavesTheAnswersInUse) {
  FakeDns dns;
  DnsResolver::Options o;
  o.max_entries = 10;
  DnsResolver r = dns.resolver(o);
  dns.next = txt("x", 3600);
  for (const char* n : {"a.example", "b.example"}) {
    r.query(n, ns_t_txt);
    r.query(n, ns_t_txt);  // used again
  }
  EXPECT_EQ(dns.asked, 2);
  for (int i = 0; i < 100; ++i) r.query("flood" + std::to_string(i) + ".example", ns_t_txt);
  EXPECT_EQ(dns.asked, 102);
  r.query("a.example", ns_t_txt);
  r.query("b.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 102);
  EXPECT_EQ(r.size(), 10u);
  // Used answers take at most four fifths: the rest is left for new ones to prove themselves.
  for (int i = 0; i < 20; ++i) {
    const std::string n = "used" + std::to_string(i) + ".example";
    r.query(n, ns_t_txt);
    r.query(n, ns_t_txt);
  }
  const int before = dns.asked;
  r.query("new.example", ns_t_txt);
  r.query("new2.example", ns_t_txt);
  r.query("new.example", ns_t_txt);  // still there
  EXPECT_EQ(dns.asked, before + 2);
  EXPECT_EQ(r.size(), 10u);
}

// A transport whose questions under slow.example wait until released; the rest answer at once.
// Polls until done, for at most 30 s: a loaded machine is slow, never wrong; a test that missed
// what it waits for fails instead of hanging.
bool eventually(const std::function<bool()>& done) {
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       std::chrono::steady_clock::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

struct BlockingDns {
  std::mutex mutex;
  std::condition_variable cv;
  bool released = false;
  int waiting = 0;
  std::vector<std::string> asked;

  DnsResolver resolver(DnsResolver::Options options) {
    return DnsResolver(
        options,
        [this](const std::string& name, int, std::chrono::milliseconds) {
          std::unique_lock lock(mutex);
          asked.push_back(name);
          if (name.find("slow.example") != std::string::npos) {
            ++waiting;
            cv.notify_all();
            cv.wait_for(lock, std::chrono::seconds(60), [this] { return released; });
            --waiting;
          }
          return DnsAnswer{DnsAnswer::Status::kOk, {"answer"}, 300};
        },
        [] { return DnsResolver::Clock::now(); });
  }
  void waitForWaiting(int n) {
    std::unique_lock lock(mutex);
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return waiting == n; });
  }
  void release() {
    std::lock_guard lock(mutex);
    released = true;
    cv.notify_all();
  }
  std::size_t count() {
    std::lock_guard lock(mutex);
    return asked.size();
  }
};

TEST(DnsResolverTest, ASlowZoneHoldsAtMostTwoQuestionsOnTheNetwork) {
  BlockingDns dns;
  DnsResolver::Options o;
  o.zone_in_flight = 2;
  o.zone_wait = std::chrono::milliseconds(50);
  DnsResolver r = dns.resolver(o);
  // Two messages' questions to the slow zone (distinct wildcard names) wait on the network.
  auto first = std::async(std::launch::async, [&] { return r.query("a.slow.example", ns_t_txt); });
  auto second =
      std::async(std::launch::async, [&] { return r.query("_dmarc.b.slow.example", ns_t_txt); });
  dns.waitForWaiting(2);
  // A third fails at once (temperror for its message), without being asked ...
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(r.query("c.slow.example", ns_t_txt).status, DnsAnswer::Status::kFailed);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10))
      << "waited for the slow zone's answers";
  EXPECT_EQ(dns.count(), 2u);
  // ... while other zones are answered meanwhile.
  EXPECT_EQ(r.query("example.org", ns_t_txt).status, DnsAnswer::Status::kOk);
  dns.release();
  EXPECT_EQ(first.get().status, DnsAnswer::Status::kOk);
  EXPECT_EQ(second.get().status, DnsAnswer::Status::kOk);
  // The turns are free again, and the slow answers did not pause the zone.
  EXPECT_EQ(r.query("c.slow.example", ns_t_txt).status, DnsAnswer::Status::kOk);
  EXPECT_EQ(dns.count(), 4u);
}

TEST(DnsResolverTest, AQuestionWaitingForATurnTakesTheAnswerAnotherBrought) {
  BlockingDns dns;
  DnsResolver::Options o;
  o.zone_in_flight = 1;
  o.zone_wait = std::chrono::milliseconds(5000);
  DnsResolver r = dns.resolver(o);
  auto first = std::async(std::launch::async, [&] { return r.query("slow.example", ns_t_txt); });
  dns.waitForWaiting(1);
  auto second = std::async(std::launch::async, [&] { return r.query("slow.example", ns_t_txt); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the second waits for a turn
  dns.release();
  EXPECT_EQ(first.get().records.front(), "answer");
  EXPECT_EQ(second.get().records.front(), "answer");
  EXPECT_EQ(dns.count(), 1u);  // asked once: the second found the answer in the cache
}

TEST(DnsResolverTest, ABurstOfTheSameQuestionIsAskedOnceAndTakesNoTurns) {
  // Eight messages from one domain on a cold cache, its answer slower than a turn's wait: before,
  // one question went out and the others failed their turn (temperror, 451 under p=reject).
  BlockingDns dns;
  DnsResolver::Options o;
  o.zone_in_flight = 1;
  o.zone_wait = std::chrono::milliseconds(20);
  DnsResolver r = dns.resolver(o);
  std::vector<std::future<DnsAnswer>> burst;
  for (int i = 0; i < 8; ++i) {
    burst.push_back(std::async(std::launch::async, [&] {
      DnsResolver::Deadline d(std::chrono::seconds(30));
      return r.query("_dmarc.slow.example", ns_t_txt);
    }));
  }
  dns.waitForWaiting(1);
  // The other seven join the question on its way (none fails its turn meanwhile).
  for (int i = 0; i < 3000 && r.joining() < 7; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(r.joining(), 7u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // five turns' waits
  EXPECT_EQ(r.inFlight(), 1u);
  dns.release();
  for (auto& f : burst) {
    DnsAnswer a = f.get();
    ASSERT_EQ(a.status, DnsAnswer::Status::kOk);
    EXPECT_EQ(a.records.front(), "answer");
  }
  EXPECT_EQ(dns.count(), 1u);
  EXPECT_EQ(r.inFlight(), 0u);
}

TEST(DnsResolverTest, AQuestionJoiningAnotherWaitsNoLongerThanItsOwnTime) {
  BlockingDns dns;
  DnsResolver r = dns.resolver({});
  auto first = std::async(std::launch::async, [&] { return r.query("slow.example", ns_t_txt); });
  dns.waitForWaiting(1);
  {
    DnsResolver::Deadline d(std::chrono::milliseconds(100));
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(r.query("slow.example", ns_t_txt).status, DnsAnswer::Status::kFailed);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10))
        << "waited for the other's answer";
  }
  dns.release();
  EXPECT_EQ(first.get().status, DnsAnswer::Status::kOk);  // the one asking is not cut short
  EXPECT_EQ(dns.count(), 1u);
}

TEST(DnsResolverTest, AnAskerThatThrowsLeavesTheQuestionToThoseJoiningIt) {
  // A thrown asking (bad_alloc) is no answer from the network: the thread that joined it asks
  // itself, and nothing is left in flight.
  std::atomic<int> asked{0};
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  DnsResolver r(
      {},
      [&](const std::string&, int, std::chrono::milliseconds) -> DnsAnswer {
        if (++asked == 1) {
          gate.wait();
          throw std::bad_alloc();
        }
        return txt("answer", 60);
      },
      [] { return DnsResolver::Clock::now(); });
  auto first = std::async(std::launch::async, [&] { return r.query("a.example", ns_t_txt); });
  ASSERT_TRUE(eventually([&] { return asked.load() != 0; }));
  auto second = std::async(std::launch::async, [&] { return r.query("a.example", ns_t_txt); });
  const bool joined = eventually([&] { return r.joining() == 1u; });
  go.set_value();  // before an ASSERT can return: first waits on the gate
  ASSERT_TRUE(joined);
  EXPECT_THROW(first.get(), std::bad_alloc);
  EXPECT_EQ(second.get().records.front(), "answer");
  EXPECT_EQ(r.inFlight(), 0u);
  EXPECT_EQ(asked.load(), 2);
}

TEST(DnsResolverTest, AnAskerOutOfTimeDoesNotFailTheQuestionForThoseJoiningIt) {
  // The asker waits for a turn of a busy zone with little time left and gives up; the thread
  // that joined it, with time to spare, asks for itself and gets the answer.
  BlockingDns dns;
  DnsResolver::Options o;
  o.zone_in_flight = 1;
  // The patient one waits for the zone's turn from its join until busy is let go: seconds on a
  // loaded machine (5 s once failed it under a parallel sanitizer build), so only deadlines bound
  // it.
  o.zone_wait = std::chrono::seconds(60);
  // Nor by the query timeout (2 s by default, hurried's deadline too): the patient one joins a
  // moment after hurried asked, so its wait for hurried's end would run out with it (CI once).
  o.query_timeout = std::chrono::seconds(60);
  DnsResolver r = dns.resolver(o);
  auto busy = std::async(std::launch::async, [&] { return r.query("a.slow.example", ns_t_txt); });
  dns.waitForWaiting(1);  // the zone's one turn is taken
  // Long enough for the test to see it waiting and to join it on a loaded machine; the waits
  // for those are bounded, so a test that missed it fails rather than hangs.
  auto hurried = std::async(std::launch::async, [&] {
    DnsResolver::Deadline d(std::chrono::seconds(2));
    return r.query("b.slow.example", ns_t_txt);
  });
  const bool hurried_waits = eventually([&] { return r.inFlight() == 2u; });
  std::future<DnsAnswer> patient;
  if (hurried_waits) {
    patient = std::async(std::launch::async, [&] {
      DnsResolver::Deadline d(std::chrono::seconds(30));
      return r.query("b.slow.example", ns_t_txt);
    });
  }
  const bool joined = hurried_waits && eventually([&] { return r.joining() == 1u; });
  EXPECT_EQ(hurried.get().status, DnsAnswer::Status::kFailed);  // its own time ran out
  if (!joined) dns.release();
  ASSERT_TRUE(hurried_waits) << "hurried was never seen waiting for a turn";
  ASSERT_TRUE(joined) << "patient never joined hurried's question";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  dns.release();
  EXPECT_EQ(busy.get().status, DnsAnswer::Status::kOk);
  EXPECT_EQ(patient.get().status, DnsAnswer::Status::kOk);
}

TEST(DnsResolverTest, ADeadlineBoundsEveryQueryOnItsThread) {
  FakeDns dns;
  DnsResolver::Options o;
  o.query_timeout = std::chrono::milliseconds(2000);
  DnsResolver r = dns.resolver(o);
  dns.next = txt("x", 0);
  r.query("a.example", ns_t_txt);
  EXPECT_EQ(dns.last_timeout.count(), 2000);
  {
    DnsResolver::Deadline d(std::chrono::milliseconds(500));
    r.query("a.example", ns_t_txt);
    EXPECT_LE(dns.last_timeout.count(), 500);
  }
  {
    DnsResolver::Deadline spent(std::chrono::milliseconds(0));
    const int before = dns.asked;
    EXPECT_EQ(r.query("a.example", ns_t_txt).status, DnsAnswer::Status::kFailed);
    EXPECT_EQ(dns.asked, before);  // not even asked
  }
  EXPECT_FALSE(DnsResolver::Deadline::left());
}

}  // namespace
}  // namespace svc::plugins::email
