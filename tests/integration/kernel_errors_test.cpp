// Error answers that echo what the client sent: whatever the input, the answer is valid JSON in
// valid UTF-8 and its detail is a sentence, not a copy of the input.
#include "harness.h"

#include <Poco/JSON/Parser.h>
#include <Poco/TextIterator.h>
#include <Poco/UTF8Encoding.h>

#include <gtest/gtest.h>

namespace svc::testing {
namespace {

bool validUtf8(const std::string& text) {
  Poco::UTF8Encoding utf8;
  for (Poco::TextIterator it(text, utf8), end(text); it != end; ++it) {
    if (*it < 0) return false;
  }
  return true;
}

// A raw request with a body, as bytes, so nothing on the way cleans it up.
std::string request(const std::string& method, const std::string& target,
                    const std::string& content_type, const std::string& body) {
  return method + " " + target +
         " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

class KernelErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new Svcd();
    ASSERT_TRUE(server_->start());
  }
  static void TearDownTestSuite() {
    server_->terminate();
    delete server_;
    server_ = nullptr;
  }

  // Sends bytes; expects `status` and an error body a client can parse and a person can read.
  void expectAReadableError(const std::string& bytes, int status, const std::string& what) {
    SCOPED_TRACE(what);
    std::string answer = rawExchange(server_->port(), bytes);
    ASSERT_EQ(answer.rfind("HTTP/1.1 " + std::to_string(status), 0), 0u) << answer.substr(0, 200);
    std::string body = answer.substr(answer.find("\r\n\r\n") + 4);
    EXPECT_LT(body.size(), 1000u) << body.substr(0, 300);
    ASSERT_TRUE(validUtf8(body)) << body.substr(0, 300);
    Poco::JSON::Object::Ptr error;
    try {
      error = Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
    } catch (const Poco::Exception& e) {
      FAIL() << e.displayText() << ": " << body.substr(0, 300);
    }
    std::string detail = error->getValue<std::string>("detail");
    EXPECT_FALSE(detail.empty());
    EXPECT_LE(detail.size(), 200u) << detail;
  }

  static Svcd* server_;
};
Svcd* KernelErrors::server_ = nullptr;

TEST_F(KernelErrors, AHugeNumberIsNotEchoedWhole) {
  expectAReadableError(request("POST", "/api/testkit/echo/", "application/json",
                               "{\"n\": " + std::string(100000, '9') + "}"),
                       400, "100,000 digits");
  expectAReadableError(request("POST", "/api/testkit/echo/", "application/json",
                               "{\"n\": 1e" + std::string(5000, '9') + "}"),
                       400, "a huge exponent");
}

TEST_F(KernelErrors, InvalidUtf8FromTheClientNeverReachesTheAnswer) {
  expectAReadableError(
      request("POST", "/api/testkit/echo/", "application/json", "{\"a\": \"\xef\"}"), 400,
      "a raw 0xEF byte in the body");
  expectAReadableError(
      request("POST", "/api/testkit/echo/", "text/\xef" + std::string(3000, 'x'), "{}"), 415,
      "a raw 0xEF byte in a long Content-Type");
}

TEST_F(KernelErrors, LongPathsQueriesAndMethodsAreCut) {
  expectAReadableError(request("GET", "/api/" + std::string(5000, 'a') + "/", "text/plain", ""),
                       404, "a long path");
  expectAReadableError(
      request("GET", "/api/health/?" + std::string(3000, 'q') + "=%EF", "text/plain", ""), 400,
      "a long query parameter name with an invalid value");
  expectAReadableError(request(std::string(500, 'P'), "/api/health/", "text/plain", ""), 405,
                       "a long method");
}

}  // namespace
}  // namespace svc::testing
