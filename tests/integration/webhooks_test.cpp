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
  ~Receiver() {
    server_.stopAll(true);
    // stopAll does not wait for handlers already running (one may be in its delay): they use
    // this receiver, so it outlives them (an ASan run caught one writing to a dead receiver).
    while (active_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/hook"; }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mutex_);
    return bodies_;
  }
  std::atomic<int> status{204};
  std::atomic<int> delay_ms{0};  ///< how long each answer takes

 private:
  struct Handler : Poco::Net::HTTPRequestHandler {
    explicit Handler(Receiver& r) : r(r) {}
    void handleRequest(Poco::Net::HTTPServerRequest& req,
                       Poco::Net::HTTPServerResponse& res) override {
      ++r.active_;
      struct Done {
        std::atomic<int>& n;
        ~Done() { --n; }
      } done{r.active_};
      std::string body;
      Poco::StreamCopier::copyToString(req.stream(), body);
      if (const int delay = r.delay_ms.load(); delay > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      }
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
  std::atomic<int> active_{0};  ///< handlers running now
  Poco::Net::HTTPServer server_;
};

// A receiver on loopback that reads a request, then answers 200 with a 1000-byte body a byte every
// 300 ms: each read of it is quick, the whole answer takes five minutes.
class TricklingReceiver {
 public:
  TricklingReceiver() : socket_(Poco::Net::SocketAddress("127.0.0.1", 0)) {
    acceptor_ = std::thread([this] { accept(); });
  }
  ~TricklingReceiver() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : connections_) t.join();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(socket_.address().port()) + "/slow";
  }
  std::atomic<int> requests{0};  ///< requests read
  std::atomic<int> cut{0};       ///< answers the sender stopped reading (its socket shut)

 private:
  void accept() {
    while (!stop_) {
      if (!socket_.poll(Poco::Timespan(0, 50000), Poco::Net::Socket::SELECT_READ)) continue;
      Poco::Net::StreamSocket c = socket_.acceptConnection();
      connections_.emplace_back([this, c]() mutable { serve(c); });
    }
  }
  void serve(Poco::Net::StreamSocket c) {
    try {
      c.setReceiveTimeout(Poco::Timespan(5, 0));
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        const int n = c.receiveBytes(buf, sizeof buf);
        if (n <= 0) return;
        head.append(buf, static_cast<std::size_t>(n));
      }
      ++requests;
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
      c.sendBytes(answer.data(), static_cast<int>(answer.size()));
      for (int i = 0; i < 1000 && !stop_; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        // The sender shut its socket: the next byte finds the connection reset, or reading
        // sees its end.
        if (c.poll(Poco::Timespan(0), Poco::Net::Socket::SELECT_READ) &&
            c.receiveBytes(buf, sizeof buf) <= 0) {
          ++cut;
          return;
        }
        c.sendBytes("x", 1);
      }
    } catch (const Poco::Exception&) {
      ++cut;
    }
  }

  Poco::Net::ServerSocket socket_;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> connections_;  // joined by the destructor only
};

// A receiver on loopback that accepts every connection and never answers (nor reads): each
// attempt to it lasts until the sender's deadline.
class HangingReceiver {
 public:
  HangingReceiver() : socket_(Poco::Net::SocketAddress("127.0.0.1", 0), 256) {
    acceptor_ = std::thread([this] {
      while (!stop_) {
        if (!socket_.poll(Poco::Timespan(0, 50000), Poco::Net::Socket::SELECT_READ)) continue;
        held_.push_back(socket_.acceptConnection());  // kept open, never read
        ++accepted;
      }
    });
  }
  ~HangingReceiver() {
    stop_ = true;
    acceptor_.join();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(socket_.address().port()) + "/never";
  }
  std::atomic<int> accepted{0};

 private:
  Poco::Net::ServerSocket socket_;
  std::atomic<bool> stop_{false};
  std::vector<Poco::Net::StreamSocket> held_;  // the acceptor's only
  std::thread acceptor_;
};

