// The auth plugin over HTTP: the device login (RFC 8628) in every state, keys, sessions, and the
// operator commands, on the real svcd (issue: accounts and credentials).
#include "harness.h"

#include <Poco/Base64Encoder.h>
#include <Poco/JSON/Parser.h>
#include <Poco/JWT/Signer.h>
#include <Poco/JWT/Token.h>

#include <gtest/gtest.h>

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <regex>
#include <thread>

namespace svc::testing {
namespace {

const std::map<std::string, std::string> kJson{{"Content-Type", "application/json"}};

class Auth : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth"};
    o.args = {"--set", "auth.device.interval_seconds=1"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start());
  }

  HttpReply op(const std::string& path, const std::string& body) {
    return http(svcd_->adminPort(), "POST", path, body, bearer(svcd_->adminToken()));
  }
  HttpReply poll(const std::string& device_code, bool wait = false) {
    return svcd_->post("/api/auth/device/token/", "{\"device_code\":\"" + device_code + "\"" +
                                                      (wait ? ",\"wait\":true" : "") + "}");
  }
  Poco::JSON::Object::Ptr start() {
    auto r = svcd_->post("/api/auth/device/", "");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  void addUser(const std::string& email) {
    auto r =
        op("/admin/auth/users/", "{\"email\":\"" + email + "\",\"password\":\"correct horse\"}");
    ASSERT_EQ(r.status, 201) << r.body;
  }
  HttpReply approve(const std::string& user_code, const std::string& email) {
    return op("/admin/auth/device/approve/",
              "{\"user_code\":\"" + user_code + "\",\"user\":\"" + email + "\"}");
  }
  // A whole device login. @return the token answer.
  Poco::JSON::Object::Ptr login(const std::string& email) {
    auto d = start();
    EXPECT_EQ(approve(d->getValue<std::string>("user_code"), email).status, 200);
    auto t = poll(d->getValue<std::string>("device_code"));
    EXPECT_EQ(t.status, 200) << t.body;
    return t.json();
  }

  std::unique_ptr<Svcd> svcd_;
};

TEST_F(Auth, DeviceStartAnswersTheContractShape) {
  auto d = start();
  EXPECT_TRUE(std::regex_match(d->getValue<std::string>("user_code"),
                               std::regex("[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}")));
  EXPECT_EQ(d->getValue<int>("expires_in"), 600);
  EXPECT_EQ(d->getValue<int>("interval"), 1);  // configured for the test; 5 by default
  std::string uri = d->getValue<std::string>("verification_uri");
  EXPECT_TRUE(uri.size() > 16 && uri.substr(uri.size() - 17) == "/dashboard/device") << uri;
  EXPECT_EQ(d->getValue<std::string>("verification_uri_complete"),
            uri + "?user_code=" + d->getValue<std::string>("user_code"));
  EXPECT_GE(d->getValue<std::string>("device_code").size(), 40u);
}

TEST_F(Auth, PendingThenSlowDownThenApprovedTokensExactlyOnce) {
  // An interval of 5 s, which two polls in a row fall well within however slow the machine, and
  // a clock the test moves.
  Svcd::Options o;
  o.plugins = {"auth"};
  o.args = {"--set", "auth.device.interval_seconds=5", "--set", "testing.clock=true"};
  svcd_.reset();
  svcd_ = std::make_unique<Svcd>(o);
  ASSERT_TRUE(svcd_->start());
  addUser("ann@example.com");
  auto d = start();
  std::string code = d->getValue<std::string>("device_code");
  auto pending = poll(code);
  EXPECT_EQ(pending.status, 400);
  EXPECT_EQ(pending.json()->getValue<std::string>("error"), "authorization_pending");
  EXPECT_EQ(pending.header("cache-control"), "no-store");
  auto fast = poll(code);  // sooner than the 5 s interval
  EXPECT_EQ(fast.json()->getValue<std::string>("error"), "slow_down");
  EXPECT_EQ(fast.json()->getValue<int>("interval"), 10);  // grew by 5 and is saved
  ASSERT_EQ(op("/admin/clock/", R"({"advance_seconds":6})").status, 200);
  auto again = poll(code);  // 6 s later, but the interval is 10 s now: slower still
  EXPECT_EQ(again.json()->getValue<std::string>("error"), "slow_down");
  EXPECT_EQ(again.json()->getValue<int>("interval"), 15);

  // Lower case and no hyphen are accepted.
  std::string user_code = d->getValue<std::string>("user_code");
  std::string loose = Poco::toLower(user_code.substr(0, 4) + user_code.substr(5));
  auto approved = approve(loose, "ann@example.com");
  ASSERT_EQ(approved.status, 200) << approved.body;
  auto tokens = poll(code, true);  // a waiting request never counts as polling too fast
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  auto t = tokens.json();
  for (const char* f : {"access", "refresh", "management_key", "access_token", "refresh_token"}) {
    EXPECT_FALSE(t->getValue<std::string>(f).empty()) << f;
  }
  EXPECT_EQ(t->getValue<std::string>("token_type"), "Bearer");
  EXPECT_EQ(t->getValue<int>("expires_in"), 3600);
  EXPECT_EQ(t->getObject("user")->getValue<std::string>("email"), "ann@example.com");
  EXPECT_EQ(t->getValue<std::string>("management_key").rfind("svc_mgmt_", 0), 0u);
  // Exactly once.
  EXPECT_EQ(poll(code).json()->getValue<std::string>("error"), "invalid_grant");

  auto who = svcd_->get("/api/health/whoami/", bearer(t->getValue<std::string>("management_key")));
  ASSERT_EQ(who.status, 200) << who.body;
  EXPECT_EQ(who.json()->getValue<std::string>("kind"), "management");
  EXPECT_EQ(who.json()->getObject("account")->getValue<std::string>("id"),
            approved.json()->getValue<std::string>("account"));
  auto as_user = svcd_->get("/api/health/whoami/", bearer(t->getValue<std::string>("access")));
  EXPECT_EQ(as_user.json()->getValue<std::string>("kind"), "user");
  EXPECT_TRUE(as_user.json()->isNull("key"));
}

TEST_F(Auth, TheFirstApprovalCreatesAnEmptyAccountAndLaterOnesReuseIt) {
  addUser("bo@example.com");
  auto first = login("bo@example.com");
  auto second = login("bo@example.com");
  auto a =
      svcd_->get("/api/health/whoami/", bearer(first->getValue<std::string>("management_key")));
  auto b =
      svcd_->get("/api/health/whoami/", bearer(second->getValue<std::string>("management_key")));
  EXPECT_EQ(a.json()->getObject("account")->getValue<std::string>("id"),
            b.json()->getObject("account")->getValue<std::string>("id"));
  auto keys = svcd_->get("/api/auth/keys/", bearer(first->getValue<std::string>("management_key")));
  EXPECT_EQ(keys.json()->getValue<int>("count"), 2);
}

TEST_F(Auth, DeniedAndExpiredAndUnknownCodes) {
  auto d = start();
  auto denied = op("/admin/auth/device/deny/",
                   "{\"user_code\":\"" + d->getValue<std::string>("user_code") + "\"}");
  ASSERT_EQ(denied.status, 200) << denied.body;
  EXPECT_EQ(poll(d->getValue<std::string>("device_code")).json()->getValue<std::string>("error"),
            "access_denied");
  EXPECT_EQ(poll("not-a-real-code").json()->getValue<std::string>("error"), "invalid_grant");
  EXPECT_EQ(
      op("/admin/auth/device/approve/", "{\"user_code\":\"BBBB-BBBB\",\"user\":\"x@y.z\"}").status,
      404);
  EXPECT_EQ(
      op("/admin/auth/device/approve/", "{\"user_code\":\"AAAA-AAAA\",\"user\":\"x@y.z\"}").code(),
      "invalid");

  Svcd::Options short_options;
  short_options.plugins = {"auth"};
  short_options.args = {"--set", "auth.device.expires_seconds=60", "--set", "testing.clock=true"};
  Svcd short_lived(short_options);
  ASSERT_TRUE(short_lived.start());
  auto s = short_lived.post("/api/auth/device/", "").json();
  // Past its minute on the server's clock, however long the machine took.
  ASSERT_EQ(http(short_lived.adminPort(), "POST", "/admin/clock/", R"({"advance_seconds":61})",
                 bearer(short_lived.adminToken()))
                .status,
            200);
  auto expired =
      short_lived.post("/api/auth/device/token/",
                       "{\"device_code\":\"" + s->getValue<std::string>("device_code") + "\"}");
  EXPECT_EQ(expired.json()->getValue<std::string>("error"), "expired_token");
}

TEST_F(Auth, TheStandardFormGrantWorksAndWrongGrantsAreRefused) {
  auto d = start();
  std::string code = d->getValue<std::string>("device_code");
  const std::map<std::string, std::string> form{
      {"Content-Type", "application/x-www-form-urlencoded"}};
  auto ok =
      http(svcd_->port(), "POST", "/api/auth/device/token/",
           "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=" + code,
           form);
  EXPECT_EQ(ok.json()->getValue<std::string>("error"), "authorization_pending");
  auto wrong = http(svcd_->port(), "POST", "/api/auth/device/token/",
                    "grant_type=password&device_code=" + code, form);
  EXPECT_EQ(wrong.json()->getValue<std::string>("error"), "unsupported_grant_type");
  // A form is OAuth's and answered in its shape; a JSON body is checked against the route's
  // declaration, like every JSON body of this API, and refused naming the field.
  EXPECT_EQ(http(svcd_->port(), "POST", "/api/auth/device/token/",
                 "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code", form)
                .json()
                ->getValue<std::string>("error"),
            "invalid_request");
  for (const char* body :
       {"{}", "{\"device_code\":5}", "{\"device_code\":\"x\",\"wait\":\"yes\"}"}) {
    auto bad = svcd_->post("/api/auth/device/token/", body);
    EXPECT_EQ(bad.status, 400) << body;
    EXPECT_EQ(bad.code(), "invalid") << bad.body;
    EXPECT_TRUE(bad.json()->getObject("errors")) << bad.body;
  }
}

TEST_F(Auth, AWaitingPollIsAnsweredAtApprovalAndOnlyOneWaiterGetsTheTokens) {
  addUser("cy@example.com");
  auto d = start();
  std::string code = d->getValue<std::string>("device_code");
  auto first = std::async(std::launch::async, [&] { return poll(code, true); });
  auto second = std::async(std::launch::async, [&] { return poll(code, true); });
  ASSERT_TRUE(waitForSample(*svcd_, "svc_held_responses_open", 2));  // both wait
  auto started = std::chrono::steady_clock::now();
  ASSERT_EQ(approve(d->getValue<std::string>("user_code"), "cy@example.com").status, 200);
  auto a = first.get(), b = second.get();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  int winners = (a.status == 200) + (b.status == 200);
  EXPECT_EQ(winners, 1) << a.body << "\n" << b.body;
  const HttpReply& loser = a.status == 200 ? b : a;
  EXPECT_EQ(loser.json()->getValue<std::string>("error"), "invalid_grant");
}

// Two people approve the same code at once: exactly one approval counts, and the agent's tokens
// are that person's.
TEST_F(Auth, TwoApprovalsRaceAndExactlyOneWins) {
  addUser("r1@example.com");
  addUser("r2@example.com");
  for (int round = 0; round < 5; ++round) {
    auto d = start();
    const std::string user_code = d->getValue<std::string>("user_code");
    auto one = std::async(std::launch::async, [&] { return approve(user_code, "r1@example.com"); });
    auto two = std::async(std::launch::async, [&] { return approve(user_code, "r2@example.com"); });
    auto a = one.get(), b = two.get();
    ASSERT_EQ((a.status == 200) + (b.status == 200), 1) << a.body << "\n" << b.body;
    const HttpReply& loser = a.status == 200 ? b : a;
    EXPECT_EQ(loser.status, 404) << loser.body;
    auto t = poll(d->getValue<std::string>("device_code"));
    ASSERT_EQ(t.status, 200) << t.body;
    EXPECT_EQ(t.json()->getObject("user")->getValue<std::string>("email"),
              a.status == 200 ? "r1@example.com" : "r2@example.com");
  }
}

// A poll racing an approval gets either "pending" or the tokens, and the tokens exactly once.
TEST_F(Auth, PollsRacingAnApprovalGetTheTokensExactlyOnce) {
  addUser("r3@example.com");
  auto d = start();
  const std::string code = d->getValue<std::string>("device_code");
  std::vector<std::future<HttpReply>> polls;
  for (int i = 0; i < 6; ++i) {
    polls.push_back(std::async(std::launch::async, [&] { return poll(code, true); }));
  }
  auto approval = std::async(std::launch::async, [&] {
    return approve(d->getValue<std::string>("user_code"), "r3@example.com");
  });
  ASSERT_EQ(approval.get().status, 200);
  int issued = 0;
  for (auto& p : polls) {
    auto r = p.get();
    if (r.status == 200) {
      ++issued;
    } else {
      EXPECT_EQ(r.json()->getValue<std::string>("error"), "invalid_grant") << r.body;
    }
  }
  EXPECT_EQ(issued, 1);
}

TEST_F(Auth, AWaitingPollEndsWhenTheCodeExpires) {
  Svcd::Options o;
  o.plugins = {"auth"};
  o.args = {"--set", "auth.device.expires_seconds=1"};
  Svcd short_lived(o);
  ASSERT_TRUE(short_lived.start());
  auto d = short_lived.post("/api/auth/device/", "").json();
  auto started = std::chrono::steady_clock::now();
  auto r = short_lived.post(
      "/api/auth/device/token/",
      "{\"device_code\":\"" + d->getValue<std::string>("device_code") + "\",\"wait\":true}");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(8));
  EXPECT_EQ(r.json()->getValue<std::string>("error"), "expired_token");
}

