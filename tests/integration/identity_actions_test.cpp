// Identity actions as an agent meets them (issue 19): the contract's provision-phone on a route of
// its own in the API description, with its body, answer and errors, served as before; and the
// generic {action} route, which serves what other plugins declare (the stamps test plugin, a
// third party's part of identities) and takes no body fields.
#include "harness.h"
#include "svcctl_run.h"

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <set>

namespace svc::testing {
namespace {

using Poco::JSON::Object;

class IdentityActions : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "stamps"};  // no sms: no plugin provides `phone`
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "act@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
    auto made = call("POST", "/api/identities/", R"({"name":"Stamped"})");
    ASSERT_EQ(made.status, 201) << made.body;
    uuid_ = made.json()->getValue<std::string>("uuid");
  }
  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "") {
    return http(svcd_->port(), method, path, body, bearer(key_));
  }
  std::string action(const std::string& name) {
    return "/api/identities/" + uuid_ + "/" + name + "/";
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_, uuid_;
};

// A `$ref` followed into the document's components.
Object::Ptr resolved(const Object::Ptr& doc, const Object::Ptr& schema) {
  if (!schema || !schema->has("$ref")) return schema;
  const std::string ref = schema->getValue<std::string>("$ref");
  return doc->getObject("components")
      ->getObject("schemas")
      ->getObject(ref.substr(ref.rfind('/') + 1));
}

Object::Ptr bodySchema(const Object::Ptr& doc, const Object::Ptr& operation) {
  auto body = operation->getObject("requestBody");
  if (!body) return nullptr;
  return resolved(doc,
                  body->getObject("content")->getObject("application/json")->getObject("schema"));
}

std::set<std::string> properties(const Object::Ptr& schema) {
  std::set<std::string> out;
  if (schema && schema->getObject("properties")) {
    for (const auto& name : schema->getObject("properties")->getNames()) out.insert(name);
  }
  return out;
}

std::string responseText(const Object::Ptr& operation, const std::string& status) {
  auto r = operation->getObject("responses")->getObject(status);
  return r ? r->optValue<std::string>("description", "") : "";
}

TEST_F(IdentityActions, TheDescriptionShowsProvisionPhoneOnItsOwnRoute) {
  auto described = svcd_->get("/api/schema/");
  ASSERT_EQ(described.status, 200) << described.body;
  auto doc = described.json();
  auto paths = doc->getObject("paths");
  auto item = paths->getObject("/api/identities/{uuid}/provision-phone");
  ASSERT_TRUE(item) << "no provision-phone route in the description";
  auto post = item->getObject("post");
  ASSERT_TRUE(post);

  // Its body: {country_code?}, an ISO 3166 alpha-2 code, default US, and nothing else.
  auto body = bodySchema(doc, post);
  ASSERT_TRUE(body);
  EXPECT_EQ(properties(body), std::set<std::string>{"country_code"});
  EXPECT_FALSE(body->has("required"));
  EXPECT_FALSE(body->optValue<bool>("additionalProperties", true));
  const std::string country = body->getObject("properties")
                                  ->getObject("country_code")
                                  ->getValue<std::string>("description");
  EXPECT_NE(country.find("ISO 3166 alpha-2"), std::string::npos) << country;
  EXPECT_NE(country.find("default US"), std::string::npos) << country;

  // It answers the identity, and says when it refuses.
  auto ok = post->getObject("responses")->getObject("200");
  ASSERT_TRUE(ok);
  auto answer = ok->getObject("content")->getObject("application/json")->getObject("schema");
  EXPECT_EQ(answer->optValue<std::string>("$ref", ""), "#/components/schemas/Identity");
  EXPECT_NE(responseText(post, "409").find("phone_exists"), std::string::npos);
  EXPECT_NE(responseText(post, "404").find("feature_not_enabled"), std::string::npos);
  EXPECT_NE(responseText(post, "404").find("`phone`"), std::string::npos);
  EXPECT_NE(responseText(post, "503").find("service_unavailable"), std::string::npos);

  // The generic route serves other plugins' actions: no fields, naming the one stamps declares,
  // and not provision-phone's.
  auto generic = paths->getObject("/api/identities/{uuid}/{action}");
  ASSERT_TRUE(generic);
  auto input = bodySchema(doc, generic->getObject("post"));
  ASSERT_TRUE(input);
  EXPECT_TRUE(properties(input).empty());
  EXPECT_FALSE(input->optValue<bool>("additionalProperties", true));
  const std::string names = input->optValue<std::string>("description", "");
  EXPECT_NE(names.find("declare: stamp."), std::string::npos) << names;
  EXPECT_EQ(names.find("provision-phone"), std::string::npos) << names;

  // The plain-text reference an LLM reads shows the route and its field.
  auto text = svcd_->get("/api/schema/reference.txt");
  ASSERT_EQ(text.status, 200);
  const auto at = text.body.find("POST /api/identities/{uuid}/provision-phone");
  ASSERT_NE(at, std::string::npos) << text.body.substr(0, 2000);
  EXPECT_NE(text.body.find("country_code", at), std::string::npos);
}

