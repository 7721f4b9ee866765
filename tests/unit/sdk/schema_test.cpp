// Shapes (svc/sdk/schema.h): what a declaration refuses and how it says so, the query parameters'
// conversion, and the JSON Schema it publishes.
#include <svc/sdk/http.h>
#include <svc/sdk/schema.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <map>
#include <sstream>

namespace svc::sdk {
namespace {

using Problems = std::map<std::string, std::vector<std::string>>;

Problems problems(const Schema& schema, const std::string& json) {
  FieldErrors errors;
  schema.validate(Poco::JSON::Parser().parse(json), "", errors);
  try {
    errors.throwIfAny();
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "invalid");
    return e.errors();
  }
  return {};
}

Problems queryProblems(const std::vector<Param>& params,
                       const std::multimap<std::string, std::string>& query) {
  FieldErrors errors;
  validateQuery(params, query, errors);
  try {
    errors.throwIfAny();
  } catch (const HttpError& e) {
    return e.errors();
  }
  return {};
}

std::string text(const Poco::JSON::Object::Ptr& o) {
  std::ostringstream out;
  o->stringify(out);
  return out.str();
}

const Schema kSecret =
    Schema::object("SecretInput")
        .required("key", Schema::string().pattern("^[A-Za-z0-9_.:/-]{1,128}$",
                                                  "must be 1-128 letters, digits or _.:/-"))
        .required("value", Schema::string().minLength(1).maxLength(8))
        .optional("notes", Schema::string().nullable())
        .optional("kind", Schema::oneOf({"api_key", "password", "other"}))
        .optional("ttl", Schema::integer().minimum(1).maximum(3600));

TEST(Schema, AFittingBodyHasNoProblem) {
  EXPECT_TRUE(problems(kSecret, R"({"key":"A_B","value":"v"})").empty());
  EXPECT_TRUE(
      problems(kSecret, R"({"key":"a/b:c","value":"12345678","notes":null,"kind":"other","ttl":1})")
          .empty());
  EXPECT_TRUE(problems(kSecret, R"({"key":"K","value":"ééééé"})").empty())
      << "lengths are characters, not bytes";
}

TEST(Schema, EveryProblemIsNamedAtOnceWithWhatWouldFit) {
  auto p = problems(kSecret,
                    R"({"key":"a b","value":"","notes":7,"kind":"secret","ttl":0,"subject":"x"})");
  EXPECT_EQ(p.size(), 6u);
  EXPECT_EQ(p["key"], std::vector<std::string>{"must be 1-128 letters, digits or _.:/-"});
  EXPECT_EQ(p["value"], std::vector<std::string>{"must not be empty"});
  EXPECT_EQ(p["notes"], std::vector<std::string>{"must be a string or null"});
  EXPECT_EQ(p["kind"], std::vector<std::string>{"must be one of: api_key, password, other"});
  EXPECT_EQ(p["ttl"], std::vector<std::string>{"must be at least 1"});
  ASSERT_EQ(p.count("subject"), 1u) << "an unknown field is refused, as Stripe does";
  EXPECT_EQ(p["subject"][0], "unknown field; this object takes: key, value, notes, kind, ttl");

  p = problems(kSecret, R"({"value":"123456789","ttl":1.5})");
  EXPECT_EQ(p["key"], std::vector<std::string>{"this field is required"});
  EXPECT_EQ(p["value"], std::vector<std::string>{"must be at most 8 characters"});
  EXPECT_EQ(p["ttl"], std::vector<std::string>{"must be an integer"});
  p = problems(kSecret, R"({"key":null,"value":true,"ttl":"5"})");
  EXPECT_EQ(p["key"], std::vector<std::string>{"must be a string, not null"});
  EXPECT_EQ(p["value"], std::vector<std::string>{"must be a string"});
  EXPECT_EQ(p["ttl"], std::vector<std::string>{"must be an integer"});
}

TEST(Schema, PartialMakesEveryMemberOptionalAndLeavesTheOriginal) {
  const Schema patch = kSecret.partial("SecretPatch");
  EXPECT_TRUE(problems(patch, "{}").empty());
  EXPECT_EQ(problems(patch, R"({"value":""})").size(), 1u);
  EXPECT_EQ(problems(kSecret, "{}").size(), 2u) << "the declaration it came from is unchanged";
  EXPECT_EQ(patch.name(), "SecretPatch");
  EXPECT_EQ(kSecret.name(), "SecretInput");
}

TEST(Schema, NestedArraysAndMapsArePathedAndProblemsAreCapped) {
  const Schema change =
      Schema::object()
          .required("records",
                    Schema::array(Schema::object()
                                      .required("uuid", Schema::string().format("uuid"))
                                      .required("fields", Schema::object().additional(
                                                              Schema::string().nullable()))))
          .optional("tags", Schema::array(Schema::string()).maxItems(2));
  auto p =
      problems(change,
               R"({"records":[{"uuid":"0f8fad5b-d9cb-469f-a165-70867728950e","fields":{"a":"x"}},
                                   {"uuid":"nope","fields":{"a":null,"b":3}}],"tags":["a","b","c"]})");
  EXPECT_EQ(p["records[1].uuid"], std::vector<std::string>{"must be a UUID"});
  EXPECT_EQ(p["records[1].fields.b"], std::vector<std::string>{"must be a string or null"});
  EXPECT_EQ(p["tags"], std::vector<std::string>{"must hold at most 2 items"});
  EXPECT_EQ(p.size(), 3u);

  std::string many = R"({"records":[)";
  for (int i = 0; i < 1000; ++i) many += std::string(i ? "," : "") + "7";
  many += "]}";
  FieldErrors errors;
  change.validate(Poco::JSON::Parser().parse(many), "", errors);
  try {
    errors.throwIfAny();
    FAIL() << "accepted";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.errors().size(), Schema::kMaxProblems);
  }
  EXPECT_EQ(problems(change, "[]").size(), 1u);
  EXPECT_EQ(problems(change, "[]").begin()->first, "body");
}