class Webhooks : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "contacts", "webhooks"};
    o.args = {"--set", "webhooks.allow_private_urls=true",
              "--set", "webhooks.retry_base_ms=50",
              "--set", "webhooks.poll_ms=50"};
    for (const auto& a : settings()) o.args.push_back(a);
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "owner@example.com")->optValue<std::string>("management_key", "");
    other_ =
        operatorLogin(*svcd_, "other@example.com")->optValue<std::string>("management_key", "");
    ann_ = identity("Ann");
    bob_ = identity("Bob");
  }

  /// More svcd arguments for a suite.
  virtual std::vector<std::string> settings() const { return {}; }

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

  /// Waits up to `seconds` for done(). @return whether it came.
  template <class F>
  static bool waitFor(F done, int seconds = 30) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  std::string makeHook(const std::string& body) {
    auto made = call("POST", "/api/webhooks/", body);
    EXPECT_EQ(made.status, 201) << made.body;
    return made.status == 201 ? made.json()->getValue<std::string>("uuid") : "";
  }
  Poco::JSON::Object::Ptr firstDelivery(const std::string& hook) {
    auto page = call("GET", "/api/webhooks/" + hook + "/deliveries/").json();
    if (page->getValue<int>("count") == 0) return nullptr;
    return page->getArray("results")->getObject(0);
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_, other_, ann_, bob_;
};

// An attempt is cut at webhooks.timeout_seconds (1 s), and the lease is 3 s (the least allowed).
class WebhooksShortLease : public Webhooks {
 protected:
  std::vector<std::string> settings() const override {
    return {"--set", "webhooks.timeout_seconds=1", "--set", "webhooks.lease_seconds=3"};
  }
};

// One delivery worker: whom it serves shows.
class WebhooksOneWorker : public Webhooks {
 protected:
  std::vector<std::string> settings() const override { return {"--set", "webhooks.workers=1"}; }
};

// Deliveries are retried for 2 s only.
class WebhooksShortWindow : public Webhooks {
 protected:
  std::vector<std::string> settings() const override {
    return {"--set", "webhooks.retry_window_seconds=2"};
  }
};

// A long attempt limit (60 s): what ends a send in flight at stop is stop itself.
class WebhooksLongTimeout : public Webhooks {
 protected:
  std::vector<std::string> settings() const override {
    return {"--set", "webhooks.timeout_seconds=60", "--set", "webhooks.lease_seconds=180"};
  }
};

// The default attempt limit (10 s) with the fixture's short retries (50 ms): hanging receivers
// come due again at once, the harshest case for the others.
using WebhooksFairness = Webhooks;

// Replays: a minute's backoff after the first failure, and at most 3 replays a minute.
class WebhooksReplayLimits : public Webhooks {
 protected:
  std::vector<std::string> settings() const override {
    return {"--set", "webhooks.retry_base_ms=60000", "--set", "webhooks.replays_per_minute=3"};
  }
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
  for (const char* url :
       {"http://127.0.0.1/h", "http://10.0.0.8/h", "http://[::1]/h",
        "http://169.254.169.254/latest/meta-data/", "http://localhost/h",
        // IPv6 forms of internal IPv4 addresses (NAT64, local-use NAT64, 6to4, IPv4-translated,
        // Teredo), and the special-purpose blocks no one can be reached at from outside.
        "http://[64:ff9b::a9fe:a9fe]/h", "http://[64:ff9b::7f00:1]/h",
        "http://[64:ff9b:1::a9fe:a9fe]/h", "http://[2002:a9fe:a9fe::]/h",
        "http://[::ffff:0:7f00:1]/h", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/h",
        "http://198.18.0.1/h", "http://192.0.0.1/h", "http://192.88.99.1/h", "http://240.0.0.1/h",
        "http://[100::1]/h"}) {
    auto r = http(strict.port(), "POST", "/api/webhooks/", std::string(R"({"url":")") + url + "\"}",
                  bearer(key));
    EXPECT_EQ(r.status, 400) << url << ": " << r.body;
    EXPECT_NE(r.body.find("private"), std::string::npos) << r.body;
    // It names the switch a test server uses (agents read why; operators find the key).
    EXPECT_NE(r.body.find("webhooks.allow_private_urls=true"), std::string::npos) << r.body;
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
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
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
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
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
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
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
// The lease is short (3 s): kill -9 may land before the lease is given up, and the next svcd takes
// the webhook once it lapses, well within the wait below.
TEST_F(WebhooksShortLease, AnEventCommittedBeforeACrashIsDeliveredAfterTheRestart) {
  Receiver receiver;
  receiver.status = 503;
  auto made = call("POST", "/api/webhooks/",
                   R"({"url":")" + receiver.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(made.status, 201);
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"y@example.com"})").status,
            201);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
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
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
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

