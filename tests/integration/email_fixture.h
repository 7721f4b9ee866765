// The fixture of the email plugin's integration tests: svcd with the auth, identities and email
// plugins on two platform domains (agents.test, alt.test), an account signed in, and helpers
// for identities, message lists and SMTP sessions.
#pragma once

#include "harness.h"

#include <Poco/JSON/Array.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/URI.h>

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

/// A helper process (smtp-sink, dnsmasq) that ends with the test.
class Child {
 public:
  explicit Child(const std::string& cmd) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >/dev/null 2>&1").c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ~Child() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

 private:
  pid_t pid_;
};

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
    std::smatch m;
    std::string log = svcd_->waitForLog("SMTP listener on port");
    ASSERT_TRUE(std::regex_search(log, m, std::regex("SMTP listener on port (\\d+)")));
    smtp_port_ = std::stoi(m[1]);
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

  /// Waits (30 s at most) until svcd has filed every message it acknowledged: a 250 comes once
  /// a message is on disk, its filing (a bounce matched, a rule applied) a moment later when the
  /// filer is busy or slow. @return true when it has.
  bool allFiled() {
    for (int i = 0; i < 300; ++i) {
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
  std::string smtp(const std::string& session) { return rawExchange(smtp_port_, session, 5000); }

  static std::string envelope(const std::string& from, const std::string& to,
                              const std::string& data) {
    return "EHLO client.example\r\nMAIL FROM:<" + from + ">\r\nRCPT TO:<" + to + ">\r\nDATA\r\n" +
           data + "\r\n.\r\nQUIT\r\n";
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_, db_url_;
  int smtp_port_ = 0;
};

}  // namespace svc::testing
