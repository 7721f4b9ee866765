// The kernel's protocol listeners with a small line protocol: each line is echoed, "quit" is
// answered and closes, "later" is answered from another thread, "wake" through woken(), "hold"
// pauses reading until another thread resumes it.
#include "listeners.h"

#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/StreamSocket.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace svc::kernel {
namespace {

using namespace std::chrono_literals;

class Lines;

class LineHandler : public sdk::ConnectionHandler {
 public:
  LineHandler(Lines& protocol, const std::shared_ptr<sdk::Connection>& c)
      : protocol_(protocol), self_(c) {}
  void received(sdk::Connection& c, std::string_view bytes) override;
  void woken(sdk::Connection& c) override { c.send("woken\r\n"); }
  bool timedOut(sdk::Connection& c) override;
  void closed() override;

 private:
  Lines& protocol_;
  std::weak_ptr<sdk::Connection> self_;
  std::string in_;
};

class Lines : public sdk::ConnectionProtocol {
 public:
  ~Lines() override { join(); }
  std::unique_ptr<sdk::ConnectionHandler> open(const std::shared_ptr<sdk::Connection>& c) override {
    c->send("hello " + c->peer() + "\r\n");
    return std::make_unique<LineHandler>(*this, c);
  }
  std::string refused(Refusal why, const std::string&) override {
    return why == Refusal::kTooManyConnections ? "busy\r\n" : "busy for you\r\n";
  }
  // Runs f on a thread of its own, as a plugin's slow work would.
  void later(std::function<void()> f) {
    std::lock_guard lock(mutex_);
    threads_.emplace_back(std::move(f));
  }
  void join() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }
  std::atomic<int> closed{0};
  std::atomic<bool> keep_on_timeout{false};
  std::atomic<int> timeouts{0};     // timedOut() calls
  std::atomic<bool> paused{false};  // "stall" or "hold" paused reading (not resumed yet)

 private:
  std::mutex mutex_;
  std::vector<std::thread> threads_;
};

void LineHandler::received(sdk::Connection& c, std::string_view bytes) {
  in_ += bytes;
  for (std::size_t eol; (eol = in_.find("\r\n")) != std::string::npos; in_.erase(0, eol + 2)) {
    const std::string line = in_.substr(0, eol);
    if (line == "quit") {
      c.send("bye\r\n");
      c.close();
    } else if (line == "later") {
      protocol_.later([weak = self_] {
        std::this_thread::sleep_for(100ms);
        if (auto c = weak.lock()) c->send("later\r\n");
      });
    } else if (line == "wake") {
      protocol_.later([weak = self_] {
        std::this_thread::sleep_for(100ms);
        if (auto c = weak.lock()) c->wake();
      });
    } else if (line == "stall") {
      c.pauseReading(true);  // as SMTP does while a message is being stored
      protocol_.paused = true;
    } else if (line == "hold") {
      c.pauseReading(true);
      protocol_.paused = true;
      protocol_.later([&protocol = protocol_, weak = self_] {
        std::this_thread::sleep_for(300ms);
        if (auto c = weak.lock()) {
          c->send("resumed\r\n");
          protocol.paused = false;
          c->pauseReading(false);
        }
      });
    } else {
      c.send("echo " + line + "\r\n");
    }
  }
}

bool LineHandler::timedOut(sdk::Connection& c) {
  ++protocol_.timeouts;
  if (protocol_.keep_on_timeout) return false;
  c.send("timeout\r\n");
  return true;
}

void LineHandler::closed() {
  ++protocol_.closed;
}

