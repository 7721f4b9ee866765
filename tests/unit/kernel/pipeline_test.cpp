// The pipeline without sockets: matching, bodies, error mapping and the authentication hook,
// driven through Pipeline::dispatch with a fake Authenticator and IdentityDirectory.
#include "pipeline.h"
#include "metrics.h"

#include <svc/sdk/auth.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

namespace svc::kernel {
namespace {

constexpr const char* kAccount = "aaaaaaaa-0000-4000-8000-000000000000";
constexpr const char* kMine = "a1a1a1a1-0000-4000-8000-000000000001";
constexpr const char* kSibling = "a2a2a2a2-0000-4000-8000-000000000002";
constexpr const char* kForeign = "b1b1b1b1-0000-4000-8000-000000000001";

class FakeAuth : public sdk::Authenticator {
 public:
  std::optional<sdk::Principal> authenticate(const sdk::Credentials& c) override {
    if (c.authorization == "Bearer mgmt") {
      return sdk::Principal{
          sdk::PrincipalKind::kManagement, kAccount, "", "k1", "", "", "", "key:k1"};
    }
    if (c.authorization == "Bearer ident") {
      return sdk::Principal{
          sdk::PrincipalKind::kIdentity, kAccount, "", "k2", "", "", kMine, "key:k2"};
    }
    if (c.authorization == "Bearer user") {
      return sdk::Principal{sdk::PrincipalKind::kUser, kAccount, "u1", "", "", "", "", "family:f1"};
    }
    if (c.authorization.empty()) return std::nullopt;
    throw sdk::HttpError(401, "authentication_failed", "bad credential");
  }
};

class FakeDirectory : public sdk::IdentityDirectory {
 public:
  std::optional<sdk::IdentityRef> find(const std::string& account, const std::string& id) override {
    if (account != kAccount) return std::nullopt;
    if (id == kMine) return sdk::IdentityRef{id, "mine"};
    if (id == kSibling) return sdk::IdentityRef{id, "sibling"};
    return std::nullopt;
  }
};

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_.router = &router_;
    runtime_.services = &services_;
    runtime_.limits.max_body_bytes = 1024;
    OwnedServices as_test(services_, "test");
    as_test.offer(sdk::kAuthenticatorService, std::make_shared<FakeAuth>());
    as_test.offer(sdk::kIdentityDirectoryService, std::make_shared<FakeDirectory>());
    auto echo = [](sdk::Request& r) {
      Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
      o->set("identity", r.identity ? r.identity->uuid : std::string());
      o->set("body", r.json);
      return sdk::Response::json(200, o);
    };
    add("GET", "/api/open/", sdk::AuthNeed::kNone, echo);
    {
      sdk::Route form;
      form.method = "POST";
      form.pattern = "/api/form/";
      form.auth = sdk::AuthNeed::kNone;
      form.body = sdk::BodyKind::kJsonOrForm;
      form.handler = [](sdk::Request& r) {
        Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
        o->set("a", r.stringField("a").value_or(""));
        return sdk::Response::json(200, o);
      };
      router_.add(std::move(form), "test");
    }
    add("POST", "/api/open/", sdk::AuthNeed::kNone, echo);
    add("GET", "/api/any/", sdk::AuthNeed::kAnyKey, echo);
    add("GET", "/api/account/", sdk::AuthNeed::kAccount, echo);
    add("GET", "/api/identity/", sdk::AuthNeed::kIdentity, echo);
    add("GET", "/api/user/", sdk::AuthNeed::kUser, echo);
    add("GET", "/api/throws/", sdk::AuthNeed::kNone,
        [](sdk::Request&) -> sdk::Response { throw std::logic_error("boom"); });
    // A handler that echoes raw input into its error, as a careless plugin might.
    add("GET", "/api/careless/", sdk::AuthNeed::kNone, [](sdk::Request&) -> sdk::Response {
      throw sdk::HttpError::invalid("f\xef", "'\xef" + std::string(5000, 'x') + "' is wrong");
    });
  }

