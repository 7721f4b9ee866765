// Twilio's webhooks: only requests Twilio signed for this server's public URL, each once, reach
// CarrierEvents; delivery statuses are mapped; calls are answered with TwiML.
#include "twilio_webhooks.h"

#include "seen_database.h"
#include "twilio_client.h"
#include "twilio_signature.h"
#include "twiml.h"

#include <svc/sdk/http.h>

#include <Poco/URI.h>

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace svc::plugins::sms {
namespace {

const char* kBase = "https://svc.example";

// Records what the webhooks report.
struct RecordingEvents : CarrierEvents {
  std::vector<InboundSms> inbound;
  std::vector<Delivery> deliveries;
  std::vector<IncomingCall> calls;
  std::string handoff_url;
  bool fail_next = false;

  bool ownsNumber(const std::string&) override { return true; }
  bool received(const InboundSms& sms) override {
    if (fail_next) {
      fail_next = false;
      throw std::runtime_error("the database is down");
    }
    inbound.push_back(sms);
    return true;
  }
  bool delivery(const Delivery& report) override {
    deliveries.push_back(report);
    return true;
  }
  CallAnswer incomingCall(const IncomingCall& call) override {
    calls.push_back(call);
    return {handoff_url};
  }
};

TwilioConfig config() {
  TwilioConfig c;
  c.auth_token = "tok";
  c.public_base_url = kBase;
  return c;
}

std::string encode(const FormParams& params) {
  Poco::URI uri("/");
  for (const auto& [n, v] : params) uri.addQueryParameter(n, v);
  return uri.getRawQuery();
}

// A POST to path with params, signed with token for the URL signed_url (default: the public one).
sdk::Request signedRequest(const std::string& path, const FormParams& params,
                           const std::string& token = "tok", std::string signed_url = "") {
  sdk::Request r;
  r.method = "POST";
  r.path = path;
  r.content_type = "application/x-www-form-urlencoded";
  r.body = encode(params);
  if (signed_url.empty()) signed_url = kBase + path;
  r.headers["x-twilio-signature"] = twilioSignature(token, signed_url, params);
  return r;
}

FormParams inboundParams(const std::string& body = "Your code is 123456") {
  return {{"MessageSid", "SM0123456789abcdef0123456789abcdef"},
          {"AccountSid", "AC1"},
          {"From", "+15551234567"},
          {"To", "+12025550101"},
          {"Body", body}};
}

void expectRefused(const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << "not refused";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 403);
    EXPECT_EQ(e.code(), "permission_denied");
  }
}

TEST(TwilioWebhooks, RegistersThreePublicFormRoutes) {
  struct Routes : sdk::RouteRegistry {
    std::vector<sdk::Route> added;
    void add(sdk::Route route) override { added.push_back(std::move(route)); }
  } routes;
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  hooks.registerRoutes(routes);
  ASSERT_EQ(routes.added.size(), 3u);
  std::vector<std::string> patterns;
  for (const auto& r : routes.added) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.auth, sdk::AuthNeed::kNone);
    EXPECT_EQ(r.body, sdk::BodyKind::kJsonOrForm);
    // Declared: the kernel refuses a parameter the URL Twilio was given never carries.
    ASSERT_TRUE(r.query.has_value()) << r.pattern;
    EXPECT_EQ(r.query->size(), r.pattern == kTwilioStatusPath ? 1u : 0u) << r.pattern;
    EXPECT_FALSE(r.responses.empty()) << r.pattern;
    patterns.push_back(r.pattern);
  }
  EXPECT_EQ(patterns, (std::vector<std::string>{"/api/sms/webhooks/twilio/sms/",
                                                "/api/sms/webhooks/twilio/status/",
                                                "/api/sms/webhooks/twilio/voice/"}));
  // The handler registered is the verifying one.
  sdk::Request unsigned_request = signedRequest(kTwilioSmsPath, inboundParams());
  unsigned_request.headers.clear();
  expectRefused([&] { routes.added[0].handler(unsigned_request); });
  EXPECT_TRUE(events.inbound.empty());
}