TEST_F(Auth, KeysAreCreatedListedAndRevoked) {
  addUser("di@example.com");
  std::string mgmt = login("di@example.com")->getValue<std::string>("management_key");
  auto created = svcd_->post("/api/auth/keys/", "{\"label\":\"ci\"}", bearer(mgmt));
  ASSERT_EQ(created.status, 201) << created.body;
  auto c = created.json();
  std::string key = c->getValue<std::string>("key");
  EXPECT_EQ(c->getValue<std::string>("kind"), "management");
  EXPECT_EQ(key.substr(0, c->getValue<std::string>("prefix").size()),
            c->getValue<std::string>("prefix"));
  auto list = svcd_->get("/api/auth/keys/", bearer(mgmt));
  EXPECT_EQ(list.body.find(key), std::string::npos);  // never the full key again
  EXPECT_EQ(list.json()->getValue<int>("count"), 2);
  EXPECT_EQ(svcd_->get("/api/health/whoami/", bearer(key)).status, 200);
  EXPECT_EQ(http(svcd_->port(), "DELETE", "/api/auth/keys/" + c->getValue<std::string>("id") + "/",
                 "", bearer(mgmt))
                .status,
            204);
  auto after = svcd_->get("/api/health/whoami/", bearer(key));
  EXPECT_EQ(after.status, 401);
  EXPECT_EQ(after.code(), "authentication_failed");
  EXPECT_EQ(http(svcd_->port(), "DELETE", "/api/auth/keys/" + c->getValue<std::string>("id") + "/",
                 "", bearer(mgmt))
                .status,
            404);
  // Identity keys need an identity of this account (no identities plugin here: none exists).
  auto ik = svcd_->post("/api/auth/keys/identity/",
                        "{\"identity\":\"a1a1a1a1-0000-4000-8000-000000000001\",\"label\":\"x\"}",
                        bearer(mgmt));
  EXPECT_EQ(ik.status, 404);
}