// A receiver answering a byte every 300 ms never lets one read time out: the attempt is cut at
// timeout_seconds all the same, recorded as failed, and svcd stops at once mid-attempt.
TEST_F(WebhooksShortLease, ATricklingReceiverIsCutAtTheAttemptsDeadline) {
  TricklingReceiver receiver;
  const std::string hook =
      makeHook(R"({"url":")" + receiver.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"t@example.com"})").status,
            201);
  Poco::JSON::Object::Ptr d;
  ASSERT_TRUE(waitFor([&] {
    d = firstDelivery(hook);
    return d && d->getValue<int>("attempts") >= 1;
  })) << "no attempt recorded: the trickle held the worker";
  EXPECT_EQ(d->getValue<std::string>("state"), "pending");
  EXPECT_NE(d->getValue<std::string>("last_error").find("no complete answer within 1 s"),
            std::string::npos)
      << d->getValue<std::string>("last_error");
  EXPECT_TRUE(waitFor([&] { return receiver.cut.load() >= 1; }));
  // A next attempt is in flight (retries come after 50 ms): stopping does not wait for it.
  ASSERT_TRUE(waitFor([&] { return receiver.requests.load() >= 2; }));
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_EQ(svcd_->terminate(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(5));
}

TEST_F(WebhooksLongTimeout, StopCutsASendInFlight) {
  TricklingReceiver receiver;
  makeHook(R"({"url":")" + receiver.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"s@example.com"})").status,
            201);
  ASSERT_TRUE(waitFor([&] { return receiver.requests.load() >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // a few bytes into the answer
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_EQ(svcd_->terminate(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(5));
}

TEST(WebhookSettings, ALeaseShorterThanThreeAttemptsIsRefused) {
  Svcd::Options o;
  o.plugins = {"auth", "webhooks"};
  o.args = {"--set", "webhooks.timeout_seconds=10", "--set", "webhooks.lease_seconds=29"};
  Svcd svcd(o);
  EXPECT_NE(svcd.startExpectingFailure(), 0);
  EXPECT_NE(svcd.log().find("webhooks.lease_seconds must be at least 3 times"), std::string::npos)
      << svcd.log();
}

// One worker, a slow receiver with a backlog: the webhook that gets an event later is served
// within a fair share, not after the backlog.
TEST_F(WebhooksOneWorker, ABusyWebhookDoesNotKeepTheWorkerFromAnother) {
  Receiver busy, quiet;
  busy.delay_ms = 200;
  makeHook(R"({"url":")" + busy.url() + R"(","event_types":["contact.created"]})");
  makeHook(R"({"url":")" + quiet.url() + R"(","event_types":["identity.created"]})");
  constexpr int kBacklog = 40;  // 8 s of the busy receiver
  for (int i = 0; i < kBacklog; ++i) {
    ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_,
                   "{\"email\":\"b" + std::to_string(i) + "@example.com\"}")
                  .status,
              201);
  }
  ASSERT_TRUE(waitFor([&] { return !busy.bodies().empty(); }));
  // What is left of the backlog when the quiet event comes: a slow machine may have sent much
  // of it while the contacts were made.
  const std::size_t before = busy.bodies().size();
  if (before + 10 > static_cast<std::size_t>(kBacklog)) {
    GTEST_SKIP() << "the backlog was nearly sent (" << before << " of " << kBacklog
                 << ") before the quiet event: nothing left to wait behind";
  }
  identity("Cy");
  ASSERT_TRUE(waitFor([&] { return !quiet.bodies().empty(); }, 60));
  EXPECT_LT(busy.bodies().size() - before, static_cast<std::size_t>(kBacklog) - before)
      << "the quiet webhook waited for the whole rest of the backlog";
}

TEST_F(Webhooks, AnAccountHasAtMostTwentyWebhooks) {
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(call("POST", "/api/webhooks/", R"({"url":"http://127.0.0.1:9/h"})").status, 201);
  }
  auto r = call("POST", "/api/webhooks/?identity=" + ann_, R"({"url":"http://127.0.0.1:9/h"})");
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(r.json()->getValue<std::string>("code"), "conflict");
  EXPECT_EQ(r.json()->getValue<int>("limit"), 20);
  EXPECT_EQ(count(key_), 20);
  EXPECT_EQ(call("POST", "/api/webhooks/", R"({"url":"http://127.0.0.1:9/h"})", other_).status,
            201);
}

// A webhook URL may hold a token (Slack, Zapier): its events, which other webhooks and the event
// stream receive, carry only its scheme and host; its owner reads the whole URL.
TEST_F(Webhooks, WebhookEventsCarryTheUrlsHostNeverItsPathOrQuery) {
  Receiver watcher;
  makeHook(R"({"url":")" + watcher.url() + R"(","event_types":["webhook.created"]})");
  const std::string secret_url = "http://127.0.0.1:9/services/T0/B0/s3cr3tT0ken?key=k3y";
  const std::string hook = makeHook(R"({"url":")" + secret_url + R"("})");
  ASSERT_TRUE(waitFor([&] { return !watcher.bodies().empty(); }));
  const std::string body = watcher.bodies().front();
  EXPECT_NE(body.find(R"("url_host":"http://127.0.0.1:9")"), std::string::npos) << body;
  EXPECT_EQ(body.find("s3cr3tT0ken"), std::string::npos) << body;
  EXPECT_EQ(body.find("k3y"), std::string::npos) << body;
  EXPECT_EQ(body.find("\"url\""), std::string::npos) << body;
  EXPECT_EQ(call("GET", "/api/webhooks/" + hook + "/").json()->getValue<std::string>("url"),
            secret_url);
}

// Disabled, a webhook misses what happens meanwhile; enabled again, it gets what comes after.
TEST_F(Webhooks, AReEnabledWebhookGetsOnlyWhatHappensAfter) {
  Receiver receiver, witness;
  const std::string hook =
      makeHook(R"({"url":")" + receiver.url() + R"(","event_types":["contact.created"]})");
  // Always enabled, for the same events: once it has one, the fan-out has passed that event.
  makeHook(R"({"url":")" + witness.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(call("PATCH", "/api/webhooks/" + hook + "/", R"({"enabled":false})").status, 200);
  ASSERT_EQ(
      call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"off@example.com"})").status,
      201);
  ASSERT_TRUE(waitFor([&] { return !witness.bodies().empty(); }));  // passed by while disabled
  ASSERT_EQ(call("PATCH", "/api/webhooks/" + hook + "/", R"({"enabled":true})").status, 200);
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"on@example.com"})").status,
            201);
  ASSERT_TRUE(waitFor([&] { return !receiver.bodies().empty(); }));
  ASSERT_TRUE(waitFor([&] { return witness.bodies().size() >= 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nothing more comes
  ASSERT_EQ(receiver.bodies().size(), 1u);
  EXPECT_NE(receiver.bodies().front().find("on@example.com"), std::string::npos);
}

// Finished deliveries go with the events (events.retention_days); pending ones stay.
TEST_F(Webhooks, FinishedDeliveriesArePrunedAfterTheEventRetention) {
  Receiver receiver;
  const std::string hook =
      makeHook(R"({"url":")" + receiver.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"p@example.com"})").status,
            201);
  ASSERT_TRUE(waitFor([&] {
    auto d = firstDelivery(hook);
    return d && d->getValue<std::string>("state") == "delivered";
  }));
  ASSERT_EQ(svcd_->terminate(), 0);
  // Eight days old, the default retention being seven.
  runSql(svcd_->dbUrl(), {"UPDATE webhook_deliveries SET created_us = created_us - 691200000000"});
  ASSERT_TRUE(svcd_->start()) << svcd_->log();
  EXPECT_TRUE(waitFor([&] { return !firstDelivery(hook); })) << "the old delivery is still logged";
}

// The cursor set back over events already turned into deliveries (a restore, an operator): the
// duplicates are skipped and the events after them still delivered.
TEST_F(Webhooks, ACursorSetBackSkipsTheDeliveriesThatExist) {
  Receiver receiver;
  const std::string hook =
      makeHook(R"({"url":")" + receiver.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"a1@example.com"})").status,
            201);
  ASSERT_TRUE(waitFor([&] { return receiver.bodies().size() == 1; }));
  ASSERT_EQ(svcd_->terminate(), 0);
  runSql(svcd_->dbUrl(), {"UPDATE webhook_cursor SET seq = (SELECT after_seq FROM webhooks)"});
  ASSERT_TRUE(svcd_->start()) << svcd_->log();
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"a2@example.com"})").status,
            201);
  ASSERT_TRUE(waitFor([&] { return receiver.bodies().size() >= 2; }))
      << "the duplicate stalled the fan-out";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nothing more comes
  ASSERT_EQ(receiver.bodies().size(), 2u);
  EXPECT_NE(receiver.bodies().back().find("a2@example.com"), std::string::npos);
  EXPECT_EQ(call("GET", "/api/webhooks/" + hook + "/deliveries/").json()->getValue<int>("count"),
            2);
}

