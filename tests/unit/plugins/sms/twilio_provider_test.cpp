// The twilio provider's REST side against a scripted Twilio on loopback (a Poco HTTP server in
// this process): what it asks Twilio, and what it makes of Twilio's answers, errors and silence.
#include "twilio_provider.h"

#include "seen_database.h"
#include "twilio_signature.h"

#include <svc/sdk/util.h>

#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/StreamCopier.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>

namespace svc::plugins::sms {
namespace {

const char* kSid = "AC00000000000000000000000000000001";
const char* kAccountPath = "/2010-04-01/Accounts/AC00000000000000000000000000000001/";

// A Twilio that answers each request with the next scripted answer (404 when none is left).
class FakeTwilio {
 public:
  struct Seen {
    std::string method, uri, authorization, content_type, body;
  };
  struct Answer {
    int status = 200;
    std::string body;
    bool hang = false;  // answer nothing until the test ends
  };

  FakeTwilio()
      : socket_(Poco::Net::SocketAddress("127.0.0.1", 0)),
        server_(new Factory(*this), socket_, new Poco::Net::HTTPServerParams) {
    server_.start();
  }
  ~FakeTwilio() {
    {
      std::lock_guard lock(mutex_);
      ended_ = true;
    }
    wake_.notify_all();
    server_.stopAll(true);
  }

  std::string base() const {
    return "http://127.0.0.1:" + std::to_string(socket_.address().port());
  }
  void script(Answer answer) {
    std::lock_guard lock(mutex_);
    answers_.push_back(std::move(answer));
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  struct Handler : Poco::Net::HTTPRequestHandler {
    explicit Handler(FakeTwilio& fake) : fake(fake) {}
    void handleRequest(Poco::Net::HTTPServerRequest& request,
                       Poco::Net::HTTPServerResponse& response) override {
      Seen seen{request.getMethod(), request.getURI(), request.get("Authorization", ""),
                request.getContentType(), ""};
      Poco::StreamCopier::copyToString(request.stream(), seen.body);
      Answer answer{404, R"({"code":20404,"message":"Not found","status":404})", false};
      {
        std::unique_lock lock(fake.mutex_);
        fake.seen_.push_back(seen);
        if (!fake.answers_.empty()) {
          answer = fake.answers_.front();
          fake.answers_.pop_front();
        }
        if (answer.hang) {
          fake.wake_.wait_for(lock, std::chrono::seconds(10), [&] { return fake.ended_; });
          return;
        }
      }
      response.setStatus(static_cast<Poco::Net::HTTPResponse::HTTPStatus>(answer.status));
      response.setContentType("application/json");
      response.sendBuffer(answer.body.data(), answer.body.size());
    }
    FakeTwilio& fake;
  };
  struct Factory : Poco::Net::HTTPRequestHandlerFactory {
    explicit Factory(FakeTwilio& fake) : fake(fake) {}
    Poco::Net::HTTPRequestHandler* createRequestHandler(
        const Poco::Net::HTTPServerRequest&) override {
      return new Handler(fake);
    }
    FakeTwilio& fake;
  };

  std::mutex mutex_;
  std::condition_variable wake_;
  bool ended_ = false;
  std::deque<Answer> answers_;
  std::vector<Seen> seen_;
  Poco::Net::ServerSocket socket_;
  Poco::Net::HTTPServer server_;
};

struct NoEvents : CarrierEvents {
  bool ownsNumber(const std::string&) override { return false; }
  bool received(const InboundSms&) override { return false; }
  bool delivery(const Delivery&) override { return false; }
  CallAnswer incomingCall(const IncomingCall&) override { return {}; }
};

TwilioConfig configFor(const std::string& api_base) {
  TwilioConfig c;
  c.api_base = api_base;
  c.account_sid = kSid;
  c.auth_token = "secret token";
  c.timeout_seconds = 1;
  c.public_base_url = "https://svc.example";
  return c;
}

std::string field(const std::string& body, const std::string& name) {
  for (const auto& [n, v] : parseForm(body)) {
    if (n == name) return v;
  }
  return "(absent)";
}

const char* kAvailable = R"({"available_phone_numbers":[
  {"phone_number":"+12025550101","iso_country":"US"},
  {"phone_number":"+12025550102","iso_country":"US"},
  {"phone_number":"+12025550103","iso_country":"US"}]})";

class TwilioProviderTest : public ::testing::Test {
 protected:
  FakeTwilio twilio;
  NoEvents events;
  SeenDatabase seen;
  TwilioProvider provider{configFor(twilio.base()), events, *seen.db};
};

