// Three svcd, one per node of a three-node MariaDB Galera cluster (tools/galera.sh, started by
// tools/test.sh, exports SVC_TEST_GALERA_URLS): they start together on an empty database, take
// concurrent writes through every node without a failure, survive a database node's death, and
// deliver an event stream that resumes on another node with nothing missed or repeated; mail
// received by one is downloaded from the others, a data key rotated on one is used by all, and
// webhooks fed through all three deliver each event once. Skipped without a cluster.
#include "cluster_fixture.h"
#include "email_fixture.h"
#include "harness.h"

#include <Poco/Data/MySQL/Connector.h>
#include <Poco/Data/Session.h>
#include <Poco/Environment.h>
#include <Poco/String.h>
#include <Poco/URI.h>
#include <Poco/UUIDGenerator.h>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

using namespace Poco::Data::Keywords;

namespace svc::testing {
namespace {

using Clock = std::chrono::steady_clock;

long long millisSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// The events of a stream's text, as (id, data) in the order they came; the opening frame and
// pings, which carry no data, are left out.
std::vector<std::pair<long long, std::string>> streamEvents(const std::string& text) {
  std::vector<std::pair<long long, std::string>> events;
  std::size_t at = text.find("\r\n\r\n");  // after the response's head
  at = at == std::string::npos ? 0 : at + 4;
  while (at < text.size()) {
    const std::size_t end = text.find("\n\n", at);
    if (end == std::string::npos) break;  // cut off
    std::istringstream block(text.substr(at, end - at));
    long long id = -1;
    std::string data;
    for (std::string line; std::getline(block, line);) {
      if (line.rfind("id: ", 0) == 0) id = std::stoll(line.substr(4));
      if (line.rfind("data: ", 0) == 0) data = line.substr(6);
    }
    if (id >= 0 && !data.empty()) events.emplace_back(id, data);
    at = end + 2;
  }
  return events;
}

class Cluster : public ::testing::Test {
 protected:
  void SetUp() override {
    std::istringstream urls(Poco::Environment::get("SVC_TEST_GALERA_URLS", ""));
    for (std::string url; urls >> url;) urls_.push_back(url);
    if (urls_.size() != 3) GTEST_SKIP() << "SVC_TEST_GALERA_URLS does not name three nodes";
    Poco::Data::MySQL::Connector::registerConnector();
    database_ = "svc_c_" +
                Poco::replace(
                    Poco::UUIDGenerator::defaultGenerator().createRandom().toString().substr(0, 13),
                    "-", "");
    admin(0) << "CREATE DATABASE " + database_ + " CHARACTER SET utf8mb4", now;
    for (std::size_t i = 0; i < 3; ++i) {
      Svcd::Options o = options();
      o.db_url = urls_[i] + "/" + database_;
      svcd_[i] = std::make_unique<Svcd>(o);
    }
  }

  // What each svcd runs; a suite for other plugins says its own.
  virtual Svcd::Options options() const {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "contacts"};
    return o;
  }

  void TearDown() override {
    for (auto& s : svcd_) s.reset();
    if (urls_.size() != 3) return;
    restartNode(0);  // a test that failed half-way may leave it down
    try {
      admin(1) << "DROP DATABASE IF EXISTS " + database_, now;
    } catch (...) {
    }
  }

  Poco::Data::Session admin(std::size_t node) {
    Poco::URI uri(urls_[node]);
    const std::string info = uri.getUserInfo();
    return Poco::Data::Session("MySQL", "host=" + uri.getHost() +
                                            ";port=" + std::to_string(uri.getPort()) +
                                            ";user=" + info.substr(0, info.find(':')) +
                                            ";password=" + info.substr(info.find(':') + 1));
  }

  // The cluster's script kills and restarts nodes (it knows their directories and ports).
  static std::string galera(const std::string& what) {
    return "bash " SVC_TEST_SOURCE_DIR "/tools/galera.sh " + what;
  }
  void killNode(std::size_t node) {
    auto [rc, out] = runCommand(galera("kill " + std::to_string(node + 1)));
    ASSERT_EQ(rc, 0) << out;
  }
  void restartNode(std::size_t node) {
    try {
      admin(node) << "SELECT 1", now;
      return;  // up
    } catch (...) {
    }
    auto [rc, out] = runCommand(galera("start " + std::to_string(node + 1)));
    ASSERT_EQ(rc, 0) << out;
  }

  // All three (from `first` on) at the same moment, as an operator's three machines would after
  // a deploy.
  void startTogether(std::size_t first = 0) {
    std::array<bool, 3> up{};
    std::vector<std::thread> starters;
    for (std::size_t i = first; i < 3; ++i) {
      starters.emplace_back([this, i, &up] { up[i] = svcd_[i]->start(); });
    }
    for (auto& t : starters) t.join();
    for (std::size_t i = first; i < 3; ++i)
      ASSERT_TRUE(up[i]) << "svcd " << i << ": " << svcd_[i]->log();
  }

