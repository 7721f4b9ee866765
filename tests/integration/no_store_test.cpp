// Cache-Control: no-store on every answer that carries a protected value (a password, a secret, a
// vault value, a key, a token, a webhook's signing secret), so that no browser or proxy keeps it.
// One table walks the routes that answer such values, in an order that makes them; besides its
// own column, every answer is searched for each value made so far (a value found in an answer
// not marked in the table fails it too).
#include "harness.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace svc::testing {
namespace {

std::string b64(std::size_t n, char fill) {
  return sdk::base64(std::string(n, fill));
}

struct Call {
  std::string method;
  std::string path;  // "{name}": a value an earlier answer gave (see `keep`)
  std::string body;
  bool carries;  // the answer holds a protected value: it must say no-store
  std::map<std::string, std::string> keep = {};  // name -> a member of the answer to keep
  std::vector<std::string> secrets = {};         // members of the answer that are protected
  std::string as = "owner";                      // whose management key ("" for none)
};

class NoStore : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault", "secrets", "passwords", "webhooks"};
    o.args = {"--set", "webhooks.allow_private_urls=true"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    auto owner = operatorLogin(*svcd_, "owner@example.com");
    keys_["owner"] = owner->optValue<std::string>("management_key", "");
    kept_["refresh"] = owner->optValue<std::string>("refresh", "");
    keys_["e2e"] =
        operatorLogin(*svcd_, "e2e@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(keys_["owner"].empty());
    ASSERT_FALSE(kept_["refresh"].empty());
    // The values the table makes are looked for in every answer.
    protected_ = {keys_["owner"],         keys_["e2e"],         kept_["refresh"],
                  "canary-password-7f3a", "canary-secret-9b1c", "canary-notes-2d4e"};
  }

  std::string fill(std::string text) const {
    for (const auto& [name, value] : kept_) {
      for (auto at = text.find("{" + name + "}"); at != std::string::npos;
           at = text.find("{" + name + "}")) {
        text.replace(at, name.size() + 2, value);
      }
    }
    return text;
  }

  std::unique_ptr<Svcd> svcd_;
  std::map<std::string, std::string> keys_, kept_;
  std::vector<std::string> protected_;
};

TEST_F(NoStore, EveryAnswerCarryingAProtectedValueSaysNoStore) {
  const std::string canary_entry =
      R"({"domain":"example.com","username":"ann","password":"canary-password-7f3a",)"
      R"("notes":"canary-notes-2d4e"})";
  const std::string setup = "{\"salt\":\"" + b64(16, 'a') + "\",\"public_key\":\"" + b64(32, 'a') +
                            "\",\"verifier\":\"" + b64(62, 'a') + "\"}";
  const std::vector<Call> calls = {
      {"POST", "/api/auth/device/", R"({"client_id":"no-store"})", true, {}, {"device_code"}, ""},
      {"POST",
       "/api/auth/token/refresh/",
       R"({"refresh":"{refresh}"})",
       true,
       {},
       {"access", "refresh"},
       ""},
      {"POST", "/api/identities/", R"({"name":"ann"})", false, {{"identity", "uuid"}}},
      {"POST", "/api/auth/keys/", "{}", true, {}, {"key"}},
      {"POST", "/api/auth/keys/identity/", R"({"identity":"{identity}"})", true, {}, {"key"}},
      {"GET", "/api/auth/keys/", "", false},
      // Passwords.
      {"POST", "/api/passwords/?identity={identity}", canary_entry, true, {{"password", "uuid"}}},
      {"GET", "/api/passwords/", "", true},
      {"GET", "/api/passwords/{password}/", "", true},
      {"PATCH", "/api/passwords/{password}/", R"({"username":"ann2"})", true},
      {"PUT", "/api/passwords/{password}/", canary_entry, true},
      {"GET", "/api/passwords/generate-password/", "", true, {}, {"password"}},
      // Secrets, under both prefixes.
      {"POST",
       "/api/secrets/?identity={identity}",
       R"({"key":"API_TOKEN","value":"canary-secret-9b1c","notes":"canary-notes-2d4e"})",
       true,
       {{"secret", "uuid"}}},
      {"GET", "/api/secrets/", "", true},
      {"GET", "/api/secrets/?identity={identity}&key=API_TOKEN", "", true},
      {"GET", "/api/secrets/{secret}/", "", true},
      {"PATCH", "/api/secrets/{secret}/", R"({"notes":"canary-notes-2d4e"})", true},
      {"PUT", "/api/secrets/{secret}/", R"({"key":"API_TOKEN","value":"canary-secret-9b1c"})",
       true},
      {"GET", "/api/vault/", "", true},
      {"GET", "/api/vault/{secret}/", "", true},
      // Webhooks: the signing secret is shown when made and when rotated, never after.
      {"POST",
       "/api/webhooks/",
       R"({"url":"http://127.0.0.1:9/h","event_types":["identity.created"]})",
       true,
       {{"webhook", "uuid"}},
       {"secret"}},
      {"POST", "/api/webhooks/{webhook}/rotate-secret/", "{}", true, {}, {"secret"}},
      {"GET", "/api/webhooks/{webhook}/", "", false},
      {"GET", "/api/webhooks/", "", false},
      // A passphrase change lists every protected value of the account, in clear.
      {"POST",
       "/api/encryption/rekey/",
       "{}",
       true,
       {{"rekey_token", "rekey_token"}},
       {"rekey_token"}},
      {"DELETE", "/api/encryption/rekey/", R"({"rekey_token":"{rekey_token}"})", false},
      // End-to-end metadata: the verifier checks a passphrase, offline too.
      {"PUT", "/api/encryption/", setup, true, {}, {}, "e2e"},
      {"GET", "/api/encryption/", "", true, {}, {}, "e2e"},
      // A tool call answers what its route answers, and keeps it from caches the same way.
      {"POST", "/mcp/",
       R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_secrets_by_uuid",)"
       R"("arguments":{"uuid":"{secret}"}}})",
       true},
      {"POST", "/mcp/",
       R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_identities"}})",
       false},
  };
  for (const Call& c : calls) {
    const std::string path = fill(c.path);
    const std::string label = c.method + " " + c.path;
    std::map<std::string, std::string> headers = {{"Content-Type", "application/json"}};
    if (!c.as.empty()) headers = bearer(keys_[c.as]);
    auto r = http(svcd_->port(), c.method, path, fill(c.body), headers);
    ASSERT_GE(r.status, 200) << label << ": " << r.body;
    ASSERT_LT(r.status, 300) << label << ": " << r.body;
    const std::string cache = r.header("cache-control");
    const bool no_store = cache.find("no-store") != std::string::npos;
    if (r.status != 204 && !r.body.empty()) {
      auto answer = r.json();
      for (const auto& [name, member] : c.keep) {
        kept_[name] = answer->getValue<std::string>(member);
      }
      for (const auto& member : c.secrets) {
        ASSERT_TRUE(answer->has(member)) << label << ": " << r.body;
        protected_.push_back(answer->getValue<std::string>(member));
      }
    }
    EXPECT_EQ(no_store, c.carries) << label << " answered Cache-Control: " << cache;
    for (const auto& value : protected_) {
      if (!value.empty() && r.body.find(value) != std::string::npos) {
        EXPECT_TRUE(no_store) << label << " answered a protected value without no-store";
      }
    }
  }
}

}  // namespace
}  // namespace svc::testing
