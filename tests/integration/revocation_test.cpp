// Revocation cuts what is already open: a revoked key, an ended sign-in (logout, a reused refresh
// token) and a browser session signed out end their event streams, held waits and MCP tool calls
// on every svcd sharing the database, not only their next requests. Two svcd share one database
// here: the revocation is made on the first, the requests are held on the second.
#include "harness.h"

#include <svc/sdk/accounts.h>

#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <regex>
#include <string>
#include <thread>

namespace svc::testing {
namespace {

using Clock = std::chrono::steady_clock;

class Revocation : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "email", "dashboard"};
    // One public address for both, as behind a load balancer: tokens name it as their issuer.
    o.args = {"--set", "email.domains=agents.test", "--set", "public.base_url=http://svc.test"};
    first_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(first_->start()) << first_->log();
    o.db_url = first_->dbUrl();
    second_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(second_->start()) << second_->log();
    login_ = operatorLogin(*first_, "owner@example.com");
    key_ = login_->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
  }

  HttpReply call(Svcd& at, const std::string& method, const std::string& path,
                 const std::string& body = "", const std::string& key = "") {
    return http(at.port(), method, path, body, bearer(key.empty() ? key_ : key));
  }

  /// A new key. @param path the keys route. @param body its body. @return {id, key}.
  std::pair<std::string, std::string> newKey(const std::string& path, const std::string& body) {
    auto r = call(*first_, "POST", path, body);
    EXPECT_EQ(r.status, 201) << r.body;
    if (r.status != 201) return {};
    return {r.json()->getValue<std::string>("id"), r.json()->getValue<std::string>("key")};
  }

  /// Opens GET /api/events/stream/ on `at` with the given header, and reads until it has begun.
  /// @return the connection, or -1.
  static int openStream(Svcd& at, const std::string& header) {
    int fd = connectFrom("127.0.0.1", at.port());
    if (fd < 0) return -1;
    const std::string request =
        "GET /api/events/stream/ HTTP/1.1\r\nHost: x\r\n" + header + "\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      ::close(fd);
      return -1;
    }
    const std::string began = readUntilFd(fd, "retry:", 15000);
    if (began.find("retry:") == std::string::npos) {
      ADD_FAILURE() << "the stream did not begin: " << began;
      ::close(fd);
      return -1;
    }
    return fd;
  }

  /// @return how long the peer took to close fd (reading and dropping what comes), or nullopt
  /// when it was still open after timeout_ms.
  static std::optional<std::chrono::milliseconds> closesWithin(int fd, int timeout_ms) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::milliseconds(timeout_ms);
    char buf[4096];
    while (Clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      }
    }
    return std::nullopt;
  }

  /// A held wait for mail, as `key` (an identity key) asks on the second svcd.
  std::future<HttpReply> heldWait(const std::string& key) {
    const int port = second_->port();
    return std::async(std::launch::async, [port, key] {
      return http(port, "GET", "/api/email-messages/wait/?timeout=60", "", bearer(key));
    });
  }

  /// The same wait as an MCP tool call.
  std::future<HttpReply> heldToolCall(const std::string& key) {
    const int port = second_->port();
    return std::async(std::launch::async, [port, key] {
      return http(port, "POST", "/mcp/",
                  R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":)"
                  R"("get_email_messages_wait","arguments":{"timeout":60}}})",
                  bearer(key));
    });
  }

  /// Waits for a held answer. @return it, or a reply with status 0 when none came within 10 s
  /// (the wait itself would have held for 60).
  static HttpReply answered(std::future<HttpReply>& reply) {
    if (reply.wait_for(std::chrono::seconds(10)) != std::future_status::ready) return {};
    return reply.get();
  }

  std::unique_ptr<Svcd> first_, second_;
  Poco::JSON::Object::Ptr login_;
  std::string key_;
};