TEST_F(TwilioProviderTest, AcquireSearchesThenBuysTheFirstNumberNotHeldWithOurWebhooks) {
  twilio.script({200, kAvailable});
  twilio.script({201, R"({"sid":"PN0123","phone_number":"+12025550102"})"});
  auto number = provider.acquire("US", [](const std::string& n) { return n == "+12025550101"; });
  ASSERT_TRUE(number);
  EXPECT_EQ(number->e164, "+12025550102");
  EXPECT_EQ(number->ref, "PN0123");

  const auto seen = twilio.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].uri,
            std::string(kAccountPath) + "AvailablePhoneNumbers/US/Local.json?SmsEnabled=true");
  const std::string basic = "Basic " + sdk::base64(std::string(kSid) + ":secret token");
  EXPECT_EQ(seen[0].authorization, basic);
  EXPECT_EQ(seen[1].method, "POST");
  EXPECT_EQ(seen[1].uri, std::string(kAccountPath) + "IncomingPhoneNumbers.json");
  EXPECT_EQ(seen[1].authorization, basic);
  EXPECT_EQ(seen[1].content_type, "application/x-www-form-urlencoded");
  EXPECT_EQ(field(seen[1].body, "PhoneNumber"), "+12025550102");
  EXPECT_EQ(field(seen[1].body, "SmsUrl"), "https://svc.example/api/sms/webhooks/twilio/sms/");
  EXPECT_EQ(field(seen[1].body, "SmsMethod"), "POST");
  EXPECT_EQ(field(seen[1].body, "VoiceUrl"), "https://svc.example/api/sms/webhooks/twilio/voice/");
  EXPECT_EQ(field(seen[1].body, "VoiceMethod"), "POST");
}

TEST_F(TwilioProviderTest, AcquireFindsNothingWhenTwilioHasNoFreeNumber) {
  twilio.script({200, R"({"available_phone_numbers":[]})"});
  EXPECT_FALSE(provider.acquire("GB", [](const std::string&) { return false; }));
  twilio.script({200, kAvailable});
  EXPECT_FALSE(provider.acquire("US", [](const std::string&) { return true; }));
  EXPECT_EQ(twilio.seen().size(), 2u);  // nothing bought
}

TEST_F(TwilioProviderTest, APurchaseRefusedMovesOnToTheNextNumber) {
  twilio.script({200, kAvailable});
  twilio.script(
      {400, R"({"code":21422,"message":"PhoneNumber requested is not available","status":400})"});
  twilio.script({201, R"({"sid":"PN0124","phone_number":"+12025550102"})"});
  auto number = provider.acquire("US", [](const std::string&) { return false; });
  ASSERT_TRUE(number);
  EXPECT_EQ(number->e164, "+12025550102");
}

TEST_F(TwilioProviderTest, NumbersGoneToFasterBuyersDoNotExhaustTheAttempts) {
  twilio.script({200, R"({"available_phone_numbers":[
    {"phone_number":"+12025550101"},{"phone_number":"+12025550102"},
    {"phone_number":"+12025550103"},{"phone_number":"+12025550104"}]})"});
  const std::string gone =
      R"({"code":21422,"message":"PhoneNumber requested is not available","status":400})";
  for (int i = 0; i < 3; ++i) twilio.script({400, gone});
  twilio.script({201, R"({"sid":"PN0125","phone_number":"+12025550104"})"});
  auto number = provider.acquire("US", [](const std::string&) { return false; });
  ASSERT_TRUE(number);
  EXPECT_EQ(number->e164, "+12025550104");

  // Other refusals end it after three.
  twilio.script({200, R"({"available_phone_numbers":[
    {"phone_number":"+12025550105"},{"phone_number":"+12025550106"},
    {"phone_number":"+12025550107"},{"phone_number":"+12025550108"}]})"});
  for (int i = 0; i < 3; ++i) {
    twilio.script({500, R"({"code":20500,"message":"Internal Server Error","status":500})"});
  }
  EXPECT_THROW(provider.acquire("US", [](const std::string&) { return false; }), TwilioApiError);
  EXPECT_EQ(twilio.seen().size(), 5u + 4u);
}

TEST_F(TwilioProviderTest, AcquireThrowsTwiliosRefusal) {
  twilio.script({401, R"({"code":20003,"message":"Authenticate","status":401})"});
  try {
    provider.acquire("US", [](const std::string&) { return false; });
    ADD_FAILURE() << "no error";
  } catch (const TwilioApiError& e) {
    EXPECT_EQ(e.httpStatus(), 401);
    EXPECT_EQ(e.code(), "20003");
    EXPECT_STREQ(e.what(), "Authenticate");
  }
}