  // An account with an identity, made through svcd `via`. @return {management key, identity}.
  std::pair<std::string, std::string> account(std::size_t via, const std::string& email) {
    auto login = operatorLogin(*svcd_[via], email);
    const std::string key = login->optValue<std::string>("management_key", "");
    auto r =
        http(svcd_[via]->port(), "POST", "/api/identities/", R"({"name":"agent"})", bearer(key));
    EXPECT_EQ(r.status, 201) << r.body;
    return {key, r.status == 201 ? r.json()->getValue<std::string>("uuid") : ""};
  }

  HttpReply createContact(std::size_t via, const std::pair<std::string, std::string>& who,
                          const std::string& email) {
    return http(svcd_[via]->port(), "POST", "/api/contacts/?identity=" + who.second,
                R"({"email":")" + email + R"("})", bearer(who.first));
  }

  std::vector<std::string> urls_;
  std::string database_;
  std::array<std::unique_ptr<Svcd>, 3> svcd_;
};

TEST_F(Cluster, ThreeSvcdStartedTogetherOnAnEmptyClusterAllComeUp) {
  startTogether();
  for (auto& s : svcd_) {
    auto health = s->get("/api/health/");
    EXPECT_EQ(health.status, 200) << health.body;
  }
  // Each migration was applied once, whichever svcd applied it.
  int applied = 0, distinct = 0;
  auto s = admin(2);
  s << "SELECT COUNT(*), COUNT(DISTINCT plugin, version) FROM " + database_ + ".svc_migrations",
      into(applied), into(distinct), now;
  EXPECT_GT(applied, 0);
  EXPECT_EQ(applied, distinct);
}

TEST_F(Cluster, ConcurrentCreatesThroughEveryNodeAllSucceedAndAreReadEverywhere) {
  startTogether();
  std::vector<std::pair<std::string, std::string>> accounts;
  for (std::size_t i = 0; i < 3; ++i) {
    accounts.push_back(account(i, "owner" + std::to_string(i) + "@example.com"));
    ASSERT_FALSE(accounts.back().second.empty());
  }
  std::mutex mutex;
  std::vector<std::tuple<std::size_t, std::string>> created;  // (account, uuid)
  std::vector<std::string> failures;
  std::vector<std::thread> clients;
  for (int n = 0; n < 120; ++n) {
    clients.emplace_back([&, n] {
      const std::size_t via = n % 3, who = (n / 3) % 3;
      auto r = createContact(via, accounts[who], "c" + std::to_string(n) + "@example.com");
      std::lock_guard<std::mutex> lock(mutex);
      if (r.status == 201) {
        created.emplace_back(who, r.json()->getValue<std::string>("uuid"));
      } else {
        failures.push_back(std::to_string(r.status) + " through svcd " + std::to_string(via) +
                           ": " + r.body);
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(failures.size(), 0u) << (failures.empty() ? "" : failures.front());
  EXPECT_EQ(created.size() + failures.size(), 120u);
  for (const auto& [who, uuid] : created) {
    for (std::size_t via = 0; via < 3; ++via) {
      auto r = http(svcd_[via]->port(), "GET", "/api/contacts/" + uuid + "/", "",
                    bearer(accounts[who].first));
      EXPECT_EQ(r.status, 200) << uuid << " through svcd " << via << ": " << r.body;
    }
  }
}

TEST_F(Cluster, ADatabaseNodeLostIsUnavailableOnItsSvcdAloneAndServesAgainWhenBack) {
  startTogether();
  auto who = account(1, "owner@example.com");
  ASSERT_FALSE(who.second.empty());
  // Writers through the two svcd whose nodes stay up, for the whole test.
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::vector<std::string> acknowledged, failures;
  std::vector<std::thread> writers;
  for (std::size_t via : {1u, 2u}) {
    for (int w = 0; w < 2; ++w) {
      writers.emplace_back([&, via, w] {
        for (int n = 0; !stop; ++n) {
          const std::string email = "w" + std::to_string(via) + "-" + std::to_string(w) + "-" +
                                    std::to_string(n) + "@example.com";
          auto r = createContact(via, who, email);
          std::lock_guard<std::mutex> lock(mutex);
          if (r.status == 201) {
            acknowledged.push_back(r.json()->getValue<std::string>("uuid"));
          } else {
            failures.push_back(std::to_string(r.status) + " " + r.body);
          }
        }
      });
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  killNode(0);
  const auto killed = Clock::now();

  // The svcd on the dead node answers 503 with Retry-After at once, never 500.
  auto during = Clock::now();
  auto refused = createContact(0, who, "dead@example.com");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_FALSE(refused.header("retry-after").empty());
  EXPECT_LT(millisSince(during), 1000) << "the answer took too long";
  // Its health says not ready within about a second.
  int health = 200;
  while (millisSince(killed) < 3000 && (health = svcd_[0]->get("/api/health/").status) == 200) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(health, 503);
  EXPECT_LT(millisSince(killed), 1600) << "health saw the lost node late";

  std::this_thread::sleep_for(std::chrono::seconds(2));
  restartNode(0);
  // Back: health ready and writes succeed through it again.
  const auto restarted = Clock::now();
  while (millisSince(restarted) < 30000 && svcd_[0]->get("/api/health/").status != 200) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(svcd_[0]->get("/api/health/").status, 200);
  int again = 0;
  for (int i = 0; i < 5; ++i) {
    auto r = createContact(0, who, "back" + std::to_string(i) + "@example.com");
    EXPECT_EQ(r.status, 201) << r.body;
    again += r.status == 201;
  }
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_EQ(failures.size(), 0u) << (failures.empty() ? "" : failures.front());
  EXPECT_GT(acknowledged.size(), 10u);
  // Nothing acknowledged was lost: every write is there, read through the node that was down.
  for (const auto& uuid : acknowledged) {
    auto r = http(svcd_[0]->port(), "GET", "/api/contacts/" + uuid + "/", "", bearer(who.first));
    EXPECT_EQ(r.status, 200) << uuid << ": " << r.body;
  }
}

TEST_F(Cluster, AStreamResumedOnAnotherNodeMissesAndRepeatsNothing) {
  startTogether();
  auto who = account(0, "streams@example.com");
  ASSERT_FALSE(who.second.empty());
  // Where the account's stream stands now: the opening frame's id.
  const std::string opening =
      eventStream(svcd_[0]->port(), who.first, "types=contact.created", {"id: "});
  const std::size_t id_at = opening.find("id: ");
  ASSERT_NE(id_at, std::string::npos) << opening;
  const std::string from = std::to_string(std::stoll(opening.substr(id_at + 4)));
  // A stream on A from there, open while contacts are created through B and C.
  std::vector<std::string> emails;
  for (int n = 0; n < 6; ++n) emails.push_back("s" + std::to_string(n) + "@example.com");
  std::string live;
  std::thread reader([&] {
    live = eventStream(svcd_[0]->port(), who.first, "types=contact.created&last_event_id=" + from,
                       emails);
  });
  for (std::size_t n = 0; n < emails.size(); ++n) {
    auto r = createContact(1 + n % 2, who, emails[n]);
    EXPECT_EQ(r.status, 201) << r.body;
  }
  reader.join();
  const auto seen = streamEvents(live);
  ASSERT_EQ(seen.size(), 6u) << live;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(seen[i].first, seen[i - 1].first) << live;
    }
    EXPECT_NE(seen[i].second.find(emails[i]), std::string::npos) << live;
  }
  // Resumed on C after the third: exactly the last three, with the same ids, nothing more.
  const std::string after = std::to_string(seen[2].first);
  const auto resumed =
      streamEvents(eventStream(svcd_[2]->port(), who.first,
                               "types=contact.created&last_event_id=" + after, {emails[5]}, 1000));
  ASSERT_EQ(resumed.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(resumed[i], seen[i + 3]);
  }
}

// Mail: an attachment of several database chunks, received by A's SMTP listener.
class ClusterEmail : public Cluster {
  Svcd::Options options() const override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "email"};
    o.args = {"--set", "email.domains=agents.test"};
    return o;
  }
};

TEST_F(ClusterEmail, AnAttachmentReceivedByOneSvcdIsDownloadedFromTheOthers) {
  startTogether();
  const std::string key =
      operatorLogin(*svcd_[0], "owner@example.com")->optValue<std::string>("management_key", "");
  auto sink = http(svcd_[0]->port(), "POST", "/api/identities/",
                   R"({"name":"Sink","email_identifier":"sink"})", bearer(key));
  ASSERT_EQ(sink.status, 201) << sink.body;
  const std::string identity = sink.json()->getValue<std::string>("uuid");
  const std::string bytes = attachmentBytes(1024 * 1024 + 4321);  // five 256 KiB chunks
  const int smtp_port = smtpPortOf(*svcd_[0]);
  ASSERT_NE(smtp_port, 0) << svcd_[0]->log();
  const std::string said = rawExchange(
      smtp_port, smtpEnvelope("a@example.com", "sink@agents.test", mailWithAttachment(bytes)),
      30000);
  ASSERT_NE(said.find("250 2.0.0 Ok: stored"), std::string::npos) << said;
  // Filed a moment after its 250.
  std::string message;
  ASSERT_TRUE(waitFor(
      [&] {
        auto list = http(svcd_[0]->port(), "GET", "/api/email-messages/?identity=" + identity, "",
                         bearer(key));
        auto results = list.json()->getArray("results");
        if (results->size() == 0) return false;
        message = results->getObject(0)->getValue<std::string>("id");
        return true;
      },
      30));
  auto filed =
      http(svcd_[0]->port(), "GET", "/api/email-messages/" + message + "/", "", bearer(key));
  ASSERT_EQ(filed.status, 200) << filed.body;
  auto attachments = filed.json()->getArray("attachments");
  ASSERT_EQ(attachments->size(), 1u) << filed.body;
  const std::string uuid = attachments->getObject(0)->getValue<std::string>("uuid");
  for (std::size_t via : {1u, 2u}) {
    auto reply = http(svcd_[via]->port(), "GET", "/api/email-attachments/" + uuid + "/download/",
                      "", bearer(key));
    ASSERT_EQ(reply.status, 200) << "svcd " << via << ": " << reply.body.substr(0, 300);
    EXPECT_EQ(reply.body.size(), bytes.size()) << "svcd " << via;
    EXPECT_TRUE(reply.body == bytes) << "svcd " << via << ": byte for byte";
  }
}

// The vault: every svcd holds a copy of A's key file, as the operator's machines would.
class ClusterVault : public Cluster {
  Svcd::Options options() const override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault", "secrets"};
    return o;
  }
};

TEST_F(ClusterVault, ADataKeyRotatedOnOneSvcdIsUsedByTheOthers) {
  ASSERT_TRUE(svcd_[0]->start()) << svcd_[0]->log();
  for (std::size_t i : {1u, 2u}) copyKeyFile(vaultKeyFile(*svcd_[0]), vaultKeyFile(*svcd_[i]));
  startTogether(1);
  auto who = account(0, "vault@example.com");
  ASSERT_FALSE(who.second.empty());
  auto rotated = http(svcd_[0]->adminPort(), "POST", "/admin/vault/rotate-key/", "{}",
                      bearer(svcd_[0]->adminToken()));
  ASSERT_EQ(rotated.status, 200) << rotated.body;
  auto stored = http(svcd_[0]->port(), "POST", "/api/secrets/?identity=" + who.second,
                     R"({"key":"AFTER","value":"v-after"})", bearer(who.first));
  ASSERT_EQ(stored.status, 201) << stored.body;
  const std::string uuid = stored.json()->getValue<std::string>("uuid");
  for (std::size_t via : {1u, 2u}) {
    auto r = http(svcd_[via]->port(), "GET", "/api/secrets/" + uuid + "/", "", bearer(who.first));
    ASSERT_EQ(r.status, 200) << "svcd " << via << ": " << r.body;
    EXPECT_EQ(r.json()->getValue<std::string>("value"), "v-after") << "svcd " << via;
  }
}

// Webhooks: all three deliver (short polls and retries, private URLs for the receiver).
class ClusterWebhooks : public Cluster {
  Svcd::Options options() const override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "contacts", "webhooks"};
    o.args = {"--set", "webhooks.allow_private_urls=true", "--set", "webhooks.poll_ms=50",
              "--set", "webhooks.retry_base_ms=50"};
    return o;
  }