TEST_F(Revocation, ARevokedKeyEndsItsStreamWaitAndToolCallOnEverySvcd) {
  auto made = call(*first_, "POST", "/api/identities/", R"({"name":"Agent"})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string identity = made.json()->getValue<std::string>("uuid");
  auto [leaked_id, leaked] = newKey("/api/auth/keys/", R"({"label":"leaked"})");
  auto [agent_id, agent] =
      newKey("/api/auth/keys/identity/", R"({"identity":")" + identity + R"(","label":"agent"})");
  ASSERT_FALSE(leaked.empty());
  ASSERT_FALSE(agent.empty());

  const int leaked_stream = openStream(*second_, "Authorization: Bearer " + leaked);
  const int kept_stream = openStream(*second_, "Authorization: Bearer " + key_);
  ASSERT_GE(leaked_stream, 0);
  ASSERT_GE(kept_stream, 0);
  auto wait = heldWait(agent);
  auto tool = heldToolCall(agent);
  ASSERT_TRUE(waitForSample(*second_, "svc_held_responses_open", 4));

  ASSERT_EQ(call(*first_, "DELETE", "/api/auth/keys/" + leaked_id + "/").status, 204);
  ASSERT_EQ(call(*first_, "DELETE", "/api/auth/keys/" + agent_id + "/").status, 204);

  const auto closed = closesWithin(leaked_stream, 10000);
  EXPECT_TRUE(closed) << "the revoked key's stream stayed open";
  if (closed) std::cout << "stream ended " << closed->count() << " ms after the revocation\n";
  const HttpReply waited = answered(wait);
  EXPECT_EQ(waited.status, 401) << waited.body;
  EXPECT_EQ(waited.code(), "authentication_failed");
  // The tool call is answered as MCP answers a tool's error, or refused as a request: either way
  // it ends now and says the credential is gone.
  const HttpReply called = answered(tool);
  ASSERT_NE(called.status, 0) << "the tool call was still held";
  EXPECT_TRUE(called.status == 401 || called.body.find("isError\":true") != std::string::npos)
      << called.status << " " << called.body;
  EXPECT_NE(called.body.find("revoked"), std::string::npos) << called.body;
  // Another key's stream of the same account goes on.
  EXPECT_FALSE(closesWithin(kept_stream, 1500)) << "a stream of a key not revoked was ended";
  ::close(leaked_stream);
  ::close(kept_stream);
  // And the keys are refused on both svcd from now on.
  EXPECT_EQ(call(*second_, "GET", "/api/email-messages/?limit=1", "", agent).status, 401);
  EXPECT_EQ(call(*first_, "GET", "/api/health/whoami/", "", leaked).status, 401);
}

TEST_F(Revocation, LogoutEndsWhatTheSignInsAccessTokensHoldOpen) {
  const std::string access = login_->getValue<std::string>("access");
  const std::string refresh = login_->getValue<std::string>("refresh");
  const int stream = openStream(*second_, "Authorization: Bearer " + access);
  ASSERT_GE(stream, 0);
  ASSERT_EQ(call(*first_, "GET", "/api/health/whoami/", "", access).status, 200);

  auto out = http(first_->port(), "POST", "/api/auth/logout/",
                  R"({"refresh":")" + refresh + R"("})", bearer(""));
  ASSERT_EQ(out.status, 204) << out.body;
  EXPECT_TRUE(closesWithin(stream, 10000)) << "the signed-out token's stream stayed open";
  ::close(stream);
  // Its access token is refused at once where the logout was, and soon on the other svcd.
  EXPECT_EQ(call(*first_, "GET", "/api/health/whoami/", "", access).status, 401);
  int status = 0;
  for (int i = 0; i < 100 && status != 401; ++i) {
    status = call(*second_, "GET", "/api/health/whoami/", "", access).status;
    if (status != 401) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 401);
  // The management key made by the same device login is a credential of its own: it goes on.
  EXPECT_EQ(call(*second_, "GET", "/api/health/whoami/").status, 200);
}

TEST_F(Revocation, AReusedRefreshTokenEndsTheWholeFamilysStreams) {
  const std::string first_refresh = login_->getValue<std::string>("refresh");
  auto rotated = http(first_->port(), "POST", "/api/auth/token/refresh/",
                      R"({"refresh":")" + first_refresh + R"("})", bearer(""));
  ASSERT_EQ(rotated.status, 200) << rotated.body;
  const std::string access = rotated.json()->getValue<std::string>("access");
  const int stream = openStream(*second_, "Authorization: Bearer " + access);
  ASSERT_GE(stream, 0);
  // Someone replays the retired refresh token: the family is revoked, with what it holds open.
  auto replayed = http(first_->port(), "POST", "/api/auth/token/refresh/",
                       R"({"refresh":")" + first_refresh + R"("})", bearer(""));
  ASSERT_EQ(replayed.status, 401) << replayed.body;
  EXPECT_TRUE(closesWithin(stream, 10000)) << "the family's stream stayed open";
  ::close(stream);
  EXPECT_EQ(call(*first_, "GET", "/api/health/whoami/", "", access).status, 401);
}

TEST_F(Revocation, SigningOutOfTheDashboardEndsTheBrowsersEventStream) {
  // Sign in as a browser does: the CSRF cookie and the form's field agree.
  const std::string csrf(43, 'c');  // the length of a token the dashboard makes
  auto signed_in = http(
      first_->port(), "POST", "/dashboard/login",
      "csrf=" + csrf + "&next=%2Fdashboard%2F&email=owner%40example.com&password=correct+horse",
      {{"Content-Type", "application/x-www-form-urlencoded"}, {"Cookie", "svc_csrf=" + csrf}});
  ASSERT_EQ(signed_in.status, 303) << signed_in.body;
  std::smatch m;
  const std::string set_cookie = signed_in.header("set-cookie");
  ASSERT_TRUE(std::regex_search(set_cookie, m, std::regex("svc_session=([^;]+)"))) << set_cookie;
  const std::string session = m[1];
  const std::string cookie = "Cookie: " + std::string(sdk::kSessionCookie) + "=" + session;
  const int stream = openStream(*second_, cookie);
  ASSERT_GE(stream, 0);

  auto out = http(first_->port(), "POST", "/dashboard/logout", "csrf=" + sdk::sessionCsrf(session),
                  {{"Content-Type", "application/x-www-form-urlencoded"},
                   {"Cookie", std::string(sdk::kSessionCookie) + "=" + session}});
  ASSERT_EQ(out.status, 303) << out.body;
  EXPECT_TRUE(closesWithin(stream, 10000)) << "the signed-out session's stream stayed open";
  ::close(stream);
}

}  // namespace
}  // namespace svc::testing
