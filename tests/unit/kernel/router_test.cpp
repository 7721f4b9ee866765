#include "router.h"

#include <gtest/gtest.h>

namespace svc::kernel {
namespace {

sdk::Route route(const std::string& method, const std::string& pattern) {
  sdk::Route r;
  r.method = method;
  r.pattern = pattern;
  r.handler = [](sdk::Request&) { return sdk::Response::noContent(); };
  return r;
}

TEST(Router, MatchesWithAndWithoutTrailingSlash) {
  Router router;
  router.add(route("GET", "/api/health/"), "kernel");
  EXPECT_EQ(router.match("GET", "/api/health/").status, RouteMatch::Status::kFound);
  EXPECT_EQ(router.match("GET", "/api/health").status, RouteMatch::Status::kFound);
  EXPECT_EQ(router.match("GET", "/api/healthz").status, RouteMatch::Status::kNotFound);
}

TEST(Router, BindsNamedParameters) {
  Router router;
  router.add(route("POST", "/api/email-messages/{id}/reply/"), "email");
  auto m = router.match("POST", "/api/email-messages/abc-123/reply/");
  ASSERT_EQ(m.status, RouteMatch::Status::kFound);
  EXPECT_EQ(m.params.at("id"), "abc-123");
  EXPECT_EQ(m.entry->route.pattern, "/api/email-messages/{id}/reply/");
}

TEST(Router, StaticSegmentWinsOverParameter) {
  Router router;
  router.add(route("GET", "/api/email/{id}/"), "email");
  router.add(route("GET", "/api/email/check-availability/"), "email");
  auto m = router.match("GET", "/api/email/check-availability/");
  ASSERT_EQ(m.status, RouteMatch::Status::kFound);
  EXPECT_TRUE(m.params.empty());
  auto p = router.match("GET", "/api/email/123/");
  ASSERT_EQ(p.status, RouteMatch::Status::kFound);
  EXPECT_EQ(p.params.at("id"), "123");
}

TEST(Router, ParameterStillMatchesWhereStaticPrefixDeadEnds) {
  Router router;
  router.add(route("GET", "/api/things/special/"), "a");
  router.add(route("GET", "/api/things/{id}/parts/"), "a");
  auto m = router.match("GET", "/api/things/special/parts/");
  ASSERT_EQ(m.status, RouteMatch::Status::kFound);
  EXPECT_EQ(m.params.at("id"), "special");
}

TEST(Router, AStaticRouteWithoutTheMethodIsMethodNotAllowedNotAParameterMatch) {
  Router router;
  router.add(route("GET", "/api/things/{id}/colour/"), "a");
  router.add(route("POST", "/api/things/{id}/{action}/"), "b");
  auto m = router.match("POST", "/api/things/7/colour/");
  ASSERT_EQ(m.status, RouteMatch::Status::kMethodNotAllowed);
  EXPECT_EQ(m.allowed, (std::vector<std::string>{"GET"}));
  auto action = router.match("POST", "/api/things/7/polish/");
  ASSERT_EQ(action.status, RouteMatch::Status::kFound);
  EXPECT_EQ(action.params.at("action"), "polish");
}

TEST(Router, WrongMethodAnswersMethodNotAllowedWithAllowList) {
  Router router;
  router.add(route("GET", "/api/items/{id}/"), "a");
  router.add(route("DELETE", "/api/items/{id}/"), "a");
  auto m = router.match("POST", "/api/items/7/");
  ASSERT_EQ(m.status, RouteMatch::Status::kMethodNotAllowed);
  EXPECT_EQ(m.allowed, (std::vector<std::string>{"DELETE", "GET"}));
}

TEST(Router, DecodesParametersButRefusesSlashesAndDotSegments) {
  Router router;
  router.add(route("GET", "/api/items/{id}/"), "a");
  auto ok = router.match("GET", "/api/items/a%20b/");
  ASSERT_EQ(ok.status, RouteMatch::Status::kFound);
  EXPECT_EQ(ok.params.at("id"), "a b");
  EXPECT_EQ(router.match("GET", "/api/items/a%2Fb/").status, RouteMatch::Status::kBadPath);
  EXPECT_EQ(router.match("GET", "/api/items/a%5cb/").status, RouteMatch::Status::kBadPath);
  EXPECT_EQ(router.match("GET", "/api/items/../").status, RouteMatch::Status::kBadPath);
  EXPECT_EQ(router.match("GET", "/api/items/%2e%2e/").status, RouteMatch::Status::kBadPath);
  EXPECT_EQ(router.match("GET", "/api/items/%00/").status, RouteMatch::Status::kBadPath);
  EXPECT_EQ(router.match("GET", "/api/items/%zz/").status, RouteMatch::Status::kBadPath);
  EXPECT_EQ(router.match("GET", "/api/items/%e").status, RouteMatch::Status::kBadPath);
  EXPECT_EQ(router.match("GET", "/api/items/%ff%fe/").status, RouteMatch::Status::kBadPath);
}

TEST(Router, EmptySegmentsAndRelativePathsMatchNothing) {
  Router router;
  router.add(route("GET", "/api/items/{id}/"), "a");
  EXPECT_EQ(router.match("GET", "/api//items/1/").status, RouteMatch::Status::kNotFound);
  EXPECT_EQ(router.match("GET", "api/items/1/").status, RouteMatch::Status::kNotFound);
  EXPECT_EQ(router.match("GET", "").status, RouteMatch::Status::kNotFound);
}

TEST(Router, RefusesDuplicateRoutesAndMalformedPatterns) {
  Router router;
  router.add(route("GET", "/api/items/{id}/"), "a");
  EXPECT_THROW(router.add(route("GET", "/api/items/{id}"), "b"), std::invalid_argument);
  EXPECT_THROW(router.add(route("GET", "/api/items/{other}/x/"), "b"), std::invalid_argument);
  EXPECT_THROW(router.add(route("GET", "no-slash"), "b"), std::invalid_argument);
  EXPECT_THROW(router.add(route("GET", "/api/{}/"), "b"), std::invalid_argument);
  EXPECT_THROW(router.add(route("TRACE", "/api/x/"), "b"), std::invalid_argument);
  router.add(route("POST", "/api/items/{id}/"), "b");  // another method is fine
}

}  // namespace
}  // namespace svc::kernel
