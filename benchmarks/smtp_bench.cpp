// SMTP load client: CLIENTS connections, each sending messages back to back for SECONDS
// (MAIL, RCPT and DATA pipelined, then the body), counting those acknowledged with 250.
//   svc_bench_smtp PORT CLIENTS SECONDS RCPT [BODY_BYTES [MESSAGE_FILE]]
// MESSAGE_FILE: send this message instead (CRLF; MSGID in it becomes a unique id).
// Prints: `<acknowledged> messages in <seconds> s = <rate> msg/s (<errors> refused or failed)`.
#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/StreamSocket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

// Reads complete reply lines until `replies` final lines (code + space) arrived.
bool readReplies(Poco::Net::StreamSocket& s, std::string& buffer, int replies, bool& all_ok) {
  all_ok = true;
  while (replies > 0) {
    std::size_t eol = buffer.find("\r\n");
    if (eol == std::string::npos) {
      char chunk[4096];
      int n = s.receiveBytes(chunk, sizeof chunk);
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    std::string line = buffer.substr(0, eol);
    buffer.erase(0, eol + 2);
    if (line.size() >= 4 && line[3] == ' ') {
      if (line[0] != '2' && line[0] != '3') all_ok = false;
      --replies;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s PORT CLIENTS SECONDS RCPT [BODY_BYTES [MESSAGE_FILE]]\n",
                 argv[0]);
    return 2;
  }
  const auto port = static_cast<Poco::UInt16>(std::atoi(argv[1]));
  const int clients = std::atoi(argv[2]);
  const int seconds = std::atoi(argv[3]);
  const std::string rcpt = argv[4];
  const int body_bytes = argc > 5 ? std::atoi(argv[5]) : 2000;
  std::string body = "From: Load <load@bench.example>\r\nTo: <" + rcpt +
                     ">\r\nSubject: load test\r\nMessage-ID: <MSGID@bench.example>\r\n\r\n";
  while (static_cast<int>(body.size()) < body_bytes) {
    body += "The quick brown fox jumps over the lazy dog, again and again and again.\r\n";
  }
  if (argc > 6) {
    // A message made elsewhere (a DKIM-signed one, say), CRLF, with MSGID in its Message-ID.
    std::ifstream in(argv[6], std::ios::binary);
    body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (body.find("MSGID") == std::string::npos) {
      std::fprintf(stderr, "%s has no MSGID to replace\n", argv[6]);
      return 2;
    }
  }
  std::atomic<long> acknowledged{0}, failed{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const auto started = std::chrono::steady_clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      long sequence = 0;
      while (!stop) {
        try {
          Poco::Net::StreamSocket s(Poco::Net::SocketAddress("127.0.0.1", port));
          s.setNoDelay(true);
          s.setReceiveTimeout(Poco::Timespan(30, 0));
          std::string buffer;
          bool ok = true;
          std::string ehlo = "EHLO bench.example\r\n";
          s.sendBytes(ehlo.data(), static_cast<int>(ehlo.size()));
          if (!readReplies(s, buffer, 2, ok)) break;  // greeting + EHLO
          while (!stop) {
            std::string envelope =
                "MAIL FROM:<load@bench.example>\r\nRCPT TO:<" + rcpt + ">\r\nDATA\r\n";
            s.sendBytes(envelope.data(), static_cast<int>(envelope.size()));
            bool envelope_ok = true;
            if (!readReplies(s, buffer, 3, envelope_ok)) break;
            if (!envelope_ok) {
              ++failed;
              std::string rset = "RSET\r\n";
              s.sendBytes(rset.data(), static_cast<int>(rset.size()));
              if (!readReplies(s, buffer, 1, ok)) break;
              continue;
            }
            std::string message = body;
            message.replace(message.find("MSGID"), 5,
                            std::to_string(c) + "." + std::to_string(sequence++));
            message += ".\r\n";
            s.sendBytes(message.data(), static_cast<int>(message.size()));
            if (!readReplies(s, buffer, 1, ok)) break;
            ok ? ++acknowledged : ++failed;
          }
          std::string quit = "QUIT\r\n";
          s.sendBytes(quit.data(), static_cast<int>(quit.size()));
        } catch (const Poco::Exception&) {
          ++failed;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("%ld messages in %.1f s = %.0f msg/s (%ld refused or failed)\n", acknowledged.load(),
              elapsed, acknowledged.load() / elapsed, failed.load());
  return 0;
}
