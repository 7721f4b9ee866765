// POST /mcp/ as a model reads it: what a tool call answers when there is nothing to say (a wait
// that timed out), a call with arguments the tool does not take, and the descriptions of the
// tools that read end-to-end encrypted values. The protocol itself, through a real MCP client, is
// tests/browser/mcp.test.mjs's.
#include "harness.h"

#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace svc::testing {
namespace {

class Mcp : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "sms", "vault", "secrets", "passwords"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "mcp@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
  }

  // One JSON-RPC request. @return its `result` (failing the test when there is none).
  Poco::JSON::Object::Ptr rpc(const std::string& method, const std::string& params) {
    auto r =
        http(svcd_->port(), "POST", "/mcp/",
             R"({"jsonrpc":"2.0","id":1,"method":")" + method + R"(","params":)" + params + "}",
             bearer(key_));
    EXPECT_EQ(r.status, 200) << r.body;
    auto result = r.json()->getObject("result");
    EXPECT_TRUE(result) << r.body;
    return result ? result : Poco::JSON::Object::Ptr(new Poco::JSON::Object);
  }
  // A tool call. @return its result's text.
  std::string call(const std::string& tool, const std::string& arguments, bool* error = nullptr) {
    auto result = rpc("tools/call", R"({"name":")" + tool + R"(","arguments":)" + arguments + "}");
    if (error) *error = result->optValue<bool>("isError", false);
    auto content = result->getArray("content");
    return content && content->size() > 0 ? content->getObject(0)->optValue<std::string>("text", "")
                                          : "";
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_;
};

TEST_F(Mcp, AWaitThatTimesOutSaysNothingArrived) {
  auto made = http(svcd_->port(), "POST", "/api/identities/",
                   R"({"name":"Waiter","provision_phone":true})", bearer(key_));
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string uuid = made.json()->getValue<std::string>("uuid");
  bool error = true;
  const std::string text =
      call("get_messages_wait", R"({"identity":")" + uuid + R"(","timeout":1})", &error);
  EXPECT_FALSE(error);
  EXPECT_EQ(text, "Nothing arrived within the timeout (204). Call again to keep waiting.");
  // A route that answers no content at once has done what it was asked.
  auto secret = http(svcd_->port(), "POST", "/api/secrets/?identity=" + uuid,
                     R"({"key":"GONE","value":"x"})", bearer(key_));
  ASSERT_EQ(secret.status, 201) << secret.body;
  EXPECT_EQ(
      call("delete_secrets_by_uuid", R"({"uuid":")" + secret.json()->getValue<std::string>("uuid") +
                                         R"(","identity":")" + uuid + R"("})"),
      "Done (204, no content).");
}

TEST_F(Mcp, EveryUnknownArgumentIsNamedAtOnce) {
  bool error = false;
  const std::string text = call("get_identities", R"({"colour":"red","size":2,"limit":5})", &error);
  EXPECT_TRUE(error);
  EXPECT_EQ(text,
            "Unknown arguments `colour`, `size`; this tool takes what its inputSchema lists.");
  EXPECT_EQ(call("get_identities", R"({"colour":"red"})"),
            "Unknown argument `colour`; this tool takes what its inputSchema lists.");
}

TEST_F(Mcp, ToolsThatReadSealedValuesSayNoCallCanOpenThem) {
  auto tools = rpc("tools/list", "{}")->getArray("tools");
  ASSERT_TRUE(tools);
  int described = 0;
  for (std::size_t i = 0; i < tools->size(); ++i) {
    auto tool = tools->getObject(static_cast<unsigned>(i));
    const std::string name = tool->getValue<std::string>("name");
    if (name != "get_secrets" && name != "get_secrets_by_uuid" && name != "get_passwords" &&
        name != "get_passwords_by_uuid") {
      continue;
    }
    ++described;
    const std::string description = tool->getValue<std::string>("description");
    EXPECT_NE(description.find("`e2e::` sealed boxes"), std::string::npos) << name;
    EXPECT_NE(description.find("MCP tools, cannot show them in clear"), std::string::npos) << name;
  }
  EXPECT_EQ(described, 4);
}

// JSON-RPC 2.0: a message that is JSON but not an object (null, a number, a string, a boolean)
// is an invalid request, answered with a null id; only what is not JSON at all is a parse error.
// Arrays (batches) are refused as invalid requests, the empty one as the specification says.
TEST_F(Mcp, AMessageThatIsNotAnObjectIsAnInvalidRequest) {
  struct Case {
    std::string body;
    int code;
  };
  for (const Case& c :
       {Case{"null", -32600}, Case{"1", -32600}, Case{R"("tools/list")", -32600},
        Case{"true", -32600}, Case{"[]", -32600}, Case{"[null]", -32600},
        Case{R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", -32600}, Case{"{", -32700},
        Case{"nul", -32700}, Case{"", -32700}, Case{"1][2", -32700}, Case{"1,2", -32700}}) {
    auto r = http(svcd_->port(), "POST", "/mcp/", c.body, bearer(key_));
    EXPECT_EQ(r.status, 400) << c.body << ": " << r.body;
    auto answer = r.json();
    EXPECT_EQ(answer->getValue<std::string>("jsonrpc"), "2.0") << c.body;
    EXPECT_TRUE(answer->has("id") && answer->get("id").isEmpty()) << c.body << ": " << r.body;
    auto error = answer->getObject("error");
    ASSERT_TRUE(error) << c.body << ": " << r.body;
    EXPECT_EQ(error->getValue<int>("code"), c.code) << c.body << ": " << r.body;
  }
}

// A tool call's `arguments`, when present, is an object: anything else is invalid params
// (-32602), and the tool does not run (it used to, as if `{}` had been sent).
TEST_F(Mcp, ArgumentsThatAreNotAnObjectAreInvalidParamsAndRunNothing) {
  for (const std::string arguments : {"null", "[]", R"(["Agent"])", R"("name")", "7", "false"}) {
    const std::string params = R"({"name":"get_identities","arguments":)" + arguments + "}";
    auto r = http(svcd_->port(), "POST", "/mcp/",
                  R"({"jsonrpc":"2.0","id":"a1","method":"tools/call","params":)" + params + "}",
                  bearer(key_));
    EXPECT_EQ(r.status, 200) << arguments << ": " << r.body;
    auto answer = r.json();
    EXPECT_EQ(answer->getValue<std::string>("id"), "a1") << arguments;
    EXPECT_FALSE(answer->has("result")) << arguments << ": " << r.body;
    auto error = answer->getObject("error");
    ASSERT_TRUE(error) << arguments << ": " << r.body;
    EXPECT_EQ(error->getValue<int>("code"), -32602) << arguments << ": " << r.body;
    EXPECT_NE(error->getValue<std::string>("message").find("`arguments`"), std::string::npos)
        << r.body;
  }
  // Without arguments the tool runs with none; with an object, with those.
  bool error = true;
  call("get_identities", "{}", &error);
  EXPECT_FALSE(error);
  auto bare = rpc("tools/call", R"({"name":"get_identities"})");
  EXPECT_FALSE(bare->optValue<bool>("isError", true));
}

}  // namespace
}  // namespace svc::testing
