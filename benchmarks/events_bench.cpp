// Event stream benchmark client: holds N SSE streams to one svcd on one epoll thread, publishes
// R events a second (PATCH of an identity's name, which carries the send time), and reports
// delivery latency (p50, p99, max) over every delivery to every stream.
//
//   svc_bench_events PORT STREAMS RATE SECONDS KEY_FILE
// KEY_FILE: lines "identity_uuid identity_key" (streams use them round-robin) then one line
// "management KEY" (used to publish). Prints one line of results.
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Conn {
  int fd = -1;
  std::string pending;
  bool open = false;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: svc_bench_events PORT STREAMS RATE SECONDS KEY_FILE\n";
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int streams = std::atoi(argv[2]);
  const int rate = std::atoi(argv[3]);
  const int seconds = std::atoi(argv[4]);
  std::vector<std::pair<std::string, std::string>> identities;
  std::string management;
  {
    std::ifstream in(argv[5]);
    std::string a, b;
    while (in >> a >> b) {
      if (a == "management") {
        management = b;
      } else {
        identities.emplace_back(a, b);
      }
    }
  }
  if (identities.empty() || management.empty()) {
    std::cerr << "key file needs identities and a management key\n";
    return 2;
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);

  int ep = epoll_create1(0);
  std::vector<Conn> conns(static_cast<std::size_t>(streams));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const auto connect_start = std::chrono::steady_clock::now();
  for (int i = 0; i < streams; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      std::cerr << "connect " << i << ": " << std::strerror(errno) << "\n";
      return 1;
    }
    const std::string& key = identities[static_cast<std::size_t>(i) % identities.size()].second;
    std::string req =
        "GET /api/events/stream/?types=identity.updated HTTP/1.1\r\nHost: b\r\n"
        "Authorization: Bearer " +
        key + "\r\nAccept: text/event-stream\r\n\r\n";
    if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) return 1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    conns[static_cast<std::size_t>(i)].fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<std::uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }

  std::vector<std::int64_t> latencies;
  latencies.reserve(static_cast<std::size_t>(rate * seconds * streams / identities.size() + 1024));
  std::atomic<bool> publishing{false}, done{false};
  int opened = 0, closed = 0;
  std::vector<epoll_event> events(1024);
  char buf[65536];
  auto pump = [&](int timeout_ms) {
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), timeout_ms);
    const std::int64_t at = nowUs();
    for (int k = 0; k < n; ++k) {
      Conn& c = conns[events[static_cast<std::size_t>(k)].data.u32];
      for (;;) {
        ssize_t got = read(c.fd, buf, sizeof buf);
        if (got > 0) {
          c.pending.append(buf, static_cast<std::size_t>(got));
          // A short read took all there was; epoll (level-triggered) reports anything later.
          // Not reading again until EAGAIN halves this client's syscalls, which share the CPU
          // with the svcd it measures.
          if (static_cast<std::size_t>(got) < sizeof buf) break;
          continue;
        }
        if (got == 0 || (got < 0 && errno != EAGAIN)) {
          epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
          close(c.fd);
          ++closed;
        }
        break;
      }
      if (!c.open && c.pending.find("retry: 3000") != std::string::npos) {
        c.open = true;
        ++opened;
      }
      // Each event's object carries "name":"t=<send time in µs> ..."
      std::size_t pos = 0;
      const std::string marker = "\"name\":\"t=";
      while ((pos = c.pending.find(marker, pos)) != std::string::npos) {
        std::size_t end = c.pending.find(' ', pos + marker.size());
        if (end == std::string::npos) break;
        if (publishing) {
          latencies.push_back(
              at - std::stoll(c.pending.substr(pos + marker.size(), end - pos - marker.size())));
        }
        pos = end;
      }
      std::size_t last_frame = c.pending.rfind("\n\n");
      if (last_frame != std::string::npos) c.pending.erase(0, last_frame + 2);
    }
  };
  while (opened + closed < streams &&
         std::chrono::steady_clock::now() - connect_start < std::chrono::seconds(60)) {
    pump(100);
  }
  const double connect_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - connect_start).count();
  std::cerr << "ready: " << opened << " streams open\n" << std::flush;

  std::vector<std::int64_t> patch_us;  // the publisher's own round trips
  std::thread publisher([&] {
    Poco::Net::HTTPClientSession session("127.0.0.1", static_cast<Poco::UInt16>(port));
    publishing = true;
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < static_cast<long>(rate) * seconds; ++i) {
      std::this_thread::sleep_until(start + std::chrono::microseconds(i * 1000000 / rate));
      const auto& identity = identities[static_cast<std::size_t>(i) % identities.size()].first;
      std::string body =
          "{\"name\":\"t=" + std::to_string(nowUs()) + " " + std::to_string(i) + "\"}";
      Poco::Net::HTTPRequest req("PATCH", "/api/identities/" + identity + "/",
                                 Poco::Net::HTTPMessage::HTTP_1_1);
      req.set("Authorization", "Bearer " + management);
      req.setContentType("application/json");
      req.setContentLength(static_cast<std::streamsize>(body.size()));
      req.setKeepAlive(true);
      const std::int64_t sent = nowUs();
      session.sendRequest(req) << body;
      Poco::Net::HTTPResponse res;
      std::istream& in = session.receiveResponse(res);
      in.ignore(std::numeric_limits<std::streamsize>::max());
      patch_us.push_back(nowUs() - sent);
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));  // let the last deliveries land
    done = true;
  });
  while (!done) pump(50);
  publisher.join();

  auto percentile = [](std::vector<std::int64_t>& v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return static_cast<double>(v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))]) /
           1000.0;
  };
  auto pct = [&](double p) { return percentile(latencies, p); };
  const long expected = static_cast<long>(rate) * seconds *
                        static_cast<long>(streams / static_cast<int>(identities.size()));
  std::printf(
      "streams %d opened %d (in %.1f s) closed %d; events %d/s for %d s; deliveries %zu of ~%ld; "
      "latency ms p50 %.1f p99 %.1f max %.1f\n",
      streams, opened, connect_s, closed, rate, seconds, latencies.size(), expected, pct(0.5),
      pct(0.99), pct(1.0));
  // What the events' own cause took: a slow write shows here as well as in delivery latency.
  std::printf("publishing PATCH round trip ms p50 %.1f p99 %.1f max %.1f\n",
              percentile(patch_us, 0.5), percentile(patch_us, 0.99), percentile(patch_us, 1.0));
  return 0;
}