  void add(const std::string& method, const std::string& pattern, sdk::AuthNeed need,
           sdk::Handler h) {
    sdk::Route r;
    r.method = method;
    r.pattern = pattern;
    r.auth = need;
    r.handler = std::move(h);
    router_.add(std::move(r), "test");
  }

  sdk::Response call(const std::string& method, const std::string& path,
                     const std::string& auth = "", const std::string& body = "",
                     const std::string& type = "application/json",
                     std::multimap<std::string, std::string> query = {},
                     std::map<std::string, std::string> headers = {}) {
    sdk::Request req;
    req.method = method;
    req.path = path;
    req.request_id = "rid-1";
    req.body = body;
    req.content_type = type;
    req.query = std::move(query);
    req.headers = std::move(headers);
    if (!auth.empty()) req.headers["authorization"] = auth;
    std::string route;
    return Pipeline(runtime_).dispatch(req, route);
  }

  static Poco::JSON::Object::Ptr json(const sdk::Response& r) {
    return Poco::JSON::Parser().parse(r.body).extract<Poco::JSON::Object::Ptr>();
  }
  static std::string code(const sdk::Response& r) { return json(r)->getValue<std::string>("code"); }

  Router router_;
  ServiceTable services_;
  Runtime runtime_;
};

TEST_F(PipelineTest, UnknownRouteIsNotFoundInErrorShape) {
  auto r = call("GET", "/api/missing/");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(code(r), "not_found");
  EXPECT_TRUE(json(r)->has("detail"));
}

TEST_F(PipelineTest, WrongMethodIsMethodNotAllowedWithAllowHeader) {
  auto r = call("DELETE", "/api/open/");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(code(r), "method_not_allowed");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "Allow");
  EXPECT_EQ(r.headers[0].second, "GET, POST");
}