// Replaying a failing delivery again and again does not restart its retry window: the webhook is
// still disabled once the delivery has failed for the whole window (2 s here).
TEST_F(WebhooksShortWindow, ReplayingAPendingDeliveryKeepsItsRetryWindow) {
  Receiver receiver;
  receiver.status = 500;
  const std::string hook =
      makeHook(R"({"url":")" + receiver.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"r@example.com"})").status,
            201);
  Poco::JSON::Object::Ptr d;
  ASSERT_TRUE(waitFor([&] { return (d = firstDelivery(hook)) != nullptr; }));
  const std::string replay =
      "/api/webhooks/" + hook + "/deliveries/" + d->getValue<std::string>("id") + "/replay/";
  EXPECT_TRUE(waitFor(
      [&] {
        call("POST", replay, "{}");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        return !call("GET", "/api/webhooks/" + hook + "/").json()->getValue<bool>("enabled");
      },
      15))
      << "replays kept the failing webhook enabled";
  const auto w = call("GET", "/api/webhooks/" + hook + "/").json();
  EXPECT_NE(w->optValue<std::string>("disabled_reason", "").find("Deliveries failed"),
            std::string::npos);
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
  // --endpoint, not --url: svcctl's own --url would have sent the key to the webhook's host.
  const std::string moved = receiver.url() + "moved";
  auto [erc, edited] =
      ctl("webhooks edit " + uuid + " --disable --description changed --endpoint " + moved);
  EXPECT_EQ(erc, 0) << edited;
  EXPECT_NE(edited.find("enabled:     no"), std::string::npos) << edited;
  EXPECT_NE(edited.find(moved), std::string::npos) << edited;
  EXPECT_EQ(ctl("webhooks edit " + uuid + " --enable").first, 0);
  auto [rrc, rotated] = ctl("webhooks rotate-secret " + uuid);
  EXPECT_EQ(rrc, 0);
  EXPECT_NE(rotated.find("secret: whsec_"), std::string::npos) << rotated;
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"q@example.com"})").status,
            201);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
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

