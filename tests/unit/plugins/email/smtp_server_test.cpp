// The SMTP listener with a delivery that answers later, from its own thread (as the spool's
// writer does under a burst): the answer to DATA reaches the client before any reply to what the
// client pipelined after the message, a failure is a 451, and a client that leaves while its
// answer is pending leaves nothing behind.
#include "smtp_server.h"
#include "email_config.h"

#include "listeners.h"

#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/StreamSocket.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace svc::plugins::email {
namespace {

// Stores nothing; answers each message 200 ms after it arrives, on a thread of its own.
class LateDelivery : public SmtpDelivery {
 public:
  explicit LateDelivery(std::string error) : error_(std::move(error)) {}
  ~LateDelivery() override {
    for (auto& t : answering_) t.join();
  }
  bool acceptsRecipient(const std::string& address) override {
    return address == "inbox@here.test";
  }
  void deliver(const SmtpClient&, const std::string&, const std::vector<std::string>&,
               const std::string&) override {
    ADD_FAILURE() << "a plain session is answered asynchronously";
  }
  void deliverAsync(const SmtpClient&, const std::string&, const std::vector<std::string>&,
                    std::string data, Stored stored) override {
    std::lock_guard lock(mutex_);
    messages_.push_back(std::move(data));
    answering_.emplace_back([this, stored = std::move(stored)] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      stored(error_);
      std::lock_guard lock(mutex_);
      ++answered_;
      cv_.notify_all();
    });
  }
  bool waitAnswered(int n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return answered_ >= n; });
  }
  std::vector<std::string> messages() {
    std::lock_guard lock(mutex_);
    return messages_;
  }

 private:
  std::string error_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> messages_;
  int answered_ = 0;
  std::vector<std::thread> answering_;
};

const char* kEnvelope = "MAIL FROM:<a@there.test>\r\nRCPT TO:<inbox@here.test>\r\nDATA\r\n";

class Client {
 public:
  explicit Client(unsigned short port) : socket_(Poco::Net::SocketAddress("127.0.0.1", port)) {
    socket_.setReceiveTimeout(Poco::Timespan(30, 0));
  }
  void send(const std::string& text) {
    socket_.sendBytes(text.data(), static_cast<int>(text.size()));
  }
  // The next reply line (continuation lines included), without its CRLF; "" once closed.
  std::string line() {
    for (;;) {
      std::size_t eol = buffer_.find("\r\n");
      if (eol != std::string::npos) {
        std::string l = buffer_.substr(0, eol);
        buffer_.erase(0, eol + 2);
        return l;
      }
      char chunk[1024];
      int n = socket_.receiveBytes(chunk, sizeof chunk);
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  // Reads up to and including the next final reply line (code then space).
  std::string reply() {
    for (;;) {
      std::string l = line();
      if (l.size() < 4 || l[3] == ' ') return l;
    }
  }
  // The greeting, EHLO, and an envelope up to DATA's 354.
  void readyForData() {
    reply();
    send(std::string("EHLO client.test\r\n") + kEnvelope);
    for (int i = 0; i < 4; ++i) reply();
  }
  void close() { socket_.close(); }

 private:
  Poco::Net::StreamSocket socket_;
  std::string buffer_;
};

struct Listener {
  explicit Listener(SmtpDelivery& delivery)
      : loop(Poco::Logger::get("test.listeners")),
        server(
            [] {
              SmtpConfig c = EmailConfig::defaults().smtp;
              c.listen = "127.0.0.1:0";
              c.hostname = "here.test";
              c.timeout_seconds = 5;
              return c;
            }(),
            delivery, Poco::Logger::get("test.smtp")) {
    server.start(loop);
  }
  ~Listener() { server.stop(); }
  kernel::ListenerLoop loop;
  SmtpServer server;
};

TEST(SmtpServer, TheAnswerToDataComesBeforeTheRepliesToWhatWasPipelinedAfterIt) {
  LateDelivery delivery("");
  Listener listener(delivery);
  Client c(listener.server.port());
  EXPECT_EQ(c.reply().substr(0, 4), "220 ");
  c.send(std::string("EHLO client.test\r\n") + kEnvelope);
  EXPECT_EQ(c.reply().substr(0, 4), "250 ");
  EXPECT_EQ(c.reply().substr(0, 4), "250 ");
  EXPECT_EQ(c.reply().substr(0, 4), "250 ");
  EXPECT_EQ(c.reply().substr(0, 4), "354 ");
  // The message, then the next transaction, in one write: the 250 for the message is sent
  // 200 ms later by another thread, and the replies to MAIL, RCPT and DATA wait for it.
  c.send(std::string("Subject: one\r\n\r\nfirst\r\n.\r\n") + kEnvelope);
  EXPECT_EQ(c.reply(), "250 2.0.0 Ok: stored");
  EXPECT_EQ(c.reply(), "250 2.1.0 Ok");
  EXPECT_EQ(c.reply(), "250 2.1.5 Ok");
  EXPECT_EQ(c.reply().substr(0, 4), "354 ");
  // The message, then QUIT: the answer, then the goodbye, then the end.
  c.send("Subject: two\r\n\r\nsecond\r\n.\r\nQUIT\r\n");
  EXPECT_EQ(c.reply(), "250 2.0.0 Ok: stored");
  EXPECT_EQ(c.reply().substr(0, 4), "221 ");
  EXPECT_EQ(c.line(), "");
  ASSERT_EQ(delivery.messages().size(), 2u);
  EXPECT_EQ(delivery.messages()[1], "Subject: two\r\n\r\nsecond\r\n");
}

TEST(SmtpServer, AMessageThatCouldNotBeStoredIsAnswered451AndTheSessionGoesOn) {
  LateDelivery delivery("disk full");
  Listener listener(delivery);
  Client c(listener.server.port());
  c.readyForData();
  c.send("Subject: lost\r\n\r\nbody\r\n.\r\n");
  EXPECT_EQ(c.reply().substr(0, 10), "451 4.3.0 ");
  c.send("NOOP\r\n");
  EXPECT_EQ(c.reply(), "250 2.0.0 Ok");
}

TEST(SmtpServer, AClientThatLeavesBeforeItsAnswerLeavesTheListenerWorking) {
  LateDelivery delivery("");
  Listener listener(delivery);
  {
    Client c(listener.server.port());
    c.readyForData();
    c.send("Subject: left\r\n\r\nbody\r\n.\r\n");
    c.close();  // before the answer: the session ends, and waits for it first
  }
  ASSERT_TRUE(delivery.waitAnswered(1));
  Client d(listener.server.port());
  EXPECT_EQ(d.reply().substr(0, 4), "220 ");
  d.send("NOOP\r\n");
  EXPECT_EQ(d.reply(), "250 2.0.0 Ok");
}

}  // namespace
}  // namespace svc::plugins::email