 protected:
  CountingReceiver receiver_;
};

TEST_F(ClusterWebhooks, EventsCreatedThroughEverySvcdAreEachDeliveredOnce) {
  startTogether();
  auto who = account(0, "hooks@example.com");
  ASSERT_FALSE(who.second.empty());
  auto hook =
      http(svcd_[1]->port(), "POST", "/api/webhooks/",
           R"({"url":")" + receiver_.url("hook") + R"(","event_types":["contact.created"]})",
           bearer(who.first));
  ASSERT_EQ(hook.status, 201) << hook.body;
  receiver_.delay_ms = 5;
  constexpr int kEvents = 45;
  std::vector<std::thread> clients;
  for (std::size_t via = 0; via < 3; ++via) {
    clients.emplace_back([&, via] {
      for (int n = 0; n < kEvents / 3; ++n) {
        auto r = createContact(
            via, who, "h" + std::to_string(via) + "-" + std::to_string(n) + "@example.com");
        EXPECT_EQ(r.status, 201) << "svcd " << via << ": " << r.body;
      }
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_TRUE(waitFor([&] { return receiver_.counts().size() == std::size_t{kEvents}; }, 60))
      << receiver_.counts().size() << " of " << kEvents << " delivered";
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // a duplicate would come now
  const auto counts = receiver_.counts();
  EXPECT_EQ(counts.size(), std::size_t{kEvents});
  for (const auto& [what, n] : counts) EXPECT_EQ(n, 1) << what << " came " << n;
}

}  // namespace
}  // namespace svc::testing