// Three other accounts with 20 webhooks each on a receiver that accepts and never answers, all
// sent an event: the healthy webhook of a fourth account still gets each of its events within
// seconds (it waited two minutes when four workers waited 10 s on every hanging receiver).
TEST_F(WebhooksFairness, AHealthyWebhookIsServedWhileOtherAccountsReceiversHang) {
  HangingReceiver hanging;
  for (int a = 0; a < 3; ++a) {
    const std::string key = operatorLogin(*svcd_, "hang" + std::to_string(a) + "@example.com")
                                ->optValue<std::string>("management_key", "");
    for (int i = 0; i < 20; ++i) {
      auto made =
          call("POST", "/api/webhooks/",
               R"({"url":")" + hanging.url() + R"(","event_types":["identity.created"]})", key);
      ASSERT_EQ(made.status, 201) << made.body;
    }
    ASSERT_EQ(call("POST", "/api/identities/", R"({"name":"Hang"})", key).status, 201);
  }
  // The hanging receivers hold attempts before the healthy events come.
  ASSERT_TRUE(waitFor([&] { return hanging.accepted.load() >= 8; }))
      << hanging.accepted.load() << " connections";
  Receiver healthy;
  makeHook(R"({"url":")" + healthy.url() + R"(","event_types":["contact.created"]})");
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_,
                   "{\"email\":\"h" + std::to_string(i) + "@example.com\"}")
                  .status,
              201);
    const auto made = std::chrono::steady_clock::now();
    // At least once, as webhooks are delivered: a repeat does not hide a delivery.
    ASSERT_TRUE(
        waitFor([&] { return healthy.bodies().size() >= static_cast<std::size_t>(i + 1); }, 60))
        << "event " << i << ": " << healthy.bodies().size() << " healthy deliveries, "
        << hanging.accepted.load() << " hanging connections; "
        << call("GET", "/api/webhooks/").body;
    const auto took = std::chrono::steady_clock::now() - made;
    // Within seconds: a hanging attempt lasts 10 s, and 60 of them on four workers took minutes.
    EXPECT_LT(took, std::chrono::seconds(4))
        << "event " << i << " took "
        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  }
  EXPECT_GE(hanging.accepted.load(), 12);  // the other accounts' receivers were still tried
}

