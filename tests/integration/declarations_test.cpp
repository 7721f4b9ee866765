// Declarations drive the kernel (issue: SDK 2): the event types `?types=` accepts are those the
// loaded plugins declare, and /metrics serves plugins' own series and the process_* figures.
#include "harness.h"

#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

#include <unistd.h>

namespace svc::testing {
namespace {

const std::map<std::string, std::string> kMgmtA = {{"Authorization", "Bearer mgmt-A"}};

// The stream read until `needle`, then until nothing more comes for a second.
std::string streamFrom(Svcd& svcd, const std::string& query, const std::string& needle) {
  return eventStream(svcd.port(), "mgmt-A", query, {needle}, 1000);
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(Declarations, TypesFilterAcceptsDeclaredTypesAndRefusesAnUndeclaredOneByName) {
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  ASSERT_EQ(svcd.post("/api/testkit/publish/", "{\"type\":\"test.one\"}", kMgmtA).status, 201);
  ASSERT_EQ(svcd.post("/api/testkit/publish/", "{\"type\":\"test.two\"}", kMgmtA).status, 201);

  // testkit declares test.one and test.two: the filter takes one and leaves the other out.
  const std::string two = streamFrom(svcd, "last_event_id=0&types=test.two", "event: test.two");
  EXPECT_EQ(two.rfind("HTTP/1.1 200", 0), 0u) << two;
  EXPECT_NE(two.find("event: test.two"), std::string::npos) << two;
  EXPECT_EQ(two.find("event: test.one"), std::string::npos) << two;
  // The kernel's own type is declared too.
  EXPECT_EQ(readUntil(svcd.port(),
                      "GET /api/events/stream/?types=stream.truncated HTTP/1.1\r\nHost: "
                      "x\r\nAuthorization: Bearer mgmt-A\r\n\r\n",
                      {"\r\n\r\n"})
                .rfind("HTTP/1.1 200", 0),
            0u);

  // No loaded plugin declares note.created (nor the bundled plugins' types, which are not
  // loaded here): 400 in the contract's shape, naming it.
  for (const std::string undeclared : {"note.created", "email.received"}) {
    auto r = svcd.get("/api/events/stream/?types=test.one," + undeclared, kMgmtA);
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.code(), "invalid");
    auto errors = r.json()->getObject("errors");
    ASSERT_TRUE(errors && errors->has("types")) << r.body;
    const std::string message = errors->getArray("types")->getElement<std::string>(0);
    EXPECT_NE(message.find("'" + undeclared + "'"), std::string::npos) << message;
    EXPECT_EQ(message.find("test.one"), std::string::npos) << message;
  }
}

TEST(Declarations, AnUndeclaredPublishIsLoggedOnceAsAnErrorAndStillDelivered) {
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(svcd.post("/api/testkit/publish/", "{\"type\":\"note.created\"}", kMgmtA).status,
              201);
  }
  const std::string needle = "event type 'note.created' was published but no loaded plugin";
  std::string log = svcd.waitForLog(needle);
  EXPECT_EQ(occurrences(log, needle), 1u) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex("[Ee]rror.*" + needle))) << log;
  // Delivered to a stream that does not filter by type.
  const std::string all = streamFrom(svcd, "last_event_id=0", "event: note.created");
  EXPECT_EQ(occurrences(all, "event: note.created"), 3u) << all;
}