TEST(TwilioWebhooks, AnInboundSmsSignedByTheTwilioPackageIsReceived) {
  // Body and signature exactly as twilio-node 6.2.0 makes them (URLSearchParams encoding, `+` for
  // spaces; getExpectedTwilioSignature with token `tok`).
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  sdk::Request r;
  r.method = "POST";
  r.path = kTwilioSmsPath;
  r.content_type = "application/x-www-form-urlencoded";
  r.body =
      "Body=Code%3A+123+456+%C3%A9+%E2%9C%93&From=%2B15551234567&To=%2B12025550101&MessageSid="
      "SM0123456789abcdef0123456789abcdef";
  r.headers["x-twilio-signature"] = "PYCJTVt86g6LHPErQHM/7Qa2eW0=";
  const sdk::Response answer = hooks.sms(r);
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, kTwimlType);
  EXPECT_EQ(answer.body, twimlEmpty());
  ASSERT_EQ(events.inbound.size(), 1u);
  EXPECT_EQ(events.inbound[0].from, "+15551234567");
  EXPECT_EQ(events.inbound[0].to, "+12025550101");
  EXPECT_EQ(events.inbound[0].body, "Code: 123 456 \xC3\xA9 \xE2\x9C\x93");
  EXPECT_EQ(events.inbound[0].ref, "SM0123456789abcdef0123456789abcdef");
}

TEST(TwilioWebhooks, UnsignedBadlySignedOrTamperedRequestsAreRefusedAndReportNothing) {
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  sdk::Request missing = signedRequest(kTwilioSmsPath, inboundParams());
  missing.headers.erase("x-twilio-signature");
  expectRefused([&] { hooks.sms(missing); });
  sdk::Request empty = signedRequest(kTwilioSmsPath, inboundParams());
  empty.headers["x-twilio-signature"] = "";
  expectRefused([&] { hooks.sms(empty); });
  expectRefused(
      [&] { hooks.sms(signedRequest(kTwilioSmsPath, inboundParams(), "another-token")); });
  // Signed for another server, or another of our webhooks.
  expectRefused([&] {
    hooks.sms(signedRequest(kTwilioSmsPath, inboundParams(), "tok",
                            std::string("https://evil.example") + kTwilioSmsPath));
  });
  expectRefused([&] {
    hooks.sms(signedRequest(kTwilioSmsPath, inboundParams(), "tok",
                            std::string(kBase) + kTwilioStatusPath));
  });
  sdk::Request tampered = signedRequest(kTwilioSmsPath, inboundParams());
  tampered.body = encode(inboundParams("Your code is 999999"));
  expectRefused([&] { hooks.sms(tampered); });
  // A JSON body is not what Twilio signs.
  sdk::Request json = signedRequest(kTwilioSmsPath, {});
  json.content_type = "application/json";
  json.body = R"({"From":"+15551234567","To":"+12025550101","Body":"hi"})";
  expectRefused([&] { hooks.sms(json); });
  EXPECT_TRUE(events.inbound.empty());
}

TEST(TwilioWebhooks, TheSignedUrlIncludesTheQueryAsReceived) {
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  sdk::Request r = signedRequest(kTwilioSmsPath, inboundParams(), "tok",
                                 std::string(kBase) + kTwilioSmsPath + "?a=1&b=x%20y");
  r.query = {{"a", "1"}, {"b", "x y"}};
  EXPECT_EQ(hooks.sms(r).status, 200);
  sdk::Request without = signedRequest(kTwilioSmsPath, inboundParams("again"), "tok",
                                       std::string(kBase) + kTwilioSmsPath + "?a=1");
  expectRefused([&] { hooks.sms(without); });
  EXPECT_EQ(events.inbound.size(), 1u);
}

