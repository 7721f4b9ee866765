// Strict input on every route, generated from the served description (issue 19): a real svcd with
// every bundled plugin serves GET /api/schema/, and every operation of every path in it is called
// with an unknown query parameter, and (when it takes a body) with an otherwise plausible body
// holding an unknown field; each must answer 400 `invalid` naming it. A new route is covered
// without editing this test, and a route that forgets its declaration fails it.
#include "harness.h"

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/UUIDGenerator.h>

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

namespace svc::testing {
namespace {

using Poco::JSON::Array;
using Poco::JSON::Object;

std::string newUuid() {
  return Poco::UUIDGenerator::defaultGenerator().createRandom().toString();
}

std::string text(const Poco::Dynamic::Var& v) {
  std::ostringstream out;
  Poco::JSON::Stringifier::stringify(v, out);
  return out.str();
}

// A value that fits a schema as far as its declared type, format, bounds and examples say: a
// body whose only problem is the unknown field the test adds (a pattern it cannot guess is
// named too, which the test allows: every problem is reported at once).
class Sampler {
 public:
  explicit Sampler(Object::Ptr schemas) : schemas_(std::move(schemas)) {}

  Poco::Dynamic::Var sample(const Object::Ptr& schema, int depth = 0) const {
    if (!schema || depth > 8) return Poco::Dynamic::Var();
    if (schema->has("$ref")) {
      const std::string ref = schema->getValue<std::string>("$ref");
      return sample(schemas_->getObject(ref.substr(ref.rfind('/') + 1)), depth + 1);
    }
    if (auto examples = schema->getArray("examples"); examples && examples->size() > 0) {
      return examples->get(0);
    }
    if (auto values = schema->getArray("enum")) {
      for (std::size_t i = 0; i < values->size(); ++i) {
        if (!values->get(i).isEmpty()) return values->get(i);
      }
    }
    const std::string type = typeOf(schema);
    if (type == "string") return string(schema);
    if (type == "integer" || type == "number") {
      return schema->has("minimum") ? schema->get("minimum") : Poco::Dynamic::Var(1);
    }
    if (type == "boolean") return false;
    if (type == "array") {
      Array::Ptr a = new Array;
      if (schema->optValue<int>("minItems", 0) > 0) {
        a->add(sample(schema->getObject("items"), depth + 1));
      }
      return a;
    }
    if (type == "object") {
      Object::Ptr o = new Object;
      auto required = schema->getArray("required");
      auto properties = schema->getObject("properties");
      for (std::size_t i = 0; required && properties && i < required->size(); ++i) {
        const std::string name = required->getElement<std::string>(static_cast<unsigned>(i));
        o->set(name, sample(properties->getObject(name), depth + 1));
      }
      return o;
    }
    return "x";
  }

 private:
  static std::string typeOf(const Object::Ptr& schema) {
    if (!schema->has("type")) return "";
    if (auto types = schema->getArray("type")) {
      for (std::size_t i = 0; i < types->size(); ++i) {
        const std::string t = types->getElement<std::string>(static_cast<unsigned>(i));
        if (t != "null") return t;
      }
      return "";
    }
    return schema->getValue<std::string>("type");
  }

  static std::string string(const Object::Ptr& schema) {
    const std::string format = schema->optValue<std::string>("format", "");
    if (format == "uuid") return newUuid();
    if (format == "email") return "agent@example.com";
    if (format == "date-time") return "2026-01-31T12:00:00Z";
    if (format == "uri") return "https://example.com/";
    if (format == "e164") return "+12025550123";
    return std::string(std::max(1, schema->optValue<int>("minLength", 1)), 'x');
  }

  Object::Ptr schemas_;
};

struct Reply {
  int status = 0;
  Object::Ptr json;
  std::string raw;
};

class StrictDeclarations : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Svcd::Options o;
    o.plugins = {"auth",  "identities", "dashboard", "email",   "sms",
                 "vault", "contacts",   "passwords", "secrets", "webhooks"};
    svcd_ = new Svcd(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    auto login = operatorLogin(*svcd_, "strict@example.com");
    key_ = login->optValue<std::string>("management_key", "");
    access_ = login->optValue<std::string>("access", "");
    ASSERT_FALSE(key_.empty());
    auto made = svcd_->post("/api/identities/", R"({"name":"Strict"})", bearer(key_));
    ASSERT_EQ(made.status, 201) << made.body;
    identity_ = made.json()->getValue<std::string>("uuid");
  }
  static void TearDownTestSuite() {
    delete svcd_;
    svcd_ = nullptr;
  }

