// The webhooks plugin over real HTTP: create (the secret shown once), list, read, change, delete,
// rotate-secret, who sees what (an identity key its identity's webhooks, an account key all of
// its account's, another account none), every bad field named at once (unknown event types with
// the allowed ones), the public-address rule, and the delivery log with replay against a real
// receiver. Signature checks against the standardwebhooks package are the node test's
// (tests/browser/webhooks.test.mjs).
#include "harness.h"

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/StreamCopier.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace svc::testing {
namespace {

// A receiver on loopback that records what it is sent and answers `status`.
class Receiver {
 public:
  Receiver()
      : server_(new Factory(*this),
                Poco::Net::ServerSocket(Poco::Net::SocketAddress("127.0.0.1", 0)),
                new Poco::Net::HTTPServerParams) {
    server_.start();
  }
  ~Receiver() { server_.stopAll(true); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/hook"; }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mutex_);
    return bodies_;
  }
  std::atomic<int> status{204};

 private:
  struct Handler : Poco::Net::HTTPRequestHandler {
    explicit Handler(Receiver& r) : r(r) {}
    void handleRequest(Poco::Net::HTTPServerRequest& req,
                       Poco::Net::HTTPServerResponse& res) override {
      std::string body;
      Poco::StreamCopier::copyToString(req.stream(), body);
      {
        std::lock_guard lock(r.mutex_);
        r.bodies_.push_back(body);
      }
      res.setStatus(static_cast<Poco::Net::HTTPResponse::HTTPStatus>(r.status.load()));
      res.setContentLength(0);
      res.send();
    }
    Receiver& r;
  };
  // Owned by the server, which is stopped before this receiver goes.
  struct Factory : Poco::Net::HTTPRequestHandlerFactory {
    explicit Factory(Receiver& r) : r(r) {}
    Poco::Net::HTTPRequestHandler* createRequestHandler(
        const Poco::Net::HTTPServerRequest&) override {
      return new Handler(r);
    }
    Receiver& r;
  };

  std::mutex mutex_;
  std::vector<std::string> bodies_;
  Poco::Net::HTTPServer server_;
};

class Webhooks : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "contacts", "webhooks"};
    o.args = {"--set", "webhooks.allow_private_urls=true",
              "--set", "webhooks.retry_base_ms=50",
              "--set", "webhooks.poll_ms=50"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "owner@example.com")->optValue<std::string>("management_key", "");
    other_ =
        operatorLogin(*svcd_, "other@example.com")->optValue<std::string>("management_key", "");
    ann_ = identity("Ann");
    bob_ = identity("Bob");
  }

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& key = "") {
    return http(svcd_->port(), method, path, body, bearer(key.empty() ? key_ : key));
  }
  std::string identity(const std::string& name) {
    auto r = call("POST", "/api/identities/", "{\"name\":\"" + name + "\"}");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("uuid");
  }
  std::string identityKey(const std::string& identity) {
    auto r = call("POST", "/api/auth/keys/identity/",
                  "{\"identity\":\"" + identity + "\",\"label\":\"k\"}");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("key");
  }
  int count(const std::string& key, const std::string& query = "") {
    auto r = call("GET", "/api/webhooks/" + query, "", key);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getValue<int>("count");
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_, other_, ann_, bob_;
};