TEST(TwilioWebhooks, AReplayedRequestIsRefusedButARetryAfterAFailureIsServed) {
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  const sdk::Request r = signedRequest(kTwilioSmsPath, inboundParams());
  EXPECT_EQ(hooks.sms(r).status, 200);
  expectRefused([&] { hooks.sms(r); });
  EXPECT_EQ(events.inbound.size(), 1u);

  // Storing failed: Twilio's retry (the same request) must get through.
  const sdk::Request other = signedRequest(kTwilioSmsPath, inboundParams("another"));
  events.fail_next = true;
  EXPECT_THROW(hooks.sms(other), std::runtime_error);
  EXPECT_EQ(hooks.sms(other).status, 200);
  expectRefused([&] { hooks.sms(other); });
  EXPECT_EQ(events.inbound.size(), 2u);
}

TEST(TwilioWebhooks, ASignedRequestLackingAFieldIsABadRequest) {
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  try {
    hooks.sms(signedRequest(kTwilioSmsPath, {{"Body", "no numbers"}}));
    ADD_FAILURE() << "accepted";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
  }
  EXPECT_TRUE(events.inbound.empty());
}

Delivery statusReport(const FormParams& params) {
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  EXPECT_EQ(hooks.status(signedRequest(kTwilioStatusPath, params)).status, 204);
  return events.deliveries.empty() ? Delivery{"(none)", "", "", ""} : events.deliveries.at(0);
}

TEST(TwilioWebhooks, StatusCallbacksMapTwiliosStatuses) {
  const FormParams base{{"MessageSid", "SM00000000000000000000000000000001"},
                        {"AccountSid", "AC1"}};
  auto with = [&](FormParams more) {
    FormParams p = base;
    p.insert(p.end(), more.begin(), more.end());
    return statusReport(p);
  };
  EXPECT_EQ(with({{"MessageStatus", "queued"}}).status, "queued");
  EXPECT_EQ(with({{"MessageStatus", "sending"}}).status, "queued");
  EXPECT_EQ(with({{"MessageStatus", "sent"}}).status, "sent");
  const Delivery delivered = with({{"MessageStatus", "delivered"}});
  EXPECT_EQ(delivered.status, "delivered");
  EXPECT_EQ(delivered.ref, "SM00000000000000000000000000000001");
  EXPECT_EQ(delivered.error_code, "");
  const Delivery undelivered = with({{"MessageStatus", "undelivered"}, {"ErrorCode", "30003"}});
  EXPECT_EQ(undelivered.status, "undelivered");
  EXPECT_EQ(undelivered.error_code, "30003");
  EXPECT_EQ(undelivered.error_message, "Twilio reports the message undelivered (error 30003).");
  const Delivery failed = with(
      {{"MessageStatus", "failed"}, {"ErrorCode", "30007"}, {"ErrorMessage", "Carrier violation"}});
  EXPECT_EQ(failed.status, "failed");
  EXPECT_EQ(failed.error_code, "30007");
  EXPECT_EQ(failed.error_message, "Carrier violation");
  EXPECT_EQ(delivered.message_id, "");
  // A status about nothing we sent is acknowledged and ignored.
  EXPECT_EQ(with({{"MessageStatus", "receiving"}}).status, "(none)");
}

TEST(TwilioWebhooks, AStatusCallbackNamesOurMessageFromItsUrl) {
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  const std::string id = "3f2b8c1e-0d4a-4b7e-9a51-6c0e2d7f8a90";
  sdk::Request r = signedRequest(
      kTwilioStatusPath,
      {{"MessageSid", "SM00000000000000000000000000000001"}, {"MessageStatus", "sent"}}, "tok",
      std::string(kBase) + kTwilioStatusPath + "?message=" + id);
  r.query = {{"message", id}};
  EXPECT_EQ(hooks.status(r).status, 204);
  ASSERT_EQ(events.deliveries.size(), 1u);
  EXPECT_EQ(events.deliveries[0].message_id, id);
  EXPECT_EQ(events.deliveries[0].ref, "SM00000000000000000000000000000001");
}