TEST_F(Auth, BadKeysAndTokensAreRefusedWithTheRightCode) {
  addUser("ed@example.com");
  auto t = login("ed@example.com");
  std::string key = t->getValue<std::string>("management_key");
  std::string typo = key;
  typo[12] = typo[12] == 'a' ? 'b' : 'a';
  auto bad = svcd_->get("/api/health/whoami/", bearer(typo));
  EXPECT_EQ(bad.code(), "authentication_failed");
  EXPECT_NE(bad.json()->getValue<std::string>("detail").find("checksum"), std::string::npos);
  EXPECT_EQ(svcd_->get("/api/health/whoami/", bearer("garbage")).code(), "authentication_failed");
  EXPECT_EQ(svcd_->get("/api/health/whoami/", {{"Authorization", "Basic eDp5"}}).code(),
            "authentication_failed");
  EXPECT_EQ(svcd_->get("/api/health/whoami/", bearer(std::string(5000, 'x'))).status, 401);
  // Access tokens: a re-signed, truncated or alg-none token is refused.
  std::string access = t->getValue<std::string>("access");
  auto dot1 = access.find('.'), dot2 = access.rfind('.');
  std::string none_header = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0";  // {"alg":"none","typ":"JWT"}
  for (const std::string& forged :
       {access.substr(0, dot2) + ".", none_header + access.substr(dot1, dot2 - dot1) + ".",
        access.substr(0, access.size() - 5),
        access.substr(0, dot2 + 1) + "AAAA" + access.substr(dot2 + 5)}) {
    EXPECT_EQ(svcd_->get("/api/health/whoami/", bearer(forged)).status, 401) << forged;
  }
  // HMAC confusion: an HS256 token keyed with the public key's bytes is refused.
  auto public_n = svcd_->get("/api/auth/jwks/")
                      .json()
                      ->getArray("keys")
                      ->getObject(0)
                      ->getValue<std::string>("n");
  Poco::JWT::Token claims(access.substr(0, dot2) + ".");
  Poco::JWT::Signer hmac(public_n);
  std::string confused = hmac.sign(claims, Poco::JWT::Signer::ALGO_HS256);
  EXPECT_EQ(svcd_->get("/api/health/whoami/", bearer(confused)).status, 401) << confused;
  EXPECT_EQ(svcd_->get("/api/health/whoami/", bearer(access)).status, 200);
  // JWKS publishes the RS256 key.
  auto jwks = svcd_->get("/api/auth/jwks/").json();
  auto k = jwks->getArray("keys")->getObject(0);
  EXPECT_EQ(k->getValue<std::string>("kty"), "RSA");
  EXPECT_EQ(k->getValue<std::string>("alg"), "RS256");
}