  // One request on its own connection, closed after the answer: a route that took the request
  // (an event stream) is cut off after 10 s of silence instead of holding the test (every
  // request here is refused, and closed, at once: the 10 s are for a slow machine).
  static Reply send(const std::string& method, const std::string& target, const std::string& body,
                    const std::string& credential) {
    std::string request = method + " " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
    if (!credential.empty()) {
      request +=
          "Authorization: Bearer " + credential + "\r\nX-Svc-Identity: " + identity_ + "\r\n";
    }
    if (!body.empty()) request += "Content-Type: application/json\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    Reply reply;
    reply.raw = rawExchange(svcd_->port(), request, 10000);
    if (reply.raw.rfind("HTTP/1.1 ", 0) == 0) reply.status = std::stoi(reply.raw.substr(9, 3));
    const auto at = reply.raw.find("\r\n\r\n");
    try {
      if (at != std::string::npos) {
        reply.json = Poco::JSON::Parser().parse(reply.raw.substr(at + 4)).extract<Object::Ptr>();
      }
    } catch (const Poco::Exception&) {
    }
    return reply;
  }

  // Sends with the management key (and the identity, for routes that act for one), then, when
  // the route wants a signed-in user, with the access token.
  static Reply call(const std::string& method, const std::string& target, const std::string& body,
                    bool authenticated) {
    if (!authenticated) return send(method, target, body, "");
    Reply r = send(method, target, body, key_);
    if (r.status == 401 || r.status == 403) r = send(method, target, body, access_);
    return r;
  }

  // @return "" when the reply is 400 `invalid` naming zz_unknown with `expected` in the message,
  // else what it was instead.
  static std::string refusal(const Reply& r, const std::string& expected) {
    if (r.status != 400 || !r.json || r.json->optValue<std::string>("code", "") != "invalid") {
      return "answered " + std::to_string(r.status) + ": " + r.raw.substr(0, 600);
    }
    auto errors = r.json->getObject("errors");
    auto named = errors ? errors->getArray("zz_unknown") : nullptr;
    for (std::size_t i = 0; named && i < named->size(); ++i) {
      if (named->getElement<std::string>(static_cast<unsigned>(i)).find(expected) !=
          std::string::npos) {
        return "";
      }
    }
    return "did not name zz_unknown as an " + expected + ": " + text(r.json);
  }

  static Svcd* svcd_;
  static std::string key_, access_, identity_;
};

Svcd* StrictDeclarations::svcd_ = nullptr;
std::string StrictDeclarations::key_, StrictDeclarations::access_, StrictDeclarations::identity_;

// @return the path with its parameters filled in: ids a fresh uuid, and an {action} a name no
// plugin declares (the kernel checks shapes before any lookup; a contract action's own route
// would take the name of the generic one).
std::string filled(const std::string& path) {
  std::string out;
  std::size_t at = 0;
  while (at < path.size()) {
    const std::size_t open = path.find('{', at);
    if (open == std::string::npos) {
      out += path.substr(at);
      break;
    }
    const std::size_t close = path.find('}', open);
    out += path.substr(at, open - at);
    const std::string name = path.substr(open + 1, close - open - 1);
    out += name == "action" ? "zz-action" : newUuid();
    at = close + 1;
  }
  return out;
}

TEST_F(StrictDeclarations, EveryOperationRefusesAnUnknownParameterAndAnUnknownField) {
  auto described = svcd_->get("/api/schema/");
  ASSERT_EQ(described.status, 200) << described.body;
  auto doc = described.json();
  auto paths = doc->getObject("paths");
  ASSERT_TRUE(paths);
  const Sampler sampler(doc->getObject("components")->getObject("schemas"));
  std::set<std::string> passed, failed;
  int operations = 0;
  for (const auto& path : paths->getNames()) {
    auto item = paths->getObject(path);
    for (const auto& method : item->getNames()) {
      auto op = item->getObject(method);
      if (!op || !op->has("responses")) continue;
      const std::string verb = Poco::toUpper(method);
      const std::string name = verb + " " + path;
      SCOPED_TRACE(name);
      ++operations;
      auto security = op->getArray("security");
      const bool authenticated = security && security->size() > 0;
      const std::string target = filled(path);
      const std::string tag = op->getArray("tags")->getElement<std::string>(0);

      std::string problem =
          refusal(call(verb, target + "?zz_unknown=1", "", authenticated), "unknown parameter");
      if (problem.empty() && op->has("requestBody")) {
        auto schema = op->getObject("requestBody")
                          ->getObject("content")
                          ->getObject("application/json")
                          ->getObject("schema");
        Poco::Dynamic::Var body = sampler.sample(schema);
        Object::Ptr object = body.type() == typeid(Object::Ptr) ? body.extract<Object::Ptr>()
                                                                : Object::Ptr(new Object);
        object->set("zz_unknown", 1);
        problem = refusal(call(verb, target, text(object), authenticated), "unknown field");
      }
      if (problem.empty()) {
        passed.insert(name);
      } else {
        failed.insert(name);
        ADD_FAILURE() << name << " (" << tag << "): " << problem;
      }
    }
  }
  // The description holds every plugin's routes, not a handful.
  EXPECT_GT(operations, 60);
  EXPECT_GT(passed.size(), 40u);
  for (const std::string mine :
       {"POST /api/identities", "PATCH /api/identities/{uuid}",
        "POST /api/identities/{uuid}/{action}", "POST /api/identities/{uuid}/provision-phone",
        "POST /api/auth/keys", "PUT /api/encryption", "POST /api/passwords",
        "GET /api/passwords/generate-password", "POST /api/secrets", "POST /api/contacts",
        "GET /api/health/whoami"}) {
    EXPECT_TRUE(passed.count(mine)) << mine << " was not described or did not refuse";
  }
}

// @return the fields a 400 `invalid` names, after checking it is one.
std::set<std::string> named(const HttpReply& r) {
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.code(), "invalid") << r.body;
  std::set<std::string> out;
  if (r.status != 400) return out;
  if (auto errors = r.json()->getObject("errors")) {
    for (const auto& name : errors->getNames()) out.insert(name);
  }
  return out;
}

