// GET /api/email-messages/wait/: one call from "the code was sent" to the code, over real HTTP
// with the message delivered over a real SMTP session.
#include "email_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <map>
#include <thread>

namespace svc::testing {
namespace {

using Clock = std::chrono::steady_clock;

class EmailWait : public Email {
 protected:
  std::string codeMail(const std::string& from, const std::string& to, const std::string& subject,
                       const std::string& body) {
    return smtp(envelope(from, to,
                         "From: " + from + "\r\nTo: " + to + "\r\nSubject: " + subject +
                             "\r\n\r\n" + body + "\r\n"));
  }
  HttpReply wait(const Ident& who, const std::string& query) {
    return call("GET", "/api/email-messages/wait/?identity=" + who.uuid + "&" + query);
  }
};

TEST_F(EmailWait, AWaitHeldBeforeTheMessageArrivesAnswersWithItsCode) {
  Ident sales = identity("Sales", "sales");
  const auto start = Clock::now();
  auto waiting = std::async(std::launch::async, [&] { return wait(sales, "timeout=20"); });
  // Held before the message comes (else it would find it already there).
  ASSERT_TRUE(waitForSample(*svcd_, "svc_held_responses_open", 1));
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  ASSERT_NE(codeMail("no-reply@acme.example", "sales@agents.test", "Your Acme code",
                     "Your verification code is 482 913.")
                .find("250 2.0.0"),
            std::string::npos);
  const HttpReply r = waiting.get();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()->getValue<std::string>("extracted_code"), "482913");
  EXPECT_EQ(r.json()->getValue<std::string>("subject"), "Your Acme code");
}

TEST_F(EmailWait, AMessageAlreadyThereAnswersAtOnceAndFiltersChooseAmongThem) {
  Ident sales = identity("Sales", "sales");
  const std::string before = "2000-01-01T00:00:00Z";
  ASSERT_NE(codeMail("news@shop.example", "sales@agents.test", "Weekly news", "Sale 123456")
                .find("250 2.0.0"),
            std::string::npos);
  ASSERT_NE(codeMail("no-reply@bank.example", "sales@agents.test", "Sign-in code",
                     "Use 730521 to sign in.")
                .find("250 2.0.0"),
            std::string::npos);
  auto first = wait(sales, "created_after=" + before + "&timeout=5");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.json()->getValue<std::string>("subject"), "Weekly news");  // the oldest
  auto bank = wait(sales, "created_after=" + before + "&from=BANK.example&timeout=5");
  ASSERT_EQ(bank.status, 200) << bank.body;
  EXPECT_EQ(bank.json()->getValue<std::string>("extracted_code"), "730521");
  EXPECT_EQ(wait(sales, "created_after=" + before + "&subject=sign-in&timeout=5")
                .json()
                ->getValue<std::string>("subject"),
            "Sign-in code");
  EXPECT_EQ(wait(sales, "created_after=" + before + "&body=use%20730521&timeout=5")
                .json()
                ->getValue<std::string>("subject"),
            "Sign-in code");
  // `from` is an address or a domain, never a fragment of one.
  EXPECT_EQ(wait(sales, "created_after=" + before + "&from=No-Reply@bank.example&timeout=1")
                .json()
                ->getValue<std::string>("subject"),
            "Sign-in code");
  EXPECT_EQ(wait(sales, "created_after=" + before + "&from=%40shop.example&timeout=1")
                .json()
                ->getValue<std::string>("subject"),
            "Weekly news");
  EXPECT_EQ(wait(sales, "created_after=" + before + "&from=ank.example&timeout=1").status, 204);
  EXPECT_EQ(wait(sales, "created_after=" + before + "&from=reply@bank.example&timeout=1").status,
            204);
  // Nothing newer than the newest, and nothing from elsewhere: 204 when the time is up.
  const auto start = Clock::now();
  auto none = wait(sales, "created_after=" + before + "&from=nobody.example&timeout=1");
  EXPECT_EQ(none.status, 204) << none.body;
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(900));
  EXPECT_EQ(wait(sales, "timeout=1").status, 204);  // default: only what arrives from now on
}

