#include "auth_http.h"

#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

namespace svc::plugins::auth {
namespace {

sdk::Request jsonRequest(const std::string& body) {
  sdk::Request r;
  r.content_type = "application/json";
  r.json = Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
  return r;
}

// @return the field named by a 400, or "" when f did not throw one.
template <typename F>
std::string invalidField(F f) {
  try {
    f();
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.errors().empty()
               ? "?"
               : e.errors().begin()->first + ": " + e.errors().begin()->second.front();
  }
  return "";
}

TEST(AuthHttp, FieldReadsFormThenJson) {
  sdk::Request form;
  form.form["client_id"] = "cli";
  EXPECT_EQ(form.stringField("client_id"), "cli");
  EXPECT_EQ(form.stringField("other"), std::nullopt);
  auto json = jsonRequest(R"({"client_id":"x","none":null,"n":3})");
  EXPECT_EQ(json.stringField("client_id"), "x");
  EXPECT_EQ(json.stringField("none"), std::nullopt);
  EXPECT_EQ(json.stringField("absent"), std::nullopt);
  EXPECT_EQ(invalidField([&] { json.stringField("n"); }), "n: must be a string");
}

TEST(AuthHttp, BoundedFieldChecksPresenceLengthAndControlCharacters) {
  auto r = jsonRequest(R"({"label":"abc","tab":"a\tb","long":"abcdef"})");
  EXPECT_EQ(boundedField(r, "label", 3, true), "abc");
  EXPECT_EQ(boundedField(r, "absent", 3, false), "");
  EXPECT_EQ(invalidField([&] { boundedField(r, "absent", 3, true); }),
            "absent: this field is required");
  EXPECT_EQ(invalidField([&] { boundedField(r, "long", 5, false); }), "long: at most 5 characters");
  EXPECT_EQ(invalidField([&] { boundedField(r, "tab", 10, false); }),
            "tab: must not contain control characters");
  // DEL too: one rule for control characters everywhere (sdk::hasControlCharacter).
  EXPECT_EQ(invalidField([&] { bounded("x", "\x7f no", 10); }),
            "x: must not contain control characters");
}

TEST(AuthHttp, CredentialAnswersAreNeverCached) {
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("a", 1);
  sdk::Response r = noStore(201, body);
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, R"({"a":1})");
  std::vector<std::pair<std::string, std::string>> want = {{"Cache-Control", "no-store"},
                                                           {"Pragma", "no-cache"}};
  EXPECT_EQ(r.headers, want);
}

TEST(AuthHttp, OAuthErrorsCarryErrorAndDescription) {
  sdk::Response r = oauthError(400, "invalid_grant", "nope");
  EXPECT_EQ(r.status, 400);
  auto o = Poco::JSON::Parser().parse(r.body).extract<Poco::JSON::Object::Ptr>();
  EXPECT_EQ(o->getValue<std::string>("error"), "invalid_grant");
  EXPECT_EQ(o->getValue<std::string>("error_description"), "nope");
  // The contract's error members too: the same, as code and detail.
  EXPECT_EQ(o->getValue<std::string>("code"), "invalid_grant");
  EXPECT_EQ(o->getValue<std::string>("detail"), "nope");
  EXPECT_EQ(o->size(), 4u);
  EXPECT_EQ(r.headers.size(), 2u);
}

}  // namespace
}  // namespace svc::plugins::auth