TEST(Declarations, AdminPluginsShowsEachPluginsEventTypesAndServices) {
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  auto r = http(svcd.adminPort(), "GET", "/admin/plugins", "",
                {{"Authorization", "Bearer " + svcd.adminToken()}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto testkit = r.json()->getArray("plugins")->getObject(0);
  auto events = testkit->getArray("events");
  ASSERT_EQ(events->size(), 3u) << r.body;
  EXPECT_EQ(events->getObject(0)->getValue<std::string>("type"), "test.event");
  EXPECT_FALSE(events->getObject(0)->getValue<std::string>("description").empty());
  EXPECT_EQ(testkit->getArray("offers_services")->size(), 2u) << r.body;
}

TEST(Declarations, MetricsServeAPluginsOwnSeriesAndTheProcessFigures) {
  Svcd svcd;
  ASSERT_TRUE(svcd.start());
  for (const char* body : {"{\"type\":\"test.one\"}",
                           "{\"type\":\"test.two\",\"pad\":\""
                           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}"}) {
    ASSERT_EQ(svcd.post("/api/testkit/publish/", body, kMgmtA).status, 201);
  }
  const std::string text = metricsOf(svcd);
  // The kernel's own series are still there.
  EXPECT_NE(text.find("svc_db_pool_capacity"), std::string::npos);
  // testkit's counter, labelled histogram and reading.
  EXPECT_NE(text.find("# TYPE svc_testkit_published_total counter\n"), std::string::npos) << text;
  EXPECT_EQ(sample(text, "svc_testkit_published_total"), 2) << text;
  EXPECT_NE(text.find("# TYPE svc_testkit_publish_body_bytes histogram\n"), std::string::npos);
  EXPECT_NE(text.find("svc_testkit_publish_body_bytes_bucket{route=\"publish\",le=\"64\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("svc_testkit_publish_body_bytes_bucket{route=\"publish\",le=\"+Inf\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("svc_testkit_publish_body_bytes_count{route=\"publish\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE svc_testkit_seen_events gauge\n"), std::string::npos);

  // The conventional process_* figures, with sane values.
  const double rss = sample(text, "process_resident_memory_bytes");
  EXPECT_GT(rss, 1e6) << text;
  EXPECT_LT(rss, 64e9);
  const double fds = sample(text, "process_open_fds");
  const double max_fds = sample(text, "process_max_fds");
  EXPECT_GE(fds, 5);  // at least the standard three, the listeners, the database
  EXPECT_LT(fds, 10000);
  EXPECT_GE(max_fds, fds);
  const double cpu = sample(text, "process_cpu_seconds_total");
  EXPECT_GE(cpu, 0);
  EXPECT_LT(cpu, 3600);
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos);
  const double started = sample(text, "process_start_time_seconds");
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(started, now + 2) << std::fixed << started << " " << now;
  EXPECT_GT(started, now - 300) << std::fixed << started << " " << now;
}

TEST(Declarations, TheEmailPluginReportsItsListenerSpoolOutboxAndRelay) {
  Svcd::Options o;
  o.plugins = {"auth", "identities", "email"};
  o.args = {"--set", "email.domains=agents.test"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start()) << svcd.log();
  std::smatch m;
  std::string log = svcd.waitForLog("SMTP listener on port");
  ASSERT_TRUE(std::regex_search(log, m, std::regex("SMTP listener on port (\\d+)")));
  const int fd = connectFrom("127.0.0.1", std::stoi(m[1]));
  ASSERT_GE(fd, 0);
  EXPECT_EQ(readUntilFd(fd, "\r\n", 30000).substr(0, 4), "220 ");  // the session is open

  const std::string text = metricsOf(svcd);
  EXPECT_EQ(sample(text, "svc_email_smtp_sessions_open"), 1) << text;
  EXPECT_NE(text.find("svc_email_smtp_connections_total{outcome=\"accepted\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(sample(text, "svc_email_spool_backlog_messages"), 0) << text;
  EXPECT_EQ(sample(text, "svc_email_spool_backlog_bytes"), 0) << text;
  EXPECT_EQ(sample(text, "svc_email_outbox_depth"), 0) << text;
  EXPECT_NE(text.find("svc_email_relay_attempts_total{outcome=\"failed\"} 0\n"), std::string::npos)
      << text;
  ::close(fd);
  double open = 1;
  for (int i = 0; i < 750 && open != 0; ++i) {  // 30 s at most
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    open = sample(metricsOf(svcd), "svc_email_smtp_sessions_open");
  }
  EXPECT_EQ(open, 0);
}

}  // namespace
}  // namespace svc::testing