TEST_F(EmailWait, AnotherIdentitysOrAccountsMessageNeverAnswersAndBadParametersAreNamed) {
  Ident sales = identity("Sales", "sales");
  Ident other = identity("Other", "other");
  auto waiting = std::async(std::launch::async, [&] { return wait(sales, "timeout=5"); });
  ASSERT_TRUE(waitForSample(*svcd_, "svc_held_responses_open", 1));  // held before the message
  ASSERT_NE(codeMail("a@b.example", "other@agents.test", "Code", "123456").find("250 2.0.0"),
            std::string::npos);
  EXPECT_EQ(waiting.get().status, 204);
  // Another account cannot wait on this identity at all.
  const std::string stranger = signIn("stranger@example.com");
  EXPECT_EQ(
      call("GET", "/api/email-messages/wait/?identity=" + sales.uuid + "&timeout=1", "", stranger)
          .status,
      404);
  auto bad = wait(sales, "timeout=121&since=x");
  ASSERT_EQ(bad.status, 400) << bad.body;
  auto errors = bad.json()->getObject("errors");
  EXPECT_TRUE(errors->has("timeout")) << bad.body;
  EXPECT_TRUE(errors->has("since")) << bad.body;
  EXPECT_EQ(call("GET", "/api/email-messages/wait/?timeout=1").code(), "identity_required");
}

// A waiter is a socket in the hub, not a worker: 1,000 of them, with 64 worker threads, leave
// the server answering, and one message answers every waiter on its identity.
TEST_F(EmailWait, AThousandWaitersHoldNoWorkerThread) {
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_max < 4096) GTEST_SKIP() << "needs 4096 open files, may have " << files.rlim_max;
  files.rlim_cur = files.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "server.max_connections_per_address=0", "--set", "server.threads=64"});
  Ident sales = identity("Sales", "sales");
  // The longest wait there is: under the sanitizers, taking 1,000 requests in can last a minute,
  // and a waiter whose timeout passed before the last was held would be answered 204.
  const std::string request = "GET /api/email-messages/wait/?timeout=120&identity=" + sales.uuid +
                              " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key_ +
                              "\r\nConnection: close\r\n\r\n";
  std::vector<int> sockets;
  for (int i = 0; i < 1000; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(svcd_->port()));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0) << i;
    ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    sockets.push_back(fd);
  }
  // Every wait is held before the message comes (else a late one would count it as already
  // there): the hub's gauge says so.
  const auto held = [&] { return sample(metricsOf(*svcd_), "svc_held_responses_open"); };
  for (const auto until = Clock::now() + std::chrono::seconds(100);
       held() < 1000 && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(held(), 1000);
  // Every worker would be taken many times over if a waiter held one.
  const auto start = Clock::now();
  EXPECT_EQ(svcd_->get("/api/health/").status, 200);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  ASSERT_NE(codeMail("no-reply@acme.example", "sales@agents.test", "Code", "Code: 555123")
                .find("250 2.0.0"),
            std::string::npos);
  // Every answer is read as it comes (under the sanitizers the last comes many seconds after
  // the first, in no particular order of the sockets).
  std::map<int, std::string> got;  // by socket
  std::vector<pollfd> open;
  for (const int fd : sockets) open.push_back({fd, POLLIN, 0});
  for (const auto until = Clock::now() + std::chrono::seconds(120);
       !open.empty() && Clock::now() < until;) {
    if (::poll(open.data(), open.size(), 1000) <= 0) continue;
    std::vector<pollfd> still;
    for (const pollfd& p : open) {
      char buf[4096];
      const ssize_t n = p.revents ? ::recv(p.fd, buf, sizeof buf, 0) : 0;
      if (n > 0) got[p.fd].append(buf, static_cast<std::size_t>(n));
      if (p.revents && n <= 0) {
        ::close(p.fd);  // answered whole (or failed)
      } else {
        still.push_back({p.fd, POLLIN, 0});
      }
    }
    open.swap(still);
  }
  for (const pollfd& p : open) ::close(p.fd);
  int answered = 0;
  for (const auto& [fd, answer] : got) {
    answered += answer.rfind("HTTP/1.1 200", 0) == 0 && answer.find("555123") != std::string::npos;
  }
  EXPECT_EQ(answered, 1000);
}

}  // namespace
}  // namespace svc::testing