// RFC 9110 section 11.1: the scheme is case-insensitive; agents' HTTP libraries differ.
TEST_F(Auth, TheBearerSchemeIsMatchedInAnyCaseWithAnySpacing) {
  addUser("bea@example.com");
  auto t = login("bea@example.com");
  for (const std::string& credential :
       {t->getValue<std::string>("management_key"), t->getValue<std::string>("access")}) {
    for (const char* scheme : {"bearer ", "BEARER ", "Bearer    ", "bEaReR\t"}) {
      auto r = svcd_->get("/api/health/whoami/", {{"Authorization", scheme + credential}});
      EXPECT_EQ(r.status, 200) << scheme << r.body;
    }
  }
  auto op = http(
      svcd_->adminPort(), "POST", "/admin/auth/users/",
      "{\"email\":\"bob@example.com\",\"password\":\"correct horse\"}",
      {{"Authorization", "bearer  " + svcd_->adminToken()}, {"Content-Type", "application/json"}});
  EXPECT_EQ(op.status, 201) << op.body;
}

TEST_F(Auth, RefreshTokensRotateAndAReusedOneRevokesItsFamily) {
  addUser("fi@example.com");
  auto t = login("fi@example.com");
  std::string r1 = t->getValue<std::string>("refresh");
  auto rotated = svcd_->post("/api/auth/token/refresh/", "{\"refresh\":\"" + r1 + "\"}");
  ASSERT_EQ(rotated.status, 200) << rotated.body;
  std::string r2 = rotated.json()->getValue<std::string>("refresh");
  EXPECT_NE(r1, r2);
  EXPECT_EQ(
      svcd_->get("/api/health/whoami/", bearer(rotated.json()->getValue<std::string>("access")))
          .status,
      200);
  // Presenting the retired r1 revokes the family: r2 stops working too.
  EXPECT_EQ(svcd_->post("/api/auth/token/refresh/", "{\"refresh\":\"" + r1 + "\"}").status, 401);
  EXPECT_EQ(svcd_->post("/api/auth/token/refresh/", "{\"refresh\":\"" + r2 + "\"}").status, 401);
  // Logout revokes a fresh family.
  std::string r3 = login("fi@example.com")->getValue<std::string>("refresh");
  EXPECT_EQ(svcd_->post("/api/auth/logout/", "{\"refresh\":\"" + r3 + "\"}").status, 204);
  EXPECT_EQ(svcd_->post("/api/auth/token/refresh/", "{\"refresh\":\"" + r3 + "\"}").status, 401);
}