TEST(Schema, FormatsAreChecked) {
  const Schema s = Schema::object()
                       .optional("email", Schema::string().format("email"))
                       .optional("at", Schema::string().format("date-time"))
                       .optional("url", Schema::string().format("uri"))
                       .optional("phone", Schema::string().format("e164"));
  EXPECT_TRUE(problems(s, R"({"email":"a@example.com","at":"2026-01-31T12:00:00Z",
                             "url":"https://example.com/x","phone":"+14155550100"})")
                  .empty());
  EXPECT_EQ(problems(s, R"({"email":"a@","at":"yesterday","url":"ftp://x","phone":"555"})").size(),
            4u);
}

// Patterns follow ECMA-262, as JSON Schema says: `$` is the end of the string, so a rule against
// control characters refuses a trailing line break too (PCRE's default `$` would let it by).
TEST(Schema, APatternsDollarIsTheEndOfTheString) {
  const Schema s = Schema::object().optional(
      "name", Schema::string().pattern("^[^\\x00-\\x1f\\x7f]*$", "no control characters"));
  EXPECT_TRUE(problems(s, R"({"name":"plain"})").empty());
  for (const char* bad : {R"({"name":"a\n"})", R"({"name":"\n"})", R"({"name":"a\nb"})"}) {
    EXPECT_EQ(problems(s, bad).count("name"), 1u) << bad;
  }
}

TEST(Schema, QueryParametersAreConvertedThenCheckedAndUnknownOnesRefused) {
  std::vector<Param> params = pageParams();
  params.push_back({"key", Schema::string().maxLength(4), false, ""});
  params.push_back({"values", Schema::boolean(), false, ""});
  params.push_back({"q", Schema::string().minLength(1), true, ""});
  EXPECT_TRUE(
      queryProblems(params, {{"q", "x"}, {"limit", "500"}, {"values", "FALSE"}, {"key", "ab"}})
          .empty())
      << "limit above 200 is clamped, as the contract says";
  auto p = queryProblems(params, {{"limit", "0"},
                                  {"offset", "x"},
                                  {"values", "maybe"},
                                  {"wait", "true"},
                                  {"key", "a"},
                                  {"key", "b"}});
  EXPECT_EQ(p["limit"], std::vector<std::string>{"must be at least 1"});
  EXPECT_EQ(p["offset"], std::vector<std::string>{"must be an integer"});
  EXPECT_EQ(p["values"], std::vector<std::string>{"must be true or false"});
  EXPECT_EQ(p["key"], std::vector<std::string>{"given more than once"});
  EXPECT_EQ(p["q"], std::vector<std::string>{"this parameter is required"});
  ASSERT_EQ(p.count("wait"), 1u);
  EXPECT_EQ(p["wait"][0], "unknown parameter; this route takes: limit, offset, key, values, q");
  EXPECT_EQ(queryProblems({}, {{"x", "1"}})["x"][0], "unknown parameter; this route takes none");
}

