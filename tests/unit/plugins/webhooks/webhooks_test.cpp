// The webhooks plugin's core: Standard Webhooks signatures (the specification's published test
// vector), the retry schedule, the public-address rule for target URLs (the SDK's, shared with
// voice agents), which events a webhook wants and what a delivery carries.
#include "fan_out.h"
#include "retry_policy.h"
#include "sender.h"
#include "signature.h"
#include "watchdog.h"
#include "webhook_store.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Parser.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/StreamSocket.h>

#include <gtest/gtest.h>

namespace svc::plugins::webhooks {
namespace {

// From the Standard Webhooks specification's test vectors (standard-webhooks/spec).
TEST(WebhookSignature, SignsTheSpecificationsTestVector) {
  auto key = secretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  ASSERT_TRUE(key);
  EXPECT_EQ(sign(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSignature, RotationSignsWithBothSecretsSpaceSeparated) {
  const std::string a = newSecret(), b = newSecret();
  const std::string header = signatureHeader({a, b}, "id", 10, "{}");
  EXPECT_EQ(header,
            sign(*secretKey(a), "id", 10, "{}") + " " + sign(*secretKey(b), "id", 10, "{}"));
  EXPECT_EQ(signatureHeader({a}, "id", 10, "{}"), sign(*secretKey(a), "id", 10, "{}"));
}

TEST(WebhookSignature, SecretsAreWhsecAndThirtyTwoRandomBytes) {
  const std::string s = newSecret();
  ASSERT_EQ(s.rfind("whsec_", 0), 0u);
  EXPECT_EQ(secretKey(s)->size(), 32u);
  EXPECT_NE(s, newSecret());
  EXPECT_FALSE(secretKey("whsec_c2hvcnQ="));  // 5 bytes
  EXPECT_FALSE(secretKey("whsec_not base64!"));
}

TEST(WebhookRetries, DelaysDoubleWithJitterUpToTheCap) {
  const RetryPolicy p(5000000, 86400LL * 1000000);
  EXPECT_EQ(p.delay(1, 0.999999), 4999998);  // just under the base
  EXPECT_EQ(p.delay(1, 0.0), 3750000);       // three quarters of it
  EXPECT_EQ(p.delay(2, 0.0), 7500000);
  EXPECT_EQ(p.delay(3, 0.0), 15000000);
  EXPECT_EQ(p.cap(), 3600LL * 1000000);  // an hour
  EXPECT_LE(p.delay(40, 0.999999), p.cap());
  EXPECT_GE(p.delay(40, 0.0), p.cap() * 3 / 4);
  // Over 24 hours: about 30 attempts, never more than an hour apart.
  std::int64_t t = 0;
  int attempts = 1;
  while (!p.givesUp(0, t)) t += p.delay(attempts++, 0.5);
  EXPECT_GT(attempts, 20);
  EXPECT_LT(attempts, 40);
}

TEST(WebhookRetries, GivesUpOnceTheWindowHasPassed) {
  const RetryPolicy p(1000, 1000000);
  EXPECT_FALSE(p.givesUp(100, 999999));
  EXPECT_TRUE(p.givesUp(100, 1000100));
}

TEST(WebhookUrls, InternalAddressesAreRefusedUnlessAllowed) {
  using Poco::Net::IPAddress;
  for (const char* internal :
       {"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.1.1", "100.64.0.1",
        "0.0.0.0", "::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "224.0.0.1"}) {
    EXPECT_TRUE(sdk::isInternalAddress(IPAddress(internal))) << internal;
  }
  for (const char* outside : {"8.8.8.8", "1.1.1.1", "2606:4700::1111", "100.128.0.1"}) {
    EXPECT_FALSE(sdk::isInternalAddress(IPAddress(outside))) << outside;
  }
  auto refusal = [](const std::string& url, bool allow = false) -> std::string {
    try {
      sdk::checkedPublicUrl(url, "url", allow);
      return "";
    } catch (const sdk::HttpError& e) {
      EXPECT_EQ(e.status(), 400);
      return e.errors().count("url") ? e.errors().at("url").front() : "?";
    }
  };
  EXPECT_EQ(refusal("https://8.8.8.8/hook"), "");
  EXPECT_NE(refusal("http://127.0.0.1:9/hook").find("private"), std::string::npos);
  EXPECT_NE(refusal("http://[::1]/hook").find("private"), std::string::npos);
  EXPECT_NE(refusal("http://10.0.0.1/").find("private"), std::string::npos);
  EXPECT_EQ(refusal("http://127.0.0.1:9/hook", true), "");
  // The key that allows them, when the caller names one, is named in the refusal.
  try {
    sdk::checkedPublicUrl("http://127.0.0.1:9/hook", "url", false, "webhooks.allow_private_urls");
    ADD_FAILURE() << "accepted";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.errors().at("url").front(),
              "must not point at a loopback, private or link-local address (an operator may "
              "allow such URLs on a test server with webhooks.allow_private_urls=true)");
  }
  EXPECT_NE(refusal("ftp://8.8.8.8/").find("http"), std::string::npos);
  EXPECT_NE(refusal("https://user:pw@8.8.8.8/").find("credentials"), std::string::npos);
  EXPECT_NE(refusal("https://8.8.8.8/#x").find("fragment"), std::string::npos);
  EXPECT_NE(refusal("/relative").find("absolute"), std::string::npos);
  EXPECT_NE(refusal("https://no-such-host.invalid/").find("resolve"), std::string::npos);
  EXPECT_NE(refusal("https://8.8.8.8/" + std::string(2100, 'a')).find("2048"), std::string::npos);
}

TEST(WebhookUrls, TheSenderRefusesToConnectToAnInternalAddress) {
  Watchdog watchdog;
  Sender sender(false, std::chrono::milliseconds(500), watchdog);
  const SendResult r = sender.post("http://127.0.0.1:9/hook", {}, "{}");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("private"), std::string::npos) << r.error;
}

// A read that would wait for its own (long) timeout returns once the attempt's deadline passes.
TEST(WebhookWatchdog, ShutsASocketDownAtItsDeadline) {
  Poco::Net::ServerSocket server(Poco::Net::SocketAddress("127.0.0.1", 0));
  Poco::Net::StreamSocket client(server.address());
  Poco::Net::StreamSocket peer = server.acceptConnection();  // never writes
  client.setReceiveTimeout(Poco::Timespan(30, 0));
  Watchdog watchdog;
  const auto start = Watchdog::Clock::now();
  const auto token = watchdog.arm(client.impl()->sockfd(), start + std::chrono::milliseconds(200));
  char byte = 0;
  EXPECT_EQ(client.receiveBytes(&byte, 1), 0);  // the end, not 30 s of waiting
  EXPECT_LT(Watchdog::Clock::now() - start, std::chrono::seconds(10));
  EXPECT_GE(Watchdog::Clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_TRUE(watchdog.disarm(token));
  // Disarmed in time, a socket is left alone; after stop(), one armed is cut at once.
  Poco::Net::StreamSocket other(server.address());
  EXPECT_FALSE(watchdog.disarm(
      watchdog.arm(other.impl()->sockfd(), Watchdog::Clock::now() + std::chrono::hours(1))));
  watchdog.stop();
  const auto cut =
      watchdog.arm(other.impl()->sockfd(), Watchdog::Clock::now() + std::chrono::hours(1));
  EXPECT_EQ(other.receiveBytes(&byte, 1), 0);
  EXPECT_TRUE(watchdog.disarm(cut));
}

TEST(WebhookEvents, CarryTheUrlsSchemeAndHostOnly) {
  WebhookRow w;
  w.id = sdk::newUuid();
  w.url = "https://hooks.slack.com/services/T0/B0/tok3n?x=1";
  auto o = WebhookStore::eventJson(w);
  EXPECT_FALSE(o->has("url"));
  EXPECT_EQ(o->getValue<std::string>("url_host"), "https://hooks.slack.com");
  w.url = "http://[2001:db8::1]:8080/a?token=t";
  EXPECT_EQ(WebhookStore::eventJson(w)->getValue<std::string>("url_host"),
            "http://[2001:db8::1]:8080");
  EXPECT_EQ(WebhookStore::json(w)->getValue<std::string>("url"), w.url);
}

sdk::Event event(const std::string& type, const std::string& account, const std::string& identity,
                 std::int64_t seq) {
  sdk::Event e;
  e.sequence = seq;
  e.id = sdk::newUuid();
  e.type = type;
  e.created_us = 1764000000000000;
  e.account = account;
  e.identity = identity;
  e.object = new Poco::JSON::Object;
  e.object->set("uuid", "x\"y");
  return e;
}

TEST(WebhookFanOut, AWebhookWantsItsAccountsOrIdentitysEventsOfItsTypesAfterItWasMade) {
  WebhookRow w;
  w.account_id = "acct";
  w.after_seq = 10;
  EXPECT_TRUE(matches(w, event("contact.created", "acct", "", 11)));
  EXPECT_TRUE(matches(w, event("contact.created", "acct", "idA", 11)));
  EXPECT_FALSE(matches(w, event("contact.created", "other", "", 11)));
  EXPECT_FALSE(matches(w, event("contact.created", "acct", "", 10)));  // before it was made
  w.event_types = {"email.received"};
  EXPECT_FALSE(matches(w, event("contact.created", "acct", "", 11)));
  EXPECT_TRUE(matches(w, event("email.received", "acct", "", 11)));
  w.identity_uuid = "idA";
  EXPECT_TRUE(matches(w, event("email.received", "acct", "idA", 11)));
  EXPECT_FALSE(matches(w, event("email.received", "acct", "idB", 11)));
  EXPECT_FALSE(matches(w, event("email.received", "acct", "", 11)));
  w.enabled = false;
  EXPECT_FALSE(matches(w, event("email.received", "acct", "idA", 11)));
}

TEST(WebhookFanOut, APayloadIsTheEventStreamsEnvelope) {
  const sdk::Event e = event("contact.created", "acct", "", 5);
  const std::string body = payloadOf(e);
  auto o = Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
  EXPECT_EQ(o->getValue<std::string>("id"), e.id);
  EXPECT_EQ(o->getValue<std::string>("type"), "contact.created");
  EXPECT_EQ(o->getValue<std::string>("created_dt"), sdk::isoTimestamp(e.created_us));
  EXPECT_EQ(o->getValue<std::string>("account"), "acct");
  EXPECT_TRUE(o->isNull("identity"));
  EXPECT_EQ(o->getObject("object")->getValue<std::string>("uuid"), "x\"y");
  EXPECT_EQ(body.rfind("{\"id\":", 0), 0u);  // members in the stream's order
}

}  // namespace
}  // namespace svc::plugins::webhooks