TEST_F(Webhooks, CreateShowsTheSecretOnceAndEveryOtherAnswerNever) {
  auto made = call("POST", "/api/webhooks/",
                   R"({"url":"http://127.0.0.1:9/h","event_types":["contact.created"],)"
                   R"("description":"crm"})");
  ASSERT_EQ(made.status, 201) << made.body;
  auto w = made.json();
  const std::string uuid = w->getValue<std::string>("uuid");
  EXPECT_EQ(w->getValue<std::string>("secret").rfind("whsec_", 0), 0u);
  EXPECT_TRUE(w->isNull("identity"));
  EXPECT_TRUE(w->getValue<bool>("enabled"));
  EXPECT_EQ(made.headers["cache-control"].find("no-store"), 0u);
  auto got = call("GET", "/api/webhooks/" + uuid + "/");
  ASSERT_EQ(got.status, 200);
  EXPECT_FALSE(got.json()->has("secret"));
  EXPECT_EQ(got.body.find("whsec_"), std::string::npos);
  auto listed = call("GET", "/api/webhooks/");
  EXPECT_EQ(listed.body.find("whsec_"), std::string::npos);

  auto rotated = call("POST", "/api/webhooks/" + uuid + "/rotate-secret/", "{}");
  ASSERT_EQ(rotated.status, 200) << rotated.body;
  EXPECT_NE(rotated.json()->getValue<std::string>("secret"), w->getValue<std::string>("secret"));

  auto patched = call("PATCH", "/api/webhooks/" + uuid + "/",
                      R"({"enabled":false,"event_types":[],"description":"x"})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_FALSE(patched.json()->getValue<bool>("enabled"));
  EXPECT_EQ(patched.json()->getArray("event_types")->size(), 0u);
  EXPECT_EQ(call("DELETE", "/api/webhooks/" + uuid + "/").status, 204);
  EXPECT_EQ(call("GET", "/api/webhooks/" + uuid + "/").status, 404);
  EXPECT_EQ(call("DELETE", "/api/webhooks/" + uuid + "/").status, 404);
}

TEST_F(Webhooks, IdentityKeysSeeTheirOwnAccountKeysAllAndOtherAccountsNone) {
  const std::string ann_key = identityKey(ann_);
  auto mine = call("POST", "/api/webhooks/", R"({"url":"http://127.0.0.1:9/a"})", ann_key);
  ASSERT_EQ(mine.status, 201) << mine.body;
  EXPECT_EQ(mine.json()->getValue<std::string>("identity"), ann_);
  auto bobs = call("POST", "/api/webhooks/?identity=" + bob_, R"({"url":"http://127.0.0.1:9/b"})");
  ASSERT_EQ(bobs.status, 201);
  auto account = call("POST", "/api/webhooks/", R"({"url":"http://127.0.0.1:9/c"})");
  ASSERT_EQ(account.status, 201);
  EXPECT_EQ(count(ann_key), 1);
  EXPECT_EQ(count(key_), 3);
  EXPECT_EQ(count(key_, "?identity=" + bob_), 1);
  EXPECT_EQ(count(other_), 0);
  const std::string bob_hook = bobs.json()->getValue<std::string>("uuid");
  const std::string account_hook = account.json()->getValue<std::string>("uuid");
  for (const auto& hidden : {bob_hook, account_hook}) {
    EXPECT_EQ(call("GET", "/api/webhooks/" + hidden + "/", "", ann_key).status, 404);
    EXPECT_EQ(call("PATCH", "/api/webhooks/" + hidden + "/", "{}", ann_key).status, 404);
    EXPECT_EQ(call("DELETE", "/api/webhooks/" + hidden + "/", "", ann_key).status, 404);
    EXPECT_EQ(call("GET", "/api/webhooks/" + hidden + "/deliveries/", "", ann_key).status, 404);
    EXPECT_EQ(call("GET", "/api/webhooks/" + hidden + "/", "", other_).status, 404);
    EXPECT_EQ(call("POST", "/api/webhooks/" + hidden + "/rotate-secret/", "{}", other_).status,
              404);
  }
}

TEST_F(Webhooks, EveryBadFieldIsNamedAtOnceAndUnknownTypesListTheAllowedOnes) {
  auto r = call("POST", "/api/webhooks/",
                R"({"url":"ftp://x","event_types":["nope.happened"],"enabled":"yes","zz":1})");
  ASSERT_EQ(r.status, 400) << r.body;
  auto errors = r.json()->getObject("errors");
  ASSERT_TRUE(errors);
  for (const char* field : {"url", "event_types[0]", "enabled", "zz"}) {
    EXPECT_TRUE(errors->has(field)) << field << ": " << r.body;
  }
  EXPECT_NE(r.body.find("contact.created"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("webhook.disabled"), std::string::npos) << r.body;
  EXPECT_EQ(call("POST", "/api/webhooks/", R"({"event_types":[]})").status, 400);
  EXPECT_EQ(count(key_), 0);
}

TEST_F(Webhooks, PrivateAddressesAreRefusedUnlessTheTestKeyAllowsThem) {
  Svcd::Options o;
  o.plugins = {"auth", "identities", "webhooks"};
  Svcd strict(o);
  ASSERT_TRUE(strict.start()) << strict.log();
  const std::string key =
      operatorLogin(strict, "s@example.com")->optValue<std::string>("management_key", "");
  for (const char* url : {"http://127.0.0.1/h", "http://10.0.0.8/h", "http://[::1]/h",
                          "http://169.254.169.254/latest/meta-data/", "http://localhost/h"}) {
    auto r = http(strict.port(), "POST", "/api/webhooks/", std::string(R"({"url":")") + url + "\"}",
                  bearer(key));
    EXPECT_EQ(r.status, 400) << url << ": " << r.body;
    EXPECT_NE(r.body.find("private"), std::string::npos) << r.body;
  }
}

TEST_F(Webhooks, DeliveriesAreLoggedRetriedAndReplayed) {
  Receiver receiver;
  receiver.status = 500;
  auto made = call("POST", "/api/webhooks/",
                   R"({"url":")" + receiver.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string hook = made.json()->getValue<std::string>("uuid");
  auto c = call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"x@example.com"})");
  ASSERT_EQ(c.status, 201) << c.body;
  auto log = [&] { return call("GET", "/api/webhooks/" + hook + "/deliveries/").json(); };
  // Failing: attempts go up, the delivery stays pending with its next attempt.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Poco::JSON::Object::Ptr d;
  while (std::chrono::steady_clock::now() < deadline) {
    auto page = log();
    if (page->getValue<int>("count") == 1) {
      d = page->getArray("results")->getObject(0);
      if (d->getValue<int>("attempts") >= 2) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(d);
  EXPECT_EQ(d->getValue<std::string>("state"), "pending");
  EXPECT_EQ(d->getValue<int>("last_status_code"), 500);
  EXPECT_FALSE(d->isNull("next_attempt_dt"));
  EXPECT_EQ(d->getValue<std::string>("event_type"), "contact.created");
  receiver.status = 204;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    d = log()->getArray("results")->getObject(0);
    if (d->getValue<std::string>("state") == "delivered") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(d->getValue<std::string>("state"), "delivered");
  const int attempts = d->getValue<int>("attempts");
  const std::size_t received = receiver.bodies().size();
  EXPECT_EQ(static_cast<int>(received), attempts);
  // Replay: sent again, one more attempt recorded.
  auto replayed = call(
      "POST",
      "/api/webhooks/" + hook + "/deliveries/" + d->getValue<std::string>("id") + "/replay/", "{}");
  ASSERT_EQ(replayed.status, 202) << replayed.body;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline && receiver.bodies().size() == received) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(receiver.bodies().size(), received + 1);
  EXPECT_EQ(receiver.bodies().back(), receiver.bodies().front());  // the same payload
  EXPECT_EQ(call("POST", "/api/webhooks/" + hook + "/deliveries/" + hook + "/replay/", "{}").status,
            404);
}

// kill -9 between an event's commit and its fan-out: the database then holds the event and a
// cursor before it, and no delivery (made here by undoing the fan-out while svcd is dead). The
// next svcd delivers it, once.
TEST_F(Webhooks, AnEventCommittedBeforeACrashIsDeliveredAfterTheRestart) {
  Receiver receiver;
  receiver.status = 503;
  auto made = call("POST", "/api/webhooks/",
                   R"({"url":")" + receiver.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(made.status, 201);
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"y@example.com"})").status,
            201);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline && receiver.bodies().empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(receiver.bodies().empty());
  svcd_->kill9();
  runSql(svcd_->dbUrl(), {"DELETE FROM webhook_deliveries",
                          "UPDATE webhook_cursor SET seq = (SELECT after_seq FROM webhooks)"});
  const std::size_t refused = receiver.bodies().size();
  receiver.status = 204;
  ASSERT_TRUE(svcd_->start()) << svcd_->log();
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline && receiver.bodies().size() == refused) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nothing more comes
  ASSERT_EQ(receiver.bodies().size(), refused + 1);
  EXPECT_NE(receiver.bodies().back().find("y@example.com"), std::string::npos);
  auto page =
      call("GET", "/api/webhooks/" + made.json()->getValue<std::string>("uuid") + "/deliveries/")
          .json();
  EXPECT_EQ(page->getValue<int>("count"), 1);
}

// svcctl webhooks: every subcommand through the routes; the secret printed by create and
// rotate-secret only.
TEST_F(Webhooks, SvcctlCoversEveryRoute) {
  Receiver receiver;
  auto ctl = [&](const std::string& args) {
    return runCommand("'" + binDir() + "/svcctl' --url http://127.0.0.1:" +
                      std::to_string(svcd_->port()) + " --key " + key_ + " " + args + " 2>&1");
  };
  auto [rc, made] = ctl("--json webhooks create " + receiver.url() +
                        " --event-type contact.created --description 'from svcctl'");
  ASSERT_EQ(rc, 0) << made;
  auto w = Poco::JSON::Parser().parse(made).extract<Poco::JSON::Object::Ptr>();
  const std::string uuid = w->getValue<std::string>("uuid");
  EXPECT_EQ(w->getValue<std::string>("secret").rfind("whsec_", 0), 0u);
  auto [lrc, listed] = ctl("webhooks list");
  EXPECT_EQ(lrc, 0);
  EXPECT_NE(listed.find(uuid), std::string::npos) << listed;
  EXPECT_NE(listed.find("contact.created"), std::string::npos) << listed;
  auto [grc, got] = ctl("webhooks get " + uuid);
  EXPECT_EQ(grc, 0);
  EXPECT_EQ(got.find("whsec_"), std::string::npos) << got;
  auto [erc, edited] = ctl("webhooks edit " + uuid + " --disable --description changed");
  EXPECT_EQ(erc, 0) << edited;
  EXPECT_NE(edited.find("enabled:     no"), std::string::npos) << edited;
  EXPECT_EQ(ctl("webhooks edit " + uuid + " --enable").first, 0);
  auto [rrc, rotated] = ctl("webhooks rotate-secret " + uuid);
  EXPECT_EQ(rrc, 0);
  EXPECT_NE(rotated.find("secret: whsec_"), std::string::npos) << rotated;
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"q@example.com"})").status,
            201);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string log;
  while (std::chrono::steady_clock::now() < deadline) {
    log = ctl("webhooks deliveries " + uuid).second;
    if (log.find("delivered") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(log.find("delivered"), std::string::npos) << log;
  auto page = call("GET", "/api/webhooks/" + uuid + "/deliveries/").json();
  const std::string delivery = page->getArray("results")->getObject(0)->getValue<std::string>("id");
  auto [prc, replayed] = ctl("webhooks replay " + uuid + " " + delivery);
  EXPECT_EQ(prc, 0) << replayed;
  EXPECT_NE(replayed.find("replaying " + delivery), std::string::npos) << replayed;
  auto [brc, bad] = ctl("webhooks create ftp://x");
  EXPECT_EQ(brc, 1);
  EXPECT_NE(bad.find("svcctl: 400 "), std::string::npos) << bad;
  EXPECT_EQ(ctl("webhooks delete " + uuid).first, 0);
  EXPECT_EQ(ctl("webhooks get " + uuid).first, 1);
}

}  // namespace
}  // namespace svc::testing