// A union: the alternative of the value's type judges it, and the description says anyOf.
TEST(Schema, AnyOfTakesTheAlternativeOfTheValuesType) {
  const auto address = [] { return Schema::string().minLength(1); };
  const Schema to = Schema::object("To").required(
      "to", Schema::anyOf({address(), Schema::array(address()).maxItems(2)}));
  EXPECT_TRUE(problems(to, R"({"to":"a@example.com"})").empty());
  EXPECT_TRUE(problems(to, R"({"to":["a@example.com","b@example.com"]})").empty());
  EXPECT_EQ(problems(to, R"({"to":7})")["to"],
            std::vector<std::string>{"must be a string or an array"});
  EXPECT_EQ(problems(to, R"({"to":null})")["to"],
            std::vector<std::string>{"must be a string or an array"});
  EXPECT_EQ(problems(to, R"({"to":["a","b","c"]})").count("to"), 1u);
  EXPECT_EQ(problems(to, R"({"to":[""]})").count("to[0]"), 1u);
  EXPECT_EQ(problems(to, R"({"to":""})").count("to"), 1u);
  const Schema maybe = Schema::object().optional("cc", Schema::anyOf({address()}).nullable());
  EXPECT_TRUE(problems(maybe, R"({"cc":null})").empty());
  const std::string json = text(to.json()->getObject("properties")->getObject("to"));
  EXPECT_NE(json.find(R"("anyOf":[{"minLength":1,"type":"string"})"), std::string::npos) << json;
  EXPECT_EQ(json.find(R"("type":"null")"), std::string::npos) << json;
  EXPECT_NE(text(maybe.json()).find(R"({"type":"null"})"), std::string::npos);
}

// A number in a query is written as JSON writes one: no separators, signs or spaces that a
// lenient parser would read past (`0,120` is not 120).
TEST(Schema, QueryNumbersArePlainDigits) {
  const std::vector<Param> params = {{"n", Schema::integer().minimum(1).maximum(120), false, ""},
                                     {"x", Schema::number(), false, ""}};
  for (const char* bad : {"0,120", "1,000", "+5", " 5", "5 ", "0x10", "", "-", "1e2"}) {
    EXPECT_EQ(queryProblems(params, {{"n", bad}})["n"],
              std::vector<std::string>{"must be an integer"})
        << bad;
  }
  for (const char* bad : {"1,5", "1.", ".5", "1e", "nan", "inf", "1.5.2"}) {
    EXPECT_EQ(queryProblems(params, {{"x", bad}})["x"],
              std::vector<std::string>{"must be a number"})
        << bad;
  }
  EXPECT_TRUE(queryProblems(params, {{"n", "120"}, {"x", "-1.5e-3"}}).empty());
  EXPECT_TRUE(queryProblems(params, {{"n", "007"}, {"x", "2"}}).empty());
}

TEST(Schema, PublishesJsonSchemaWithNamedObjectsAsComponents) {
  std::map<std::string, Poco::JSON::Object::Ptr> components;
  const Schema list = Schema::object("SecretList")
                          .required("results", Schema::array(kSecret))
                          .required("count", Schema::integer());
  auto ref = list.json(&components);
  EXPECT_EQ(text(ref), R"({"$ref":"#/components/schemas/SecretList"})");
  ASSERT_EQ(components.size(), 2u);
  const std::string secret = text(components.at("SecretInput"));
  for (const char* piece :
       {R"("required":["key","value"])", R"("additionalProperties":false)",
        R"("pattern":"^[A-Za-z0-9_.:/-]{1,128}$")", R"("type":["string","null"])",
        R"("enum":["api_key","password","other"])", R"("maximum":3600)", R"("minLength":1)"}) {
    EXPECT_NE(secret.find(piece), std::string::npos) << piece << " in " << secret;
  }
  EXPECT_NE(text(components.at("SecretList")).find(R"("$ref":"#/components/schemas/SecretInput")"),
            std::string::npos);
  // Without components, everything is inline.
  EXPECT_EQ(text(list.json()).find("$ref"), std::string::npos);
}

TEST(Schema, ALateSchemaIsWhatItsMakerHoldsWhenUsed) {
  // The identity's shape grows as plugins add their parts after its routes are registered.
  Schema current = Schema::object("Thing").required("name", Schema::string());
  const Schema late = Schema::late([&current] { return current; });
  EXPECT_EQ(problems(late, R"({"name":"a","extra":true})").count("extra"), 1u);
  current.optional("extra", Schema::boolean());
  EXPECT_TRUE(problems(late, R"({"name":"a","extra":true})").empty());
  EXPECT_EQ(problems(Schema::array(late), R"([{"name":1}])").count("[0].name"), 1u);
  EXPECT_EQ(late.type(), Schema::Type::kObject);
  EXPECT_EQ(late.name(), "Thing");
  ASSERT_NE(late.member("extra"), nullptr);
  std::map<std::string, Poco::JSON::Object::Ptr> components;
  EXPECT_EQ(text(late.json(&components)), R"({"$ref":"#/components/schemas/Thing"})");
  EXPECT_NE(text(components.at("Thing")).find("extra"), std::string::npos);
}

TEST(Schema, BytesAreDescribedByTheirMediaType) {
  EXPECT_EQ(text(Schema::bytes("text/xml").json()),
            R"({"contentMediaType":"text/xml","type":"string"})");
  EXPECT_EQ(text(Schema::bytes("*/*").json()), R"({"type":"string"})");
  EXPECT_EQ(Schema::bytes("text/xml").mediaType(), "text/xml");
  EXPECT_EQ(Schema::string().mediaType(), "");
}

}  // namespace
}  // namespace svc::sdk