TEST(TwilioWebhooks, DeliveryStatusNamesOursOrNothing) {
  EXPECT_EQ(deliveryStatus("accepted"), "queued");
  EXPECT_EQ(deliveryStatus("scheduled"), "queued");
  EXPECT_EQ(deliveryStatus("read"), "delivered");
  EXPECT_EQ(deliveryStatus("canceled"), "failed");
  EXPECT_EQ(deliveryStatus("received"), "");
  EXPECT_EQ(deliveryStatus("Delivered"), "");
}

TEST(TwilioWebhooks, ACallIsHandedToTheVoiceAgentOrDeclined) {
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  const FormParams call{{"CallSid", "CA00000000000000000000000000000001"},
                        {"From", "+15551234567"},
                        {"To", "+12025550101"},
                        {"CallStatus", "ringing"}};
  events.handoff_url = "https://agent.example/voice?identity=1&lang=en";
  sdk::Response answer = hooks.voice(signedRequest(kTwilioVoicePath, call));
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, kTwimlType);
  EXPECT_EQ(answer.body, twimlRedirect(events.handoff_url));
  ASSERT_EQ(events.calls.size(), 1u);
  EXPECT_EQ(events.calls[0].from, "+15551234567");
  EXPECT_EQ(events.calls[0].to, "+12025550101");
  EXPECT_EQ(events.calls[0].ref, "CA00000000000000000000000000000001");

  events.handoff_url.clear();
  const FormParams withheld{
      {"CallSid", "CA00000000000000000000000000000002"}, {"From", ""}, {"To", "+12025550101"}};
  answer = hooks.voice(signedRequest(kTwilioVoicePath, withheld));
  EXPECT_EQ(answer.body, twimlSayAndHangUp(kDeclinedCallMessage));
  EXPECT_EQ(events.calls.at(1).from, "anonymous");
}

TEST(Twiml, AnswersAreWellFormedAndEscaped) {
  EXPECT_EQ(twimlEmpty(), "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response/>");
  EXPECT_EQ(twimlRedirect("https://a.example/v?x=1&y=<2>"),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Redirect "
            "method=\"POST\">https://a.example/v?x=1&amp;y=&lt;2&gt;</Redirect></Response>");
  EXPECT_EQ(twimlSayAndHangUp("Tom & \"Jerry\" <say>"),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Say>Tom &amp; &quot;Jerry&quot; "
            "&lt;say&gt;</Say><Hangup/></Response>");
}

TEST(TwilioWebhooks, ASignedRequestReshapedIsStillAReplayAndIdsMustBeTwilios) {
  SeenDatabase seen;
  RecordingEvents events;
  TwilioWebhooks hooks(config(), events, *seen.db);
  const FormParams sms = inboundParams("hi");
  auto first = signedRequest(kTwilioSmsPath, sms);
  EXPECT_EQ(hooks.sms(first).status, 200);
  // The same parameters in another order (and one repeated) sign the same: a replay.
  FormParams reordered(sms.rbegin(), sms.rend());
  reordered.push_back(sms[4]);
  expectRefused([&] { hooks.sms(signedRequest(kTwilioSmsPath, reordered)); });
  // Names and values run together: From swallows MessageSid, leaving no id.
  const FormParams merged{{"From", "+15551234567MessageSidSM0123456789abcdef0123456789abcdef"},
                          {"To", "+12025550101"},
                          {"Body", "hi"}};
  EXPECT_THROW(hooks.sms(signedRequest(kTwilioSmsPath, merged)), sdk::HttpError);
  const FormParams short_sid{
      {"MessageSid", "SM1"}, {"From", "+15551234567"}, {"To", "+12025550101"}};
  expectRefused([&] { hooks.sms(signedRequest(kTwilioSmsPath, short_sid)); });
  EXPECT_EQ(events.inbound.size(), 1u);
}

}  // namespace
}  // namespace svc::plugins::sms