TEST_F(IdentityActions, ProvisionPhoneWithoutItsPluginIsFeatureNotEnabledAndTakesOnlyItsFields) {
  auto missing = call("POST", action("provision-phone"), R"({"country_code":"GB"})");
  EXPECT_EQ(missing.status, 404) << missing.body;
  EXPECT_EQ(missing.code(), "feature_not_enabled");
  EXPECT_NE(missing.json()->getValue<std::string>("detail").find("'phone'"), std::string::npos)
      << missing.body;
  // A field it does not take is refused, named, before the handler runs.
  auto unknown = call("POST", action("provision-phone"), R"({"country_code":"GB","area":"20"})");
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  EXPECT_EQ(unknown.code(), "invalid");
  auto errors = unknown.json()->getObject("errors");
  ASSERT_TRUE(errors) << unknown.body;
  EXPECT_TRUE(errors->has("area")) << unknown.body;
  EXPECT_FALSE(errors->has("country_code")) << unknown.body;
  // Spelled so that the router takes it to the generic route, it is no action there.
  auto encoded = call("POST", action("provision%2Dphone"), "{}");
  EXPECT_EQ(encoded.status, 404) << encoded.body;
  EXPECT_EQ(encoded.code(), "not_found") << encoded.body;
}

TEST_F(IdentityActions, AnotherPluginsActionReachesItThroughTheGenericRoute) {
  auto stamped = call("POST", action("stamp"), "{}");
  ASSERT_EQ(stamped.status, 201) << stamped.body;
  EXPECT_EQ(stamped.json()->getValue<std::string>("action"), "stamp");
  EXPECT_EQ(stamped.json()->getValue<std::string>("identity"), uuid_);
  EXPECT_EQ(stamped.json()->getValue<int>("count"), 1);
  EXPECT_EQ(call("POST", action("stamp")).status, 201) << "no body is an empty one";
  auto read = call("GET", "/api/identities/" + uuid_ + "/");
  EXPECT_EQ(read.json()->getObject("stamp")->getValue<int>("count"), 2) << read.body;

  // It takes no field, provision-phone's no more than another, and runs nothing then.
  for (const char* body : {R"({"country_code":"US"})", R"({"note":"x"})"}) {
    auto refused = call("POST", action("stamp"), body);
    EXPECT_EQ(refused.status, 400) << body << " " << refused.body;
    EXPECT_EQ(refused.code(), "invalid");
  }
  EXPECT_EQ(call("POST", action("teleport"), "{}").code(), "not_found");
  read = call("GET", "/api/identities/" + uuid_ + "/");
  EXPECT_EQ(read.json()->getObject("stamp")->getValue<int>("count"), 2) << read.body;

  // svcctl runs it too, printing the plugin's answer.
  auto [code, out] = runSvcctl(*svcd_, key_, "identities act " + uuid_ + " stamp", true);
  ASSERT_EQ(code, 0) << out;
  auto printed = Poco::JSON::Parser().parse(out).extract<Object::Ptr>();
  EXPECT_EQ(printed->getValue<int>("count"), 3) << out;
  EXPECT_EQ(printed->getValue<std::string>("action"), "stamp") << out;
}

}  // namespace
}  // namespace svc::testing
