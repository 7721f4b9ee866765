// The resolver's cache: answers kept for their TTL (and no longer), failures never kept,
// negative answers kept briefly, the size bounded, and a thread's deadline honoured.
#include "auth/dns_resolver.h"

#include <arpa/nameser.h>
#include <gtest/gtest.h>

namespace svc::plugins::email {
namespace {

struct FakeDns {
  int asked = 0;
  DnsAnswer next;
  DnsResolver::Clock::time_point now{};
  std::chrono::milliseconds last_timeout{0};

  DnsResolver resolver(DnsResolver::Options options = {}) {
    return DnsResolver(
        options,
        [this](const std::string&, int, std::chrono::milliseconds timeout) {
          ++asked;
          last_timeout = timeout;
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

TEST(DnsResolverTest, AfterAFailureNewQuestionsFailAtOnceForAWhile) {
  FakeDns dns;
  DnsResolver::Options o;
  o.failure_pause = std::chrono::milliseconds(5000);
  DnsResolver r = dns.resolver(o);
  dns.next = txt("cached", 300);
  r.query("cached.example", ns_t_txt);
  dns.next = DnsAnswer{};  // a quick failure (SERVFAIL): nothing is paused
  r.query("a.example", ns_t_txt);
  r.query("a.example", ns_t_txt);
  EXPECT_EQ(dns.asked, 3);
  dns.next.unanswered = true;  // the server stops answering
  EXPECT_EQ(r.query("a.example", ns_t_txt).status, DnsAnswer::Status::kFailed);
  EXPECT_EQ(dns.asked, 4);
  dns.now += std::chrono::seconds(4);
  EXPECT_EQ(r.query("b.example", ns_t_txt).status, DnsAnswer::Status::kFailed);
  EXPECT_EQ(dns.asked, 4);  // not asked: the server failed a moment ago
  EXPECT_EQ(r.query("cached.example", ns_t_txt).records.front(),
            "cached");  // the cache still serves
  dns.now += std::chrono::seconds(2);
  dns.next = txt("back", 300);
  EXPECT_EQ(r.query("b.example", ns_t_txt).records.front(), "back");
  EXPECT_EQ(dns.asked, 5);
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
