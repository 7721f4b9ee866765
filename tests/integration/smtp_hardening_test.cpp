// The SMTP listener facing the internet: many pipelined sessions at once each get every answer in
// order, and a flood of idle connections neither hangs new clients nor stops mail.
#include "email_fixture.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace svc::testing {
namespace {

// Many sessions at once from sixteen addresses, each pipelining five messages (with an unknown
// recipient, NOOP and RSET around each) and QUIT in one write: every reply comes, in order, and
// QUIT's 221 last, whichever thread stored each message and whenever it did.
TEST_F(Email, PipelinedSessionsEndingInQuitGetEveryAnswer) {
  identity("Pipe", "pipe");
  std::string session = "EHLO c.example\r\n";
  std::string expected = "250 ";
  for (int m = 0; m < 5; ++m) {
    session +=
        "MAIL FROM:<a@example.com>\r\nRCPT TO:<pipe@agents.test>\r\n"
        "RCPT TO:<nobody@agents.test>\r\nDATA\r\nSubject: p\r\n\r\nbody\r\n.\r\n"
        "NOOP\r\nRSET\r\n";
    expected += "250 250 550 354 250 250 250 ";
  }
  session += "QUIT\r\n";
  expected += "221 ";
  std::atomic<int> complete{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 16; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        int fd = connectFrom("127.0.0." + std::to_string(2 + t), smtp_port_);
        ::send(fd, session.data(), session.size(), MSG_NOSIGNAL);
        std::string answer = readAvailable(fd, 5000);
        ::close(fd);
        std::string codes;  // the final line of each reply, by its code
        std::istringstream lines(answer);
        for (std::string line; std::getline(lines, line);) {
          if (line.size() >= 4 && line[3] == ' ' && line.substr(0, 3) != "220") {
            codes += line.substr(0, 3) + " ";
          }
        }
        if (codes == expected) {
          ++complete;
        } else {
          ADD_FAILURE() << codes;
        }
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(complete.load(), 16 * 30);
}

// The first line a new SMTP connection reads (a greeting or a refusal).
std::string firstLine(int fd) {
  timeval wait{30, 0};  // a deadline for a slow machine: the greeting comes at once
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char buf[256];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);  // one segment
  return std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

// 1,000 sessions that never speak cost no thread: each is greeted, and with all of them open a
// real sender still delivers at once (within seconds even under the sanitizers; a server with a
// thread per session would have none left).
TEST_F(Email, AThousandIdleSessionsDoNotStopMail) {
  if (!raiseFileLimit(3000)) GTEST_SKIP() << "open-files limit too low";
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.smtp.max_connections_per_address=0", "--set",
             "email.smtp.max_connections=2000"});
  identity("Flood", "flood");
  std::vector<int> idle;
  int greeted = 0;
  for (int i = 0; i < 1000; ++i) {
    int fd = connectFrom("127.0.0." + std::to_string(2 + i % 8), smtp_port_);
    ASSERT_GE(fd, 0) << "connection " << i;
    idle.push_back(fd);
    if (firstLine(fd).rfind("220 ", 0) == 0) ++greeted;
  }
  EXPECT_EQ(greeted, 1000);
  auto start = std::chrono::steady_clock::now();
  auto a = smtp(envelope("x@example.com", "flood@agents.test", "Subject: through\r\n\r\nhi"));
  EXPECT_NE(a.find("250 2.0.0 Ok: stored"), std::string::npos) << a;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_EQ(messagesOnce("", 1)->size(), 1u);
  for (int fd : idle) ::close(fd);
}

// Beyond the sessions one address may hold, and beyond the listener's total, a client is told
// 421 at once instead of hanging without a greeting.
TEST_F(Email, SessionsBeyondTheLimitsAreRefused421AtOnce) {
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.smtp.max_connections=30"});
  std::vector<int> open;
  int greeted = 0, refused = 0;
  for (int i = 0; i < 25; ++i) {  // one address: 20 (the default limit), then 421
    open.push_back(connectFrom("127.0.0.9", smtp_port_));
    std::string first = firstLine(open.back());
    greeted += first.rfind("220 ", 0) == 0;
    refused +=
        first.rfind("421 4.7.0", 0) == 0 && first.find("from your address") != std::string::npos;
  }
  EXPECT_EQ(greeted, 20);
  EXPECT_EQ(refused, 5);
  for (int i = 0; i < 15; ++i) {  // other addresses: 10 more fill the listener's 30
    open.push_back(connectFrom("127.0.0." + std::to_string(10 + i), smtp_port_));
    std::string first = firstLine(open.back());
    greeted += first.rfind("220 ", 0) == 0;
    refused += first.rfind("421 4.7.0", 0) == 0;
  }
  EXPECT_EQ(greeted, 30);
  EXPECT_EQ(refused, 10);
  for (int fd : open) ::close(fd);
}

}  // namespace
}  // namespace svc::testing
