// The hub over a real loopback connection: respond, stream, timers, peers that go away, and a
// slow peer cut off at the buffer limit.
#include "stream_hub.h"

#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/StreamSocket.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace svc::kernel {
namespace {

struct Pair {
  Poco::Net::ServerSocket listener{Poco::Net::SocketAddress("127.0.0.1", 0)};
  Poco::Net::StreamSocket client;
  Poco::Net::StreamSocket server;
  Pair() {
    client.connect(listener.address());
    server = listener.acceptConnection();
    client.setReceiveTimeout(Poco::Timespan(30, 0));
  }
  std::string readAll() {
    std::string out;
    char buf[4096];
    int n;
    while ((n = client.receiveBytes(buf, sizeof buf)) > 0) out.append(buf, n);
    return out;
  }
};

TEST(StreamHub, RespondWritesAWholeResponseAndCloses) {
  StreamHub hub(1 << 20);
  hub.start();
  Pair p;
  int done_status = -1;
  auto stream = hub.adopt(p.server, "rid-7", [&](int status) { done_status = status; });
  EXPECT_EQ(hub.openCount(), 1u);
  stream->respond(sdk::Response::json(202, Poco::Dynamic::Var(std::string("x"))));
  std::string got = p.readAll();
  EXPECT_EQ(got.rfind("HTTP/1.1 202 Accepted\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("X-Request-Id: rid-7\r\n"), std::string::npos);
  EXPECT_NE(got.find("Content-Length: 3\r\n"), std::string::npos);
  EXPECT_EQ(got.substr(got.size() - 3), "\"x\"");
  EXPECT_EQ(done_status, 202);
  EXPECT_EQ(hub.openCount(), 0u);
  EXPECT_FALSE(stream->respond(sdk::Response::noContent()));
}

// A stopped hub holds nothing: what is handed to it then is answered 503 at once and its
// callback runs now, while whoever registered it still exists.
TEST(StreamHub, AStoppedHubAnswersWhatItIsHanded503AtOnce) {
  StreamHub hub(1 << 20);
  hub.start();
  hub.stop();
  Pair p;
  int done_status = -1;
  auto stream = hub.adopt(p.server, "late", [&](int status) { done_status = status; });
  EXPECT_EQ(done_status, 503);
  EXPECT_EQ(hub.openCount(), 0u);
  std::string got = p.readAll();
  EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got;
  EXPECT_NE(got.find("Retry-After: 5\r\n"), std::string::npos) << got;
}

TEST(StreamHub, TimersFireOnTheHubThread) {
  StreamHub hub(1 << 20);
  hub.start();
  Pair p;
  auto stream = hub.adopt(p.server, "rid", nullptr);
  std::weak_ptr<sdk::Stream> weak = stream;
  const auto start = std::chrono::steady_clock::now();  // before the timer is set: never late
  stream->expireAfter(std::chrono::milliseconds(50), [weak] {
    if (auto s = weak.lock()) s->respond(sdk::Response::noContent());
  });
  std::string got = p.readAll();
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(got.rfind("HTTP/1.1 204", 0), 0u) << got;
  EXPECT_GE(elapsed, std::chrono::milliseconds(45));
}

TEST(StreamHub, NoticesAPeerThatGoesAway) {
  StreamHub hub(1 << 20);
  hub.start();
  Pair p;
  std::atomic<bool> closed{false};
  auto stream = hub.adopt(p.server, "rid", nullptr);
  stream->onClose([&] { closed = true; });
  stream->begin(200, "text/event-stream", {});
  p.client.close();
  for (int i = 0; i < 3000 && !closed; ++i)  // 30 s: a loaded machine is slow, never wrong
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(closed.load());
  EXPECT_FALSE(stream->isOpen());
  EXPECT_EQ(hub.openCount(), 0u);
}

TEST(StreamHub, SlowPeerIsDisconnectedWhenItsBufferOverflows) {
  StreamHub hub(64 * 1024);
  hub.start();
  Pair p;
  p.client.setReceiveBufferSize(4096);
  auto stream = hub.adopt(p.server, "rid", nullptr);
  stream->begin(200, "text/plain", {});
  std::string chunk(16 * 1024, 'x');
  bool cut = false;
  for (int i = 0; i < 10000 && !cut; ++i) cut = !stream->write(chunk);  // the client never reads
  EXPECT_TRUE(cut);
  EXPECT_FALSE(stream->isOpen());
}

// A held answer the peer never reads is not kept forever: with nothing taken for send_timeout the
// peer is cut and the answer's memory freed.
TEST(StreamHub, APeerThatReadsNothingIsCutAfterTheSendTimeout) {
  StreamHub hub(64 * 1024, std::chrono::milliseconds(300));
  hub.start();
  Pair p;
  p.client.setReceiveBufferSize(4096);
  std::atomic<bool> closed{false};
  auto stream = hub.adopt(p.server, "rid", nullptr);
  stream->onClose([&] { closed = true; });
  stream->respond(sdk::Response::text(200, std::string(8 << 20, 'x'), "text/plain"));
  EXPECT_GT(stream->queued(), 0u);
  for (int i = 0; i < 3000 && !closed; ++i)  // 30 s: a loaded machine is slow, never wrong
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(closed.load());
  EXPECT_EQ(hub.openCount(), 0u);
}

// A stream that closes (or sets a new timer) takes its timer with it: a closed long-poll leaves
// nothing behind in the hub until its timeout would have come.
TEST(StreamHub, AClosedStreamLeavesNoTimer) {
  StreamHub hub(1 << 20);
  hub.start();
  Pair p;
  auto stream = hub.adopt(p.server, "rid", nullptr);
  stream->expireAfter(std::chrono::seconds(120), [] {});
  stream->expireAfter(std::chrono::seconds(60), [] {});
  EXPECT_EQ(hub.timerCount(), 1u);
  stream->respond(sdk::Response::noContent());
  p.readAll();
  EXPECT_FALSE(stream->isOpen());
  EXPECT_EQ(hub.timerCount(), 0u);
}

TEST(StreamHub, StopClosesEveryStream) {
  StreamHub hub(1 << 20);
  hub.start();
  Pair a, b;
  auto s1 = hub.adopt(a.server, "1", nullptr);
  auto s2 = hub.adopt(b.server, "2", nullptr);
  hub.stop();
  EXPECT_FALSE(s1->isOpen());
  EXPECT_FALSE(s2->isOpen());
  EXPECT_EQ(hub.openCount(), 0u);
}

}  // namespace
}  // namespace svc::kernel
