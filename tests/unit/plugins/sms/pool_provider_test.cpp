// The pool provider: the operator's numbers, by country, in the order listed; everything else
// through its transport.
#include "pool_provider.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <stdexcept>

namespace svc::plugins::sms {
namespace {

// A transport that records what reaches it.
struct RecordingTransport : SmsProvider {
  std::vector<std::string> sent;
  int routes_registered = 0;
  std::string name() const override { return "recording"; }
  std::optional<Number> acquire(const std::string&,
                                const std::function<bool(const std::string&)>&) override {
    throw std::logic_error("the pool must not buy numbers");
  }
  void release(const Number&) override { throw std::logic_error("the pool must not release"); }
  Delivery send(const std::string& id, const std::string& from, const std::string& to,
                const std::string& body) override {
    sent.push_back(id + " " + from + " " + to + " " + body);
    return {"queued", "SM1", "", ""};
  }
  void registerRoutes(sdk::RouteRegistry&) override { ++routes_registered; }
};

struct NoRoutes : sdk::RouteRegistry {
  void add(sdk::Route) override {}
};

TEST(PoolNumbers, TakeTheirCountryFromTheCallingCodeOrTheirPrefix) {
  const auto numbers = parsePoolNumbers(
      " +12025550101, +447700900101 ,ca:+14165550100,+353851234567, +4915112345678,,");
  ASSERT_EQ(numbers.size(), 5u);
  EXPECT_EQ(numbers[0].e164, "+12025550101");
  EXPECT_EQ(numbers[0].country, "US");
  EXPECT_EQ(numbers[1].country, "GB");
  EXPECT_EQ(numbers[2].e164, "+14165550100");
  EXPECT_EQ(numbers[2].country, "CA");
  EXPECT_EQ(numbers[3].country, "IE");  // +353, not +35
  EXPECT_EQ(numbers[4].country, "DE");
  EXPECT_TRUE(parsePoolNumbers("").empty());
}

TEST(PoolNumbers, RefuseWhatIsNotUsable) {
  for (const char* bad :
       {"12025550101", "+1202555010a", "+0123456789", "+1234567890123456", "+123456", "+2125550101",
        "USA:+12025550101", "1:+12025550101", "+12025550101,+12025550101"}) {
    EXPECT_THROW(parsePoolNumbers(bad), std::runtime_error) << bad;
  }
  EXPECT_EQ(parsePoolNumbers("MA:+212612345678").at(0).country, "MA");
  try {
    parsePoolNumbers("+2125550101");
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("sms.pool.numbers"), std::string::npos);
  }
}

TEST(PoolProvider, HandsOutTheCountrysNumbersInTurnAndKeepsThemOnRelease) {
  auto transport = std::make_unique<RecordingTransport>();
  PoolProvider pool(parsePoolNumbers("+12025550101,+447700900101,+12025550102"),
                    std::move(transport));
  EXPECT_EQ(pool.name(), "pool");
  std::set<std::string> held;
  const auto taken = [&](const std::string& n) { return held.count(n) != 0; };
  auto first = pool.acquire("US", taken);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->e164, "+12025550101");
  EXPECT_EQ(first->ref, "");
  held.insert(first->e164);
  auto second = pool.acquire("US", taken);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->e164, "+12025550102");
  held.insert(second->e164);
  EXPECT_FALSE(pool.acquire("US", taken));
  EXPECT_FALSE(pool.acquire("FR", taken));
  EXPECT_EQ(pool.acquire("GB", taken)->e164, "+447700900101");
  pool.release(*second);  // stays the operator's: free again once nobody holds it
  held.erase(second->e164);
  EXPECT_EQ(pool.acquire("US", taken)->e164, "+12025550102");
}

TEST(PoolProvider, ServesTheCountriesOfItsNumbersWhetherOrNotTheyAreTaken) {
  // A country outside this set can never get a number here (400); one in it may run out (503).
  PoolProvider pool(parsePoolNumbers("+12025550101,+447700900101,+12025550102"),
                    std::make_unique<RecordingTransport>());
  ASSERT_TRUE(pool.countries().has_value());
  EXPECT_EQ(*pool.countries(), (std::set<std::string>{"GB", "US"}));
  PoolProvider empty({}, std::make_unique<RecordingTransport>());
  ASSERT_TRUE(empty.countries().has_value());
  EXPECT_TRUE(empty.countries()->empty());
  EXPECT_FALSE(RecordingTransport().countries().has_value()) << "a carrier cannot tell";
}

TEST(PoolProvider, SendsAndTakesWebhooksThroughItsTransport) {
  auto transport = std::make_unique<RecordingTransport>();
  RecordingTransport& seen = *transport;
  PoolProvider pool(parsePoolNumbers("+12025550101"), std::move(transport));
  const Delivery d = pool.send("m1", "+12025550101", "+15551234567", "hello");
  EXPECT_EQ(d.status, "queued");
  EXPECT_EQ(d.ref, "SM1");
  EXPECT_EQ(seen.sent, std::vector<std::string>{"m1 +12025550101 +15551234567 hello"});
  NoRoutes routes;
  pool.registerRoutes(routes);
  EXPECT_EQ(seen.routes_registered, 1);
}

}  // namespace
}  // namespace svc::plugins::sms