TEST_F(TwilioProviderTest, SendPostsTheMessageWithItsStatusCallback) {
  twilio.script({201, R"({"sid":"SM0123","status":"queued","error_code":null})"});
  const std::string body = "Your code: 123 456 & more = \xC3\xA9";
  const Delivery d = provider.send("msg-1", "+12025550101", "+15551234567", body);
  EXPECT_EQ(d.status, "queued");
  EXPECT_EQ(d.ref, "SM0123");
  EXPECT_EQ(d.error_code, "");
  const auto seen = twilio.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].uri, std::string(kAccountPath) + "Messages.json");
  EXPECT_EQ(field(seen[0].body, "From"), "+12025550101");
  EXPECT_EQ(field(seen[0].body, "To"), "+15551234567");
  EXPECT_EQ(field(seen[0].body, "Body"), body);
  EXPECT_EQ(field(seen[0].body, "StatusCallback"),
            "https://svc.example/api/sms/webhooks/twilio/status/?message=msg-1");
}

TEST_F(TwilioProviderTest, ACarrierErrorIsAFailedDeliveryWithTwiliosCodeAndReason) {
  twilio.script({400, R"({"code":21211,"message":"The 'To' number 5 is not a valid phone number.",)"
                      R"("more_info":"https://www.twilio.com/docs/errors/21211","status":400})"});
  const Delivery d = provider.send("msg-1", "+12025550101", "+5", "hi");
  EXPECT_EQ(d.status, "failed");
  EXPECT_EQ(d.ref, "");
  EXPECT_EQ(d.error_code, "21211");
  EXPECT_EQ(d.error_message, "The 'To' number 5 is not a valid phone number.");

  twilio.script({503, "<html>Service Unavailable</html>"});
  const Delivery e = provider.send("msg-2", "+12025550101", "+15551234567", "hi");
  EXPECT_EQ(e.status, "failed");
  EXPECT_EQ(e.error_code, "");
  EXPECT_EQ(e.error_message, "Twilio answered 503.");

  twilio.script({201, R"({"sid":"SM9","status":"failed","error_code":30007,)"
                      R"("error_message":"Carrier violation"})"});
  const Delivery f = provider.send("msg-3", "+12025550101", "+15551234567", "hi");
  EXPECT_EQ(f.status, "failed");
  EXPECT_EQ(f.ref, "SM9");
  EXPECT_EQ(f.error_code, "30007");
  EXPECT_EQ(f.error_message, "Carrier violation");
}

TEST_F(TwilioProviderTest, SilenceIsAFailedDeliveryAfterTheTimeout) {
  twilio.script({0, "", true});
  const auto start = std::chrono::steady_clock::now();
  const Delivery d = provider.send("msg-1", "+12025550101", "+15551234567", "hi");
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(d.status, "failed");
  EXPECT_EQ(d.error_message, "Twilio did not answer within 1 seconds.");
  EXPECT_LT(took, std::chrono::seconds(10)) << "a loaded machine is late, not this late";
}

TEST(TwilioProvider, AnUnreachableTwilioIsAFailedDelivery) {
  Poco::Net::ServerSocket closed(Poco::Net::SocketAddress("127.0.0.1", 0));
  const std::string base = "http://127.0.0.1:" + std::to_string(closed.address().port());
  closed.close();
  NoEvents events;
  SeenDatabase seen;
  TwilioProvider provider(configFor(base), events, *seen.db);
  const Delivery d = provider.send("msg-1", "+12025550101", "+15551234567", "hi");
  EXPECT_EQ(d.status, "failed");
  EXPECT_NE(d.error_message.find("Twilio cannot be reached"), std::string::npos) << d.error_message;
  EXPECT_THROW(provider.acquire("US", [](const std::string&) { return false; }), ProviderError);
}

TEST_F(TwilioProviderTest, ReleaseDeletesTheNumberAndSwallowsAFailure) {
  twilio.script({204, ""});
  provider.release({"+12025550102", "PN0123"});
  twilio.script({404, R"({"code":20404,"message":"Not found","status":404})"});
  provider.release({"+12025550103", "PN0124"});  // logged (no logger here), not thrown
  provider.release({"+12025550104", ""});        // nothing to release
  const auto seen = twilio.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].method, "DELETE");
  EXPECT_EQ(seen[0].uri, std::string(kAccountPath) + "IncomingPhoneNumbers/PN0123.json");
  EXPECT_EQ(seen[1].uri, std::string(kAccountPath) + "IncomingPhoneNumbers/PN0124.json");
}

}  // namespace
}  // namespace svc::plugins::sms
