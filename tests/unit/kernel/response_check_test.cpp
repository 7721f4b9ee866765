// The response check the test suites run on every answer (kernel/response_check.h): a body that
// its route's declaration does not allow is a 500 naming what is wrong.
#include "response_check.h"

#include <gtest/gtest.h>

namespace svc::kernel {
namespace {

sdk::Route route(std::map<int, sdk::Schema> responses) {
  sdk::Route r;
  r.method = "GET";
  r.pattern = "/api/things/";
  r.responses = std::move(responses);
  return r;
}

sdk::Response answer(int status, std::string body, std::string content_type) {
  sdk::Response a;
  a.status = status;
  a.body = std::move(body);
  a.content_type = std::move(content_type);
  return a;
}

TEST(ResponseCheck, BytesAreHeldToTheirMediaTypeOnly) {
  const auto xml = route({{200, sdk::Schema::bytes("text/xml")}});
  EXPECT_FALSE(responseMismatch(xml, answer(200, "<Response/>", "text/xml; charset=utf-8")));
  auto json = responseMismatch(xml, answer(200, "{}", "application/json"));
  ASSERT_TRUE(json);
  EXPECT_EQ(json->errors().count("content_type"), 1u);
  const auto download = route({{200, sdk::Schema::bytes("*/*")}});
  EXPECT_FALSE(responseMismatch(download, answer(200, "%PDF", "application/pdf")));
  EXPECT_TRUE(responseMismatch(download, answer(200, "x", "")));
}

TEST(ResponseCheck, JsonIsHeldToItsSchema) {
  const auto thing = route({{200, sdk::Schema::object().required("id", sdk::Schema::string())}});
  EXPECT_FALSE(responseMismatch(thing, answer(200, R"({"id":"a"})", "application/json")));
  auto extra = responseMismatch(thing, answer(200, R"({"id":"a","x":1})", "application/json"));
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->status(), 500);
  EXPECT_EQ(extra->code(), "response_mismatch");
  EXPECT_TRUE(responseMismatch(thing, answer(200, "<html>", "text/html")));
  EXPECT_TRUE(responseMismatch(thing, answer(201, R"({"id":"a"})", "application/json")))
      << "an undeclared success status";
}

}  // namespace
}  // namespace svc::kernel