class Client {
 public:
  explicit Client(unsigned short port) : socket_(Poco::Net::SocketAddress("127.0.0.1", port)) {
    socket_.setReceiveTimeout(Poco::Timespan(30, 0));
  }
  void send(const std::string& text) {
    socket_.sendBytes(text.data(), static_cast<int>(text.size()));
  }
  void shutdownSend() { socket_.shutdownSend(); }
  // The next line without its CRLF; "" once closed.
  std::string line() {
    for (;;) {
      std::size_t eol = buffer_.find("\r\n");
      if (eol != std::string::npos) {
        std::string l = buffer_.substr(0, eol);
        buffer_.erase(0, eol + 2);
        return l;
      }
      char chunk[1024];
      int n = 0;
      try {
        n = socket_.receiveBytes(chunk, sizeof chunk);
      } catch (const Poco::Exception&) {
        return "";
      }
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  Poco::Net::StreamSocket socket_;
  std::string buffer_;
};

// Polls until done, for at most 30 s: a loaded machine is slow, never wrong.
bool eventually(const std::function<bool()>& done) {
  for (const auto until = std::chrono::steady_clock::now() + 30s;
       std::chrono::steady_clock::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

struct Fixture {
  explicit Fixture(sdk::ListenerOptions options = {}) {
    options.listen = "127.0.0.1:0";
    listener = loop.open(options, lines);
  }
  ~Fixture() {
    listener->close();
    lines.join();
  }
  Lines lines;  // outlives the loop's listener, as a plugin's protocol does
  ListenerLoop loop{Poco::Logger::get("test.listeners")};
  std::unique_ptr<sdk::Listener> listener;
};

TEST(Listeners, AcceptsOnTheReportedPortGreetsAndAnswersEachLine) {
  Fixture f;
  ASSERT_NE(f.listener->port(), 0);
  Client c(f.listener->port());
  EXPECT_EQ(c.line(), "hello 127.0.0.1");
  c.send("one\r\ntwo\r\nthr");  // pipelined, and a line split across reads
  c.send("ee\r\n");
  EXPECT_EQ(c.line(), "echo one");
  EXPECT_EQ(c.line(), "echo two");
  EXPECT_EQ(c.line(), "echo three");
  EXPECT_EQ(f.listener->counts().accepted.load(), 1u);
  EXPECT_EQ(f.listener->counts().open.load(), 1);
  c.send("quit\r\n");
  EXPECT_EQ(c.line(), "bye");
  EXPECT_EQ(c.line(), "") << "closed after the answer";
  EXPECT_TRUE(eventually([&] { return f.lines.closed == 1; }));
  EXPECT_EQ(f.listener->counts().open.load(), 0);
}

TEST(Listeners, ConnectionsBeyondTheLimitsAreRefusedWithTheProtocolsWords) {
  sdk::ListenerOptions options;
  options.max_connections_per_address = 2;
  Fixture f(options);
  Client a(f.listener->port()), b(f.listener->port());
  EXPECT_EQ(a.line(), "hello 127.0.0.1");
  EXPECT_EQ(b.line(), "hello 127.0.0.1");
  Client c(f.listener->port());
  EXPECT_EQ(c.line(), "busy for you");
  EXPECT_EQ(c.line(), "");
  EXPECT_EQ(f.listener->counts().refused.load(), 1u);
  a.send("quit\r\n");
  EXPECT_EQ(a.line(), "bye");
  EXPECT_EQ(a.line(), "");
  ASSERT_TRUE(eventually([&] { return f.listener->counts().open == 1; }));
  Client d(f.listener->port());  // the address has room again
  EXPECT_EQ(d.line(), "hello 127.0.0.1");

  sdk::ListenerOptions total;
  total.max_connections = 1;
  Fixture g(total);
  Client e(g.listener->port());
  EXPECT_EQ(e.line(), "hello 127.0.0.1");
  Client h(g.listener->port());
  EXPECT_EQ(h.line(), "busy");
}

TEST(Listeners, AClientThatHangsUpWhileReadingIsPausedIsNoticed) {
  sdk::ListenerOptions options;
  options.timeout = 60s;  // long: only the hang-up may close it
  Fixture f(options);
  Client c(f.listener->port());
  EXPECT_EQ(c.line(), "hello 127.0.0.1");
  c.send("stall\r\n");
  ASSERT_TRUE(eventually([&] { return f.lines.paused.load(); }));  // the hang-up comes after
  c.shutdownSend();
  EXPECT_TRUE(eventually([&] { return f.lines.closed == 1; }))
      << "the slot stays taken until the handler answers";
  EXPECT_EQ(f.listener->counts().open.load(), 0);
}

TEST(Listeners, ASilentClientIsAskedAboutAndClosedAfterItsTimeout) {
  sdk::ListenerOptions options;
  options.timeout = 1s;
  Fixture f(options);
  Client c(f.listener->port());
  EXPECT_EQ(c.line(), "hello 127.0.0.1");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(c.line(), "timeout");
  EXPECT_EQ(c.line(), "");
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 900ms);
  EXPECT_LT(waited, 10s) << "a loaded machine is late, not this late";
  EXPECT_EQ(f.listener->counts().timed_out.load(), 1u);

  f.lines.keep_on_timeout = true;  // a handler that owes an answer keeps its connection
  Client d(f.listener->port());
  EXPECT_EQ(d.line(), "hello 127.0.0.1");
  ASSERT_TRUE(eventually([&] { return f.lines.timeouts >= 2; })) << "d was asked about";
  d.send("still\r\n");
  EXPECT_EQ(d.line(), "echo still");
}

TEST(Listeners, AHandlerAnswersLaterFromAnotherThreadInOrder) {
  Fixture f;
  Client c(f.listener->port());
  EXPECT_EQ(c.line(), "hello 127.0.0.1");
  c.send("later\r\n");
  EXPECT_EQ(c.line(), "later");
  c.send("wake\r\n");
  EXPECT_EQ(c.line(), "woken");
  c.send("hold\r\n");
  // Sent once the handler has paused reading (sent with "hold", it would be in the same read).
  ASSERT_TRUE(eventually([&] { return f.lines.paused.load(); }));
  c.send("after\r\n");  // read only once reading resumes
  EXPECT_EQ(c.line(), "resumed");
  EXPECT_EQ(c.line(), "echo after");
}

TEST(Listeners, ClosingAListenerClosesItsConnections) {
  Fixture f;
  Client a(f.listener->port()), b(f.listener->port());
  EXPECT_EQ(a.line(), "hello 127.0.0.1");
  EXPECT_EQ(b.line(), "hello 127.0.0.1");
  b.send("later\r\n");  // its answer comes after the connection is gone: harmless
  const unsigned short port = f.listener->port();
  f.listener->close();
  EXPECT_EQ(a.line(), "");
  EXPECT_EQ(b.line(), "");
  EXPECT_EQ(f.lines.closed.load(), 2);
  EXPECT_EQ(f.listener->counts().open.load(), 0);
  try {  // nothing listens any more: refused, or (connecting to itself) never greeted
    Client c(port);
    EXPECT_EQ(c.line(), "");
  } catch (const Poco::Exception&) {
  }
}

}  // namespace
}  // namespace svc::kernel