std::string firstError(const HttpReply& r, const std::string& field) {
  auto errors = r.json()->getObject("errors");
  auto list = errors ? errors->getArray(field) : nullptr;
  return list && list->size() > 0 ? list->getElement<std::string>(0) : "";
}

TEST_F(StrictDeclarations, EveryBadFieldIsNamedAtOnceAndEnumsListTheirValues) {
  auto call = [&](const std::string& method, const std::string& path, const std::string& body) {
    return http(svcd_->port(), method, path, body, bearer(key_));
  };
  const std::string at = "?identity=" + identity_;
  using Names = std::set<std::string>;
  EXPECT_EQ(named(call("POST", "/api/identities/",
                       R"({"name":"","provision_phone":"yes","country_code":7})")),
            (Names{"name", "provision_phone", "country_code"}));
  EXPECT_EQ(named(call("POST", "/api/auth/keys/identity/",
                       R"({"label":"a\u0007b","identity":"nope","color":"red"})")),
            (Names{"label", "identity", "color"}));
  EXPECT_EQ(named(call("PUT", "/api/passwords/" + newUuid() + "/" + at,
                       R"({"domain":"a b","username":5,"password":""})")),
            (Names{"domain", "username", "password", "notes"}));
  EXPECT_EQ(named(call("POST", "/api/secrets/" + at, R"({"key":"a b","value":"","notes":7})")),
            (Names{"key", "value", "notes"}));
  EXPECT_EQ(named(call("GET", "/api/passwords/generate-password/?length=2&special=maybe", "")),
            (Names{"length", "special"}));
  EXPECT_EQ(named(call("PUT", "/api/identities/" + identity_ + "/voice-agent/",
                       R"({"response_url":"ftp://example.com/","enabled":"yes"})")),
            (Names{"response_url", "enabled"}));

  // Enums name what they take.
  auto kdf = call("PUT", "/api/encryption/",
                  R"({"salt":"x","public_key":1,"kdf":{"alg":"scrypt","t":1}})");
  EXPECT_EQ(named(kdf), (Names{"salt", "public_key", "verifier", "kdf.alg", "kdf.t"}));
  EXPECT_EQ(firstError(kdf, "kdf.alg"), "must be one of: argon2id");
  auto plan = http(svcd_->adminPort(), "POST", "/admin/auth/accounts/" + newUuid() + "/plan/",
                   R"({"plan":"gold","zz_unknown":1})", bearer(svcd_->adminToken()));
  EXPECT_EQ(named(plan), (Names{"plan", "zz_unknown"}));
  EXPECT_EQ(firstError(plan, "plan"), "must be one of: active, none");
}

// An identity's fields come partly from other plugins (contacts' auto_contacts), which add them
// after the routes are declared: the identities plugin refuses, by name, what none of them takes.
TEST_F(StrictDeclarations, IdentityFieldsOfOtherPluginsAreTakenAndUnknownOnesNamed) {
  auto call = [&](const std::string& method, const std::string& path, const std::string& body) {
    return http(svcd_->port(), method, path, body, bearer(key_));
  };
  auto made = call("POST", "/api/identities/", R"({"name":"Auto","auto_contacts":true})");
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_TRUE(made.json()->getObject("contacts")->getValue<bool>("auto_contacts"));
  const std::string uuid = made.json()->getValue<std::string>("uuid");

  auto unknown = call("POST", "/api/identities/",
                      R"({"name":"X","auto_contacts":"yes","nickname":"x","zz_unknown":1})");
  EXPECT_EQ(named(unknown), (std::set<std::string>{"auto_contacts", "nickname", "zz_unknown"}));
  EXPECT_NE(firstError(unknown, "zz_unknown").find("auto_contacts"), std::string::npos)
      << "the message lists what the object takes, other plugins' fields included";
  // A create field that is not a setting is not the update's.
  EXPECT_EQ(named(call("PATCH", "/api/identities/" + uuid + "/",
                       R"({"email_identifier":"new","auto_contacts":false})")),
            std::set<std::string>{"email_identifier"});
  auto patched = call("PATCH", "/api/identities/" + uuid + "/", R"({"auto_contacts":false})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_FALSE(patched.json()->getObject("contacts")->getValue<bool>("auto_contacts"));
  EXPECT_EQ(call("GET", "/api/identities/" + uuid + "/?limit=5", "").status, 400)
      << "one identity takes no page parameters";
}

}  // namespace
}  // namespace svc::testing