// A failing webhook backs off (a minute here): replaying its pending delivery does not make it due
// sooner (429 with the seconds to wait), and a webhook's replays are limited to so many a minute.
TEST_F(WebhooksReplayLimits, ReplayRespectsTheBackoffAndARateLimit) {
  Receiver failing, fine;
  failing.status = 500;
  const std::string hook =
      makeHook(R"({"url":")" + failing.url() + R"(","event_types":["contact.created"]})");
  const std::string other =
      makeHook(R"({"url":")" + fine.url() + R"(","event_types":["contact.created"]})");
  ASSERT_EQ(call("POST", "/api/contacts/?identity=" + ann_, R"({"email":"b@example.com"})").status,
            201);
  Poco::JSON::Object::Ptr d;
  ASSERT_TRUE(waitFor([&] {
    d = firstDelivery(hook);
    return d && d->getValue<int>("attempts") == 1;
  }));
  const std::string replay =
      "/api/webhooks/" + hook + "/deliveries/" + d->getValue<std::string>("id") + "/replay/";
  for (int i = 0; i < 5; ++i) {
    auto r = call("POST", replay, "{}");
    ASSERT_EQ(r.status, 429) << r.body;
    EXPECT_EQ(r.json()->getValue<std::string>("code"), "throttled");
    const int wait = r.json()->getValue<int>("retry_after_seconds");
    EXPECT_GT(wait, 0);
    EXPECT_LE(wait, 60);
    EXPECT_EQ(r.headers["retry-after"], std::to_string(wait));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a replay would have gone by now
  EXPECT_EQ(failing.bodies().size(), 1u);
  EXPECT_EQ(firstDelivery(hook)->getValue<int>("attempts"), 1);

  // The healthy webhook's delivered delivery: three replays a minute, then 429.
  ASSERT_TRUE(waitFor([&] {
    auto f = firstDelivery(other);
    return f && f->getValue<std::string>("state") == "delivered";
  }));
  const std::string again = "/api/webhooks/" + other + "/deliveries/" +
                            firstDelivery(other)->getValue<std::string>("id") + "/replay/";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(call("POST", again, "{}").status, 202) << i;
  auto r = call("POST", again, "{}");
  ASSERT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(r.json()->getValue<std::string>("code"), "throttled");
  const int wait = r.json()->getValue<int>("retry_after_seconds");
  EXPECT_GT(wait, 0);
  EXPECT_LE(wait, 61);
  EXPECT_EQ(r.headers["retry-after"], std::to_string(wait));
  // The limit is the webhook's: the other one's replays are not counted against it (it still
  // answers the backoff, not the limit).
  EXPECT_NE(call("POST", replay, "{}").body.find("backing off"), std::string::npos);
}

}  // namespace
}  // namespace svc::testing