TEST_F(Auth, OperatorCommandsWorkFromSvcctl) {
  std::string svcctl = binDir() +
                       "/svcctl --admin http://127.0.0.1:" + std::to_string(svcd_->adminPort()) +
                       " --admin-token " + svcd_->adminToken();
  auto [added, out] =
      runCommand("echo 'correct horse' | " + svcctl + " users add gu@example.com --password-stdin");
  EXPECT_EQ(added, 0) << out;
  auto [dup, dup_out] =
      runCommand("echo 'correct horse' | " + svcctl + " users add gu@example.com --password-stdin");
  EXPECT_NE(dup, 0);
  EXPECT_NE(dup_out.find("conflict"), std::string::npos) << dup_out;
  // --password-stdin is required, and its help says so where the usage stands.
  auto [help_rc, help] = runCommand(svcctl + " users add --help");
  EXPECT_EQ(help_rc, 0) << help;
  EXPECT_NE(help.find("usage: svcctl users add [options] EMAIL --password-stdin\n"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("required options:\n  --password-stdin"), std::string::npos) << help;
  auto [bare_rc, bare] = runCommand(svcctl + " users add nopass@example.com < /dev/null");
  EXPECT_EQ(bare_rc, 2) << bare;
  EXPECT_NE(bare.find("svcctl: missing --password-stdin"), std::string::npos) << bare;
  auto d = start();
  // Approving as a user who does not exist says how to add one.
  auto [unknown_rc, unknown] =
      runCommand(svcctl + " device approve " + d->getValue<std::string>("user_code") +
                 " --user nobody@example.com");
  EXPECT_EQ(unknown_rc, 1) << unknown;
  EXPECT_NE(unknown.find("svcctl: 404 not_found: No user has this email; add one with `svcctl "
                         "users add EMAIL --password-stdin`"),
            std::string::npos)
      << unknown;
  auto [ok, approved] =
      runCommand(svcctl + " device approve " + d->getValue<std::string>("user_code") +
                 " --user gu@example.com");
  ASSERT_EQ(ok, 0) << approved;
  std::string account = Poco::JSON::Parser()
                            .parse(approved)
                            .extract<Poco::JSON::Object::Ptr>()
                            ->getValue<std::string>("account");
  EXPECT_EQ(poll(d->getValue<std::string>("device_code")).status, 200);
  auto [plan, plan_out] = runCommand(svcctl + " accounts plan " + account + " none");
  EXPECT_EQ(plan, 0) << plan_out;
  auto [missing, missing_out] =
      runCommand(svcctl + " accounts plan 00000000-0000-4000-8000-000000000000 none");
  EXPECT_NE(missing, 0) << missing_out;
}

// Reads svcctl login's output until it names the user code. @return the code ("" at the end).
std::string readUserCode(FILE* pipe, std::string& output) {
  char line[512];
  const std::regex code_re("approve the code ([B-Z]{4}-[B-Z]{4})");
  while (std::fgets(line, sizeof line, pipe)) {
    output += line;
    std::smatch m;
    std::string text = line;
    if (std::regex_search(text, m, code_re)) return m[1];
  }
  return "";
}

std::string readAll(FILE* pipe) {
  std::string out;
  char line[512];
  while (std::fgets(line, sizeof line, pipe)) out += line;
  return out;
}

// svcctl login from a terminal: it prints the code and URL, waits, and keeps the key in a file
// only its owner can read; keys list/create/revoke then use that file.
TEST_F(Auth, SvcctlLoginWaitsForApprovalAndKeepsTheKeyPrivate) {
  addUser("term@example.com");
  Poco::TemporaryFile dir;
  const std::string key_file = dir.path() + "/svc/key";
  const std::string svcctl = "'" + binDir() +
                             "/svcctl' --url http://127.0.0.1:" + std::to_string(svcd_->port()) +
                             " --key-file '" + key_file + "' ";
  FILE* pipe = ::popen((svcctl + "login --client-id 'ci terminal' 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  const std::string user_code = readUserCode(pipe, output);
  ASSERT_FALSE(user_code.empty()) << output;
  ASSERT_EQ(approve(user_code, "term@example.com").status, 200);
  output += readAll(pipe);
  EXPECT_EQ(::pclose(pipe), 0) << output;
  EXPECT_NE(output.find("/dashboard/device?user_code=" + user_code), std::string::npos) << output;
  EXPECT_NE(output.find("Signed in as term@example.com"), std::string::npos) << output;
  if (Poco::File("/usr/bin/qrencode").exists()) {  // tools/deps.sh installs it
    EXPECT_NE(output.find("\u2588"), std::string::npos) << "a QR code in block characters";
  }
  struct stat st {};
  ASSERT_EQ(::stat(key_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(key_file);
  std::string key;
  std::getline(in, key);
  auto who = svcd_->get("/api/health/whoami/", bearer(key));
  ASSERT_EQ(who.status, 200) << who.body;
  EXPECT_EQ(who.json()->getObject("key")->getValue<std::string>("label"),
            "device login: ci terminal");

  auto [created_rc, created] = runCommand(svcctl + "keys create --label from-cli");
  ASSERT_EQ(created_rc, 0) << created;
  const std::string new_key = created.substr(0, created.find('\n'));
  EXPECT_EQ(svcd_->get("/api/health/whoami/", bearer(new_key)).status, 200);
  auto [list_rc, listed] = runCommand(svcctl + "keys list");
  ASSERT_EQ(list_rc, 0);
  EXPECT_NE(listed.find("from-cli"), std::string::npos) << listed;
  EXPECT_EQ(listed.find(new_key), std::string::npos) << "a listing never shows a whole key";
  auto id = svcd_->get("/api/health/whoami/", bearer(new_key)).json()->getObject("key");
  auto [revoke_rc, revoked] = runCommand(svcctl + "keys revoke " + id->getValue<std::string>("id"));
  EXPECT_EQ(revoke_rc, 0) << revoked;
  EXPECT_EQ(svcd_->get("/api/health/whoami/", bearer(new_key)).status, 401);
}

TEST_F(Auth, SvcctlLoginSaysSoWhenTheCodeIsDenied) {
  Poco::TemporaryFile dir;
  const std::string svcctl = "'" + binDir() +
                             "/svcctl' --url http://127.0.0.1:" + std::to_string(svcd_->port()) +
                             " --key-file '" + dir.path() + "/key' ";
  FILE* pipe = ::popen((svcctl + "login 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  const std::string user_code = readUserCode(pipe, output);
  ASSERT_FALSE(user_code.empty()) << output;
  ASSERT_EQ(op("/admin/auth/device/deny/", "{\"user_code\":\"" + user_code + "\"}").status, 200);
  output += readAll(pipe);
  EXPECT_NE(::pclose(pipe), 0);
  EXPECT_NE(output.find("denied"), std::string::npos) << output;
  EXPECT_FALSE(Poco::File(dir.path() + "/key").exists());
}

TEST(AuthLimits, DeviceStartsAndFailedAuthenticationsAreThrottledPerAddress) {
  Svcd::Options o;
  o.plugins = {"auth"};
  o.args = {"--set", "auth.rate.device_per_minute=3", "--set",
            "auth.rate.failed_auth_per_minute=3"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(svcd.post("/api/auth/device/", "").status, 200);
  auto limited = svcd.post("/api/auth/device/", "");
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.code(), "throttled");
  int retry = std::stoi(limited.header("retry-after"));
  EXPECT_GE(retry, 1);
  EXPECT_LE(retry, 20);
  EXPECT_EQ(limited.json()->getValue<int>("retry_after_seconds"), retry);

  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(svcd.get("/api/health/whoami/", bearer("wrong-" + std::to_string(i))).status, 401);
  }
  auto blocked = svcd.get("/api/health/whoami/", bearer("wrong-again"));
  EXPECT_EQ(blocked.status, 429);
  EXPECT_FALSE(blocked.header("retry-after").empty());
  // Unauthenticated routes are unaffected.
  EXPECT_EQ(svcd.get("/api/health/").status, 200);
}

TEST(AuthKeys, AnAccountHoldsAtMostTheConfiguredNumberOfUnrevokedKeys) {
  Svcd::Options o;
  o.plugins = {"auth"};
  o.args = {"--set", "auth.keys.max_per_account=3"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  // The device login made the first key.
  const std::string mgmt =
      operatorLogin(svcd, "many@example.com")->getValue<std::string>("management_key");
  auto create = [&] { return svcd.post("/api/auth/keys/", "{\"label\":\"more\"}", bearer(mgmt)); };
  auto second = create();
  ASSERT_EQ(second.status, 201) << second.body;
  ASSERT_EQ(create().status, 201);

  auto refused = create();
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.code(), "invalid");
  EXPECT_FALSE(refused.json()->getObject("errors")->getArray("keys")->empty()) << refused.body;
  EXPECT_NE(refused.json()->getValue<std::string>("detail").find("revoke"), std::string::npos)
      << refused.body;
  EXPECT_EQ(svcd.get("/api/auth/keys/", bearer(mgmt)).json()->getValue<int>("count"), 3);

  // Revoked keys do not count.
  ASSERT_EQ(
      http(svcd.port(), "DELETE",
           "/api/auth/keys/" + second.json()->getValue<std::string>("id") + "/", "", bearer(mgmt))
          .status,
      204);
  EXPECT_EQ(create().status, 201);
}

// A key-shaped credential that fails its checksum: rejected without a lookup.
std::string badKey(const std::string& prefix_tail, int n) {
  std::string key = "svc_mgmt_" + prefix_tail + std::to_string(n);
  return key + std::string(58 - key.size(), 'x');
}

TEST(AuthLimits, AValidKeyStillWorksFromAnAddressThrottledForBadKeys) {
  Svcd::Options o;
  o.plugins = {"auth"};
  o.args = {"--set", "auth.rate.failed_auth_per_minute=3", "--set",
            "auth.rate.failed_auth_per_key_per_minute=100"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  auto working = operatorLogin(svcd, "working@example.com");
  const std::string key = working->getValue<std::string>("management_key");
  ASSERT_EQ(svcd.get("/api/health/whoami/", bearer(key)).status, 200);
  const std::string unseen =
      operatorLogin(svcd, "unseen@example.com")->getValue<std::string>("management_key");

  // A broken neighbour at the same address tries one bad key after another.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(svcd.get("/api/health/whoami/", bearer(badKey("Br", i))).status, 401);
  }
  EXPECT_EQ(svcd.get("/api/health/whoami/", bearer(badKey("Br", 3))).status, 429);

  // Credentials that prove themselves without a lookup still work: a key this server has
  // verified, and a signed access token.
  EXPECT_EQ(svcd.get("/api/health/whoami/", bearer(key)).status, 200);
  EXPECT_EQ(
      svcd.get("/api/health/whoami/", bearer(working->getValue<std::string>("access"))).status,
      200);
  // A key it has not seen yet would need a lookup, which is what guessing costs: it waits.
  EXPECT_EQ(svcd.get("/api/health/whoami/", bearer(unseen)).status, 429);
}

TEST(AuthLimits, OneAgentRepeatingABadKeyDoesNotLockOutItsAddress) {
  Svcd::Options o;
  o.plugins = {"auth"};
  o.args = {"--set", "auth.rate.failed_auth_per_minute=5", "--set",
            "auth.rate.failed_auth_per_key_per_minute=3"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start());
  const std::string neighbour =
      operatorLogin(svcd, "neighbour@example.com")->getValue<std::string>("management_key");

  const std::string stale = badKey("St", 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(svcd.get("/api/health/whoami/", bearer(stale)).status, 401);
  }
  for (int i = 0; i < 10; ++i) {
    auto r = svcd.get("/api/health/whoami/", bearer(stale));
    ASSERT_EQ(r.status, 429);
    EXPECT_NE(r.json()->getValue<std::string>("detail").find("svc_mgmt_St0"), std::string::npos)
        << r.body;
  }
  // The address has had 3 of its 5 failures: the neighbour's first request is looked up.
  EXPECT_EQ(svcd.get("/api/health/whoami/", bearer(neighbour)).status, 200);
}

// Two svcd processes with the auth plugin on one database.
class AuthProcesses : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth"};
    a_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(a_->start());
    o.db_url = a_->dbUrl();
    b_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(b_->start());
  }
  std::unique_ptr<Svcd> a_, b_;
};

TEST_F(AuthProcesses, ARevocationReachesAnotherProcessWithinASecond) {
  Svcd& a = *a_;
  Svcd& b = *b_;
  http(a.adminPort(), "POST", "/admin/auth/users/",
       "{\"email\":\"ha@example.com\",\"password\":\"correct horse\"}", bearer(a.adminToken()));
  auto d = a.post("/api/auth/device/", "").json();
  http(a.adminPort(), "POST", "/admin/auth/device/approve/",
       "{\"user_code\":\"" + d->getValue<std::string>("user_code") +
           "\",\"user\":\"ha@example.com\"}",
       bearer(a.adminToken()));
  auto t = a.post("/api/auth/device/token/",
                  "{\"device_code\":\"" + d->getValue<std::string>("device_code") + "\"}")
               .json();
  std::string mgmt = t->getValue<std::string>("management_key");
  auto created = a.post("/api/auth/keys/", "{\"label\":\"shared\"}", bearer(mgmt)).json();
  std::string key = created->getValue<std::string>("key");
  ASSERT_EQ(b.get("/api/health/whoami/", bearer(key)).status, 200);  // now cached in b
  ASSERT_EQ(http(a.port(), "DELETE", "/api/auth/keys/" + created->getValue<std::string>("id") + "/",
                 "", bearer(mgmt))
                .status,
            204);
  auto revoked_at = std::chrono::steady_clock::now();
  int status = 200;
  while (status == 200 &&
         std::chrono::steady_clock::now() - revoked_at < std::chrono::seconds(30)) {
    status = b.get("/api/health/whoami/", bearer(key)).status;
    if (status == 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 401);
  // b's cache keeps a key for good: only the revocation's news (polled every 500 ms) ends it.
  EXPECT_LT(std::chrono::steady_clock::now() - revoked_at, std::chrono::seconds(10));
}

// An agent waiting at one svcd process is answered when the person approves through another.
TEST_F(AuthProcesses, AnApprovalInAnotherProcessAnswersAWaitingPollWithinASecond) {
  Svcd& a = *a_;
  Svcd& b = *b_;
  // The signing key is made on first use (an RSA key: slow under the sanitizers); make it now so
  // the timing below is the wake-up, not that one-time cost.
  ASSERT_EQ(a.get("/api/auth/jwks/").status, 200);
  http(b.adminPort(), "POST", "/admin/auth/users/",
       "{\"email\":\"hb@example.com\",\"password\":\"correct horse\"}", bearer(b.adminToken()));
  auto d = a.post("/api/auth/device/", "").json();
  auto waiting = std::async(std::launch::async, [&] {
    return a.post(
        "/api/auth/device/token/",
        "{\"device_code\":\"" + d->getValue<std::string>("device_code") + "\",\"wait\":true}");
  });
  ASSERT_TRUE(waitForSample(a, "svc_held_responses_open", 1));  // the poll waits at a
  auto approved_at = std::chrono::steady_clock::now();
  ASSERT_EQ(http(b.adminPort(), "POST", "/admin/auth/device/approve/",
                 "{\"user_code\":\"" + d->getValue<std::string>("user_code") +
                     "\",\"user\":\"hb@example.com\"}",
                 bearer(b.adminToken()))
                .status,
            200);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  auto r = waiting.get();
  EXPECT_EQ(r.status, 200) << r.body;
  // Left to itself the wait would end at the code's expiry (two minutes at most).
  EXPECT_LT(std::chrono::steady_clock::now() - approved_at, std::chrono::seconds(10));
}

}  // namespace
}  // namespace svc::testing