TEST_F(PipelineTest, MalformedJsonNonObjectsAndBadUtf8AreInvalid) {
  for (std::string body : {"{\"a\":", "[1,2]", "\"text\"", "{\"a\":\"\xff\"}"}) {
    auto r = call("POST", "/api/open/", "", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(code(r), "invalid") << body;
    EXPECT_TRUE(json(r)->getObject("errors")->has("body")) << body;
  }
  auto ok = call("POST", "/api/open/", "", "{\"a\":1}");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(json(ok)->getObject("body")->getValue<int>("a"), 1);
}

TEST_F(PipelineTest, FormBodiesAreDecodedAndCheckedLikeJson) {
  const std::string form = "application/x-www-form-urlencoded";
  auto ok = call("POST", "/api/form/", "", "a=b%20c&d=e", form);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(json(ok)->getValue<std::string>("a"), "b c");
  // Malformed escapes, bytes that are not UTF-8 once decoded, and NUL: 400 on body, never 500.
  for (std::string body : {"a=%zz", "a=%", "a=%FF%FE", "a=x%00y", "%C3=1"}) {
    auto r = call("POST", "/api/form/", "", body, form);
    EXPECT_EQ(r.status, 400) << body << " " << r.body;
    EXPECT_EQ(code(r), "invalid") << body;
    EXPECT_TRUE(json(r)->getObject("errors")->has("body")) << body;
  }
}

TEST_F(PipelineTest, DeeplyNestedJsonIsRefusedNotRecursed) {
  std::string deep = "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}";
  EXPECT_EQ(call("POST", "/api/open/", "", deep).status, 400);
}

TEST_F(PipelineTest, WrongContentTypeIsUnsupportedMediaType) {
  auto r = call("POST", "/api/open/", "", "a=1", "application/x-www-form-urlencoded");
  EXPECT_EQ(r.status, 415);
  EXPECT_EQ(code(r), "unsupported_media_type");
  EXPECT_EQ(call("POST", "/api/open/", "", "{}", "").status, 415);
  EXPECT_EQ(call("POST", "/api/open/", "", "", "text/plain").status, 200);  // no body: fine
}

TEST_F(PipelineTest, HandlerExceptionIsServerErrorWithRequestId) {
  auto r = call("GET", "/api/throws/");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(code(r), "server_error");
  EXPECT_EQ(json(r)->getValue<std::string>("request_id"), "rid-1");
  EXPECT_EQ(r.body.find("boom"), std::string::npos);  // never the exception text
}

TEST_F(PipelineTest, CredentialNeedsAreEnforced) {
  EXPECT_EQ(code(call("GET", "/api/any/")), "not_authenticated");
  EXPECT_EQ(code(call("GET", "/api/any/", "Bearer garbage")), "authentication_failed");
  EXPECT_EQ(call("GET", "/api/any/", "Bearer mgmt").status, 200);
  EXPECT_EQ(call("GET", "/api/account/", "Bearer ident").status, 403);
  EXPECT_EQ(call("GET", "/api/account/", "Bearer mgmt").status, 200);
  EXPECT_EQ(call("GET", "/api/user/", "Bearer mgmt").status, 403);
  EXPECT_EQ(call("GET", "/api/user/", "Bearer user").status, 200);
}

TEST_F(PipelineTest, TheOperatorTokenIsAcceptedUnderAnySpellingOfBearer) {
  runtime_.operator_token = "op-token";
  add("POST", "/admin/op/", sdk::AuthNeed::kOperator,
      [](sdk::Request&) { return sdk::Response::noContent(); });
  for (const char* header : {"Bearer op-token", "bearer op-token", "BEARER  op-token"}) {
    EXPECT_EQ(call("POST", "/admin/op/", header).status, 204) << header;
  }
  EXPECT_EQ(code(call("POST", "/admin/op/", "bearer wrong")), "authentication_failed");
  EXPECT_EQ(code(call("POST", "/admin/op/", "Basic op-token")), "not_authenticated");
}

TEST_F(PipelineTest, IdentityResolutionFollowsTheContract) {
  // Management key without an identity on an identity route: 400 identity_required.
  EXPECT_EQ(code(call("GET", "/api/identity/", "Bearer mgmt")), "identity_required");
  // Named by query or header.
  auto q = call("GET", "/api/identity/", "Bearer mgmt", "", "application/json",
                {{"identity", kSibling}});
  EXPECT_EQ(json(q)->getValue<std::string>("identity"), kSibling);
  auto h = call("GET", "/api/identity/", "Bearer mgmt", "", "application/json", {},
                {{"x-svc-identity", kSibling}});
  EXPECT_EQ(json(h)->getValue<std::string>("identity"), kSibling);
  // Both, disagreeing: 400.
  EXPECT_EQ(call("GET", "/api/identity/", "Bearer mgmt", "", "application/json",
                 {{"identity", kSibling}}, {{"x-svc-identity", kMine}})
                .status,
            400);
  // Another account's identity, or none at all, or not a uuid: 404.
  for (const char* id : {kForeign, "c0c0c0c0-0000-4000-8000-000000000000", "nope"}) {
    EXPECT_EQ(code(call("GET", "/api/identity/", "Bearer mgmt", "", "application/json",
                        {{"identity", id}})),
              "not_found")
        << id;
  }
  // An identity key is bound: its own identity without naming it, 403 naming another.
  auto own = call("GET", "/api/identity/", "Bearer ident");
  EXPECT_EQ(json(own)->getValue<std::string>("identity"), kMine);
  EXPECT_EQ(call("GET", "/api/identity/", "Bearer ident", "", "application/json",
                 {{"identity", kSibling}})
                .status,
            403);
}

TEST_F(PipelineTest, MissingAuthenticatorIsServiceUnavailable) {
  services_.clear();
  EXPECT_EQ(call("GET", "/api/any/", "Bearer mgmt").status, 503);
  EXPECT_EQ(call("GET", "/api/open/").status, 200);
}

TEST_F(PipelineTest, ControlCharactersInHeadersAreInvalid) {
  auto r = call("GET", "/api/open/", "", "", "application/json", {}, {{"x-thing", "a\x01z"}});
  EXPECT_EQ(r.status, 400);
}

TEST_F(PipelineTest, AHeaderNameIsQuotedShortInTheError) {
  auto r = call("GET", "/api/open/", "", "", "application/json", {},
                {{"x-" + std::string(3000, 'h'), "a\x01z"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_LT(r.body.size(), 500u) << r.body.substr(0, 200);
}

TEST_F(PipelineTest, AnErrorThatEchoesRawInputStillAnswersValidUtf8OfBoundedSize) {
  auto r = call("GET", "/api/careless/");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(sdk::isValidUtf8(r.body)) << r.body.substr(0, 200);
  EXPECT_LT(r.body.size(), 4000u);
  EXPECT_EQ(code(r), "invalid");
}

// A request made in-process for a client (an MCP tool call) meets its route's body limit, as one
// from a socket does, and is recorded when answered.
TEST_F(PipelineTest, AnInnerRequestMeetsItsRoutesBodyLimitAndIsRecorded) {
  sdk::Route small;
  small.method = "POST";
  small.pattern = "/api/small/";
  small.auth = sdk::AuthNeed::kNone;
  small.max_body_bytes = 16;
  small.handler = [](sdk::Request&) { return sdk::Response::noContent(); };
  router_.add(std::move(small), "test");
  Metrics metrics;
  runtime_.metrics = &metrics;
  const auto inner = [&](const std::string& body) {
    sdk::Request req;
    req.method = "POST";
    req.path = "/api/small/";
    req.request_id = "rid-inner";
    req.body = body;
    req.content_type = "application/json";
    std::function<void(int)> record;
    sdk::Response r = Pipeline(runtime_).dispatchInner(req, record);
    EXPECT_TRUE(record);
    return r;
  };
  const sdk::Response big = inner(R"({"text":"more than sixteen bytes"})");
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(code(big), "payload_too_large");
  EXPECT_EQ(inner("{}").status, 204);
  const std::string text = metrics.render();
  EXPECT_NE(text.find(R"(method="POST",route="/api/small/",status="413"} 1)"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(method="POST",route="/api/small/",status="204"} 1)"), std::string::npos);
}

// A route that takes any body gets the bytes: a JSON file is not parsed (nor refused) for it.
TEST_F(PipelineTest, ARouteTakingAnyBodyGetsJsonUnparsed) {
  sdk::Route raw;
  raw.method = "POST";
  raw.pattern = "/api/raw/";
  raw.auth = sdk::AuthNeed::kNone;
  raw.body = sdk::BodyKind::kAny;
  raw.handler = [](sdk::Request& r) { return sdk::Response::text(200, r.body); };
  router_.add(std::move(raw), "test");
  for (const std::string body : {"[1,2]", "{not json", "\"text\""}) {
    const sdk::Response r = call("POST", "/api/raw/", "", body);
    EXPECT_EQ(r.status, 200) << body;
    EXPECT_EQ(r.body, body);
  }
}

TEST(RequestId, KeepsShortSafeTokensOnly) {
  EXPECT_EQ(chooseRequestId("abc-123_x.y"), "abc-123_x.y");
  EXPECT_NE(chooseRequestId("has space"), "has space");
  EXPECT_NE(chooseRequestId(std::string(65, 'a')), std::string(65, 'a'));
  EXPECT_NE(chooseRequestId("inj\r\nected"), "inj\r\nected");
  EXPECT_EQ(chooseRequestId("").size(), 36u);
}

}  // namespace
}  // namespace svc::kernel
