// The fixture of the email plugin's integration tests: svcd with the auth, identities and email
// plugins on two platform domains (agents.test, alt.test), an account signed in, and helpers
// for identities, message lists and SMTP sessions.
#pragma once

#include "harness.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/Net/DatagramSocket.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/StreamSocket.h>
#include <Poco/URI.h>

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace svc::testing {

/// @return a TCP port on loopback that nothing listens on now.
inline int freePort() {
  Poco::Net::ServerSocket s(Poco::Net::SocketAddress("127.0.0.1", 0));
  return s.address().port();
}

/// How a helper process shows it is ready on its port: it accepts a TCP connection (smtp-sink),
/// or it answers a DNS query over UDP (dnsmasq).
enum class Ready { kTcp, kDns };

/// @return whether something on 127.0.0.1:port answers as `how` says, within about a second.
inline bool answers(Ready how, int port) {
  try {
    if (how == Ready::kTcp) {
      Poco::Net::StreamSocket probe(
          Poco::Net::SocketAddress("127.0.0.1", static_cast<Poco::UInt16>(port)));
      return true;
    }
    // A TXT query for probe.test: any answer (an NXDOMAIN, a refusal) says it listens.
    static const unsigned char query[] = {
        0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 5,    'p',
        'r',  'o',  'b',  'e',  4,    't',  'e',  's',  't',  0,    0x00, 0x10, 0x00, 0x01};
    Poco::Net::DatagramSocket udp(Poco::Net::SocketAddress("127.0.0.1", 0));
    udp.setReceiveTimeout(Poco::Timespan(1, 0));
    udp.sendTo(query, sizeof query,
               Poco::Net::SocketAddress("127.0.0.1", static_cast<Poco::UInt16>(port)));
    unsigned char reply[512];
    Poco::Net::SocketAddress from;
    return udp.receiveFrom(reply, sizeof reply, from) >= 2 && reply[0] == 0x12 && reply[1] == 0x34;
  } catch (const Poco::Exception&) {
    return false;
  }
}

/// A helper process (smtp-sink, dnsmasq) listening on a port of its own, ended with the test.
/// It is ready once it answers there (a loaded machine may take seconds to start it). The port
/// comes from freePort(), so a test running beside this one may take it before the child binds
/// it: a child that exits, or does not answer within 10 s, is stopped and started again on
/// another port (on the same one when the test named it), for 60 s at most.
class Child {
 public:
  /// @param command the command line for a port.
  Child(std::function<std::string(int port)> command, Ready how, int port = 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      port_ = port != 0 ? port : freePort();
      start(command(port_));
      const auto tried = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (alive() && std::chrono::steady_clock::now() < tried) {
        // Answered, and still running: the answer was not another process's on a taken port.
        if (answers(how, port_) && alive()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << "the helper never answered on its port: " << command(port_);
  }
  ~Child() { stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  int port() const { return port_; }

 private:
  void start(const std::string& cmd) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >/dev/null 2>&1").c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  bool alive() {
    if (pid_ <= 0) return false;
    if (::waitpid(pid_, nullptr, WNOHANG) != pid_) return true;
    pid_ = -1;
    return false;
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  pid_t pid_ = -1;
  int port_ = 0;
};

/// @return the port svcd's SMTP listener took (it names it in its log once it listens).
inline int smtpPortOf(const Svcd& svcd) {
  std::smatch m;
  const std::string log = svcd.waitForLog("SMTP listener on port");
  if (!std::regex_search(log, m, std::regex("SMTP listener on port (\\d+)"))) return 0;
  return std::stoi(m[1]);
}

/// One SMTP session's commands: a message from `from` to `to`, then QUIT.
inline std::string smtpEnvelope(const std::string& from, const std::string& to,
                                const std::string& data) {
  return "EHLO client.example\r\nMAIL FROM:<" + from + ">\r\nRCPT TO:<" + to + ">\r\nDATA\r\n" +
         data + "\r\n.\r\nQUIT\r\n";
}

/// `size` bytes of every value, in no short repeating pattern.
inline std::string attachmentBytes(std::size_t size = 3 * 1024 * 1024) {
  std::string out(size, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i * 7 + i / 4099);
  return out;
}

/// A message to `to` with `bytes` attached as big.bin (base64).
inline std::string mailWithAttachment(const std::string& bytes,
                                      const std::string& to = "sink@agents.test") {
  const std::string b64 = sdk::base64(bytes);
  std::string body;
  for (std::size_t at = 0; at < b64.size(); at += 76) body += b64.substr(at, 76) + "\r\n";
  return "From: a@example.com\r\nTo: " + to +
         "\r\nSubject: big\r\n"
         "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
         "--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n"
         "--b\r\nContent-Type: application/octet-stream; name=\"big.bin\"\r\n"
         "Content-Transfer-Encoding: base64\r\n\r\n" +
         body + "--b--";
}

class Email : public ::testing::Test {
 protected:
  void SetUp() override { startSvcd({}); }

  void startSvcd(std::vector<std::string> args) {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "email"};
    o.args = {"--set", "email.domains=agents.test,alt.test"};
    o.args.insert(o.args.end(), args.begin(), args.end());
    if (!db_url_.empty()) o.db_url = db_url_;
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    smtp_port_ = smtpPortOf(*svcd_);
    ASSERT_NE(smtp_port_, 0) << svcd_->log();
    if (key_.empty()) key_ = signIn("owner@example.com");
  }

  // A new account through the device flow. @return its management key.
  std::string signIn(const std::string& email) { return signInAt(*svcd_, email); }

  static std::string signInAt(Svcd& svcd, const std::string& email) {
    return operatorLogin(svcd, email)->optValue<std::string>("management_key", "");
  }

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& key = "") {
    return http(svcd_->port(), method, path, body, bearer(key.empty() ? key_ : key));
  }

  struct Ident {
    std::string uuid, address, inbox;
  };
  Ident identity(const std::string& name, const std::string& identifier = "",
                 const std::string& key = "") {
    std::string body = "{\"name\":\"" + name + "\"" +
                       (identifier.empty() ? "" : ",\"email_identifier\":\"" + identifier + "\"") +
                       "}";
    auto r = call("POST", "/api/identities/", body, key);
    EXPECT_EQ(r.status, 201) << r.body;
    auto j = r.json();
    auto e = j->getObject("email");
    return {j->getValue<std::string>("uuid"), e->getValue<std::string>("address"),
            e->getValue<std::string>("id")};
  }

  // Sends `n` messages from an identity to an address, with subjects n0, n1, ...
  void composeMany(const Ident& from, const std::string& to, int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(call("POST", "/api/email-messages/compose/?identity=" + from.uuid,
                     "{\"to_email\":\"" + to + "\",\"subject\":\"n" + std::to_string(i) +
                         "\",\"content\":\"c\"}")
                    .status,
                201);
    }
  }

  Poco::JSON::Array::Ptr messages(const std::string& query, const std::string& key = "") {
    auto r = call("GET", "/api/email-messages/?" + query, "", key);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getArray("results");
  }

  /// The list once it holds at least `count` messages (mail acknowledged is filed a moment
  /// later when the filer is busy or slow), or as it is after 30 s.
  Poco::JSON::Array::Ptr messagesOnce(const std::string& query, std::size_t count) {
    auto list = messages(query);
    for (int i = 0; i < 300 && list->size() < count; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      list = messages(query);
    }
    return list;
  }

  /// Waits (60 s at most) until svcd has filed every message it acknowledged: a 250 comes once
  /// a message is on disk, its filing (a bounce matched, a rule applied) a moment later when the
  /// filer is busy or slow. @return true when it has.
  bool allFiled() {
    for (int i = 0; i < 600; ++i) {
      if (sample(metricsOf(*svcd_), "svc_email_spool_backlog_messages") == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  /// Every message of the list `query` selects, paged through whole (a list's `count` stops at
  /// email.messages.exact_count, so it cannot tell how many a long burst stored). @return how
  /// many messages carry each subject.
  std::map<std::string, int> storedSubjects(const std::string& query) {
    std::map<std::string, int> stored;
    std::string next = "/api/email-messages/?limit=200&" + query;
    while (!next.empty()) {
      auto reply = call("GET", next);
      if (reply.status != 200) {
        ADD_FAILURE() << next << ": " << reply.status << " " << reply.body;
        break;
      }
      auto page = reply.json();
      for (auto& v : *page->getArray("results")) {
        ++stored[v.extract<Poco::JSON::Object::Ptr>()->getValue<std::string>("subject")];
      }
      next = page->isNull("next")
                 ? ""
                 : Poco::URI(page->getValue<std::string>("next")).getPathAndQuery();
    }
    return stored;
  }

  /// Waits until every subject in `expected` is listed by `query`, as long as the list keeps
  /// growing (filing a long burst takes as long as it takes; a list that stops growing for
  /// `stall` has stopped filing). @return the subjects stored, as storedSubjects.
  std::map<std::string, int> waitForSubjects(
      const std::set<std::string>& expected, const std::string& query,
      std::chrono::seconds stall = std::chrono::seconds(60)) {
    std::map<std::string, int> stored;
    std::size_t seen = 0;
    for (auto progress = std::chrono::steady_clock::now();
         std::chrono::steady_clock::now() - progress < stall;) {
      stored = storedSubjects(query);
      if (std::all_of(expected.begin(), expected.end(),
                      [&](const std::string& s) { return stored.count(s) > 0; })) {
        break;
      }
      if (stored.size() > seen) {
        seen = stored.size();
        progress = std::chrono::steady_clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return stored;
  }

  Poco::JSON::Object::Ptr message(const std::string& id) {
    auto r = call("GET", "/api/email-messages/" + id + "/");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }

  // One SMTP session, every command in one write (PIPELINING), answers until the server closes.
  // A message acknowledged is filed before its 250 only when filing is quick: it waits until
  // svcd has filed it, so that the lists show it.
  std::string smtp(const std::string& session) {
    const std::string out = rawExchange(smtp_port_, session, 30000);
    if (out.find("250 2.0.0") != std::string::npos) {
      EXPECT_TRUE(allFiled()) << "a message acknowledged was never filed";
    }
    return out;
  }

  static std::string envelope(const std::string& from, const std::string& to,
                              const std::string& data) {
    return smtpEnvelope(from, to, data);
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_, db_url_;
  int smtp_port_ = 0;
};

}  // namespace svc::testing
