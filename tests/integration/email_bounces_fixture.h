// What the bounce tests share: relays (Postfix's smtp-sink, or a listener here that answers
// chosen recipients as a test needs), delivery reports as Postfix writes them, and a fixture that
// starts svcd with a relay, sends through it and delivers reports by SMTP (swaks).
#pragma once

#include "email_fixture.h"
#include "harness.h"

#include <Poco/File.h>
#include <Poco/JSON/Array.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/StreamSocket.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace svc::testing {

inline std::string text(const Poco::JSON::Object::Ptr& o) {
  std::ostringstream out;
  o->stringify(out);
  return out.str();
}

// smtp-sink, ended with the test, ready once it answers (on another port when its first was
// taken meanwhile).
class Sink {
 public:
  explicit Sink(const std::string& dump)
      : child_(
            [dump](int port) {
              return "smtp-sink -u nobody -d " + dump + "/%M. 127.0.0.1:" + std::to_string(port) +
                     " 10";
            },
            Ready::kTcp) {}
  int port() const { return child_.port(); }

 private:
  Child child_;
};

// A relay that answers by the recipient's address: "gone..." is refused for good (550 5.1.1),
// "junk..." too, with a reply of invalid UTF-8 and 70 KB; "later..." is deferred (451) the first
// time and taken after; "slow..." is always deferred; the others are taken. With refuse_mail it
// refuses the sender (530 5.7.0, as a relay that wants AUTH). It keeps what it took and the
// MAIL FROM addresses it saw.
class RefusingRelay {
 public:
  RefusingRelay() : server_(Poco::Net::SocketAddress("127.0.0.1", 0)) {
    server_.setReceiveTimeout(Poco::Timespan(0, 200000));
    thread_ = std::thread([this] { run(); });
  }
  ~RefusingRelay() {
    stop_ = true;
    thread_.join();
  }
  int port() const { return server_.address().port(); }
  std::vector<std::string> taken() {
    std::lock_guard lock(mutex_);
    return taken_;
  }
  std::vector<std::string> senders() {
    std::lock_guard lock(mutex_);
    return senders_;
  }
  std::atomic<bool> refuse_mail{false};

 private:
  void run() {
    while (!stop_) {
      Poco::Net::StreamSocket client;
      try {
        client = server_.acceptConnection();
      } catch (const Poco::Exception&) {
        continue;  // the accept timed out: look at stop_
      }
      try {
        serve(client);
      } catch (const Poco::Exception&) {
      }
    }
  }
  void serve(Poco::Net::StreamSocket& c) {
    c.setReceiveTimeout(Poco::Timespan(5, 0));
    auto send = [&](const std::string& s) { c.sendBytes(s.data(), static_cast<int>(s.size())); };
    std::string in;
    auto line = [&]() -> std::optional<std::string> {
      for (;;) {
        auto eol = in.find("\r\n");
        if (eol != std::string::npos) {
          std::string l = in.substr(0, eol);
          in.erase(0, eol + 2);
          return l;
        }
        char buf[4096];
        int n = c.receiveBytes(buf, sizeof buf);
        if (n <= 0) return std::nullopt;
        in.append(buf, static_cast<std::size_t>(n));
      }
    };
    send("220 refusing.test ESMTP\r\n");
    std::vector<std::string> rcpts;
    while (auto l = line()) {
      const std::string verb = l->substr(0, 4);
      if (verb == "EHLO" || verb == "HELO") {
        send("250 refusing.test\r\n");
      } else if (verb == "MAIL") {
        rcpts.clear();
        {
          std::lock_guard lock(mutex_);
          senders_.push_back(l->substr(10));
        }
        send(refuse_mail ? "530 5.7.0 Authentication required\r\n" : "250 2.1.0 Ok\r\n");
      } else if (verb == "RCPT") {
        bool first_time = false;
        {
          std::lock_guard lock(mutex_);
          first_time = asked_.insert(l->substr(8)).second;
        }
        if (l->find("<gone") != std::string::npos) {
          send("550 5.1.1 " + l->substr(8) + ": Recipient address rejected: User unknown\r\n");
        } else if (l->find("<junk") != std::string::npos) {
          send("550 5.1.1 no\xff\xfe such user " + std::string(70000, 'x') + "\r\n");
        } else if (l->find("<slow") != std::string::npos ||
                   (l->find("<later") != std::string::npos && first_time)) {
          send("451 4.2.0 mailbox busy, try later\r\n");
        } else {
          rcpts.push_back(l->substr(8));
          send("250 2.1.5 Ok\r\n");
        }
      } else if (verb == "DATA") {
        send("354 go ahead\r\n");
        while (auto d = line()) {
          if (*d == ".") break;
        }
        {
          std::lock_guard lock(mutex_);
          taken_.insert(taken_.end(), rcpts.begin(), rcpts.end());
        }
        send("250 2.0.0 Ok: queued\r\n");
      } else if (verb == "QUIT") {
        send("221 2.0.0 Bye\r\n");
        return;
      } else {
        send("250 Ok\r\n");
      }
    }
  }

  Poco::Net::ServerSocket server_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::string> taken_, senders_;
  std::set<std::string> asked_;
  std::thread thread_;
};

// A delivery report as Postfix writes one: about `message_id`, for `recipient`.
inline std::string report(const std::string& to, const std::string& recipient,
                          const std::string& message_id, const std::string& action,
                          const std::string& status) {
  return "From: MAILER-DAEMON@mx.remote.example (Mail Delivery System)\n"
         "To: " +
         to +
         "\nSubject: Undelivered Mail Returned to Sender\n"
         "Auto-Submitted: auto-replied\nMIME-Version: 1.0\n"
         "Content-Type: multipart/report; report-type=delivery-status;\n"
         "\tboundary=\"R1/mx.remote.example\"\n\n"
         "--R1/mx.remote.example\nContent-Type: text/plain; charset=us-ascii\n\n"
         "This is the mail system at host mx.remote.example.\n\n"
         "--R1/mx.remote.example\nContent-Type: message/delivery-status\n\n"
         "Reporting-MTA: dns; mx.remote.example\n\n"
         "Final-Recipient: rfc822; " +
         recipient + "\nOriginal-Recipient: rfc822;" + recipient + "\nAction: " + action +
         "\nStatus: " + status +
         "\nRemote-MTA: dns; mail.remote.example\n"
         "Diagnostic-Code: smtp; 550 5.1.1 <" +
         recipient +
         ">: Recipient address\n"
         "    rejected: User unknown in virtual mailbox table\n\n"
         "--R1/mx.remote.example\nContent-Type: text/rfc822-headers\n\n"
         "From: someone@agents.test\nTo: " +
         recipient +
         "\nSubject: Quote\n"
         "Message-ID: " +
         message_id +
         "\n\n"
         "--R1/mx.remote.example--\n";
}

class EmailBounces : public Email {
 protected:
  void SetUp() override {}  // each test starts svcd with its relay

  void startWithRelay(int relay_port, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--set", "email.relay.host=127.0.0.1",
                                     "--set", "email.relay.port=" + std::to_string(relay_port),
                                     "--set", "email.relay.starttls=false"};
    args.insert(args.end(), more.begin(), more.end());
    startSvcd(args);
  }

  // Stops svcd, runs statements on its database (as an operator would: a retry's time moved
  // forward, a token made old), and starts it again on the same database.
  void restartWith(int relay_port, const std::vector<std::string>& statements,
                   std::vector<std::string> more = {}) {
    db_url_ = svcd_->dbUrl();
    ASSERT_EQ(svcd_->terminate(), 0);
    runSql(db_url_, statements);
    more.insert(more.end(), {"--set", "data.dir=" + svcd_->dataDir()});
    older_.push_back(std::move(svcd_));  // it owns the database (and data directory) until the end
    startWithRelay(relay_port, more);
  }
  std::vector<std::unique_ptr<Svcd>> older_;

  // Waits until the message's status is no longer `queued` and the outbox row is gone.
  Poco::JSON::Object::Ptr settled(const std::string& id, const std::string& key = "") {
    Poco::JSON::Object::Ptr m;
    for (int i = 0; i < 300; ++i) {
      m = http(svcd_->port(), "GET", "/api/email-messages/" + id + "/", "",
               bearer(key.empty() ? key_ : key))
              .json();
      if (m->getValue<std::string>("status") != "queued") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return m;
  }

  // smtp-sink as the relay, writing each message it takes into a directory of its own (dump),
  // and svcd started with it. @return the sink (it stops when destroyed).
  std::unique_ptr<Sink> startWithSink(std::string& dump, std::vector<std::string> more = {}) {
    dump = Poco::TemporaryFile::tempName("/tmp/") + "-sink";
    Poco::File(dump).createDirectories();
    EXPECT_EQ(::chmod(dump.c_str(), 0777), 0);
    auto sink = std::make_unique<Sink>(dump);
    startWithRelay(sink->port(), std::move(more));
    return sink;
  }

  // Sends through the relay and waits until the relay has answered. @return the message.
  Poco::JSON::Object::Ptr sendAndWait(const Ident& from, const std::string& to,
                                      const std::string& key = "") {
    auto r = call("POST", "/api/email-messages/compose/?identity=" + from.uuid,
                  R"({"to_email":)" + to + R"(,"subject":"Quote","content":"Ten."})", key);
    EXPECT_EQ(r.status, 201) << r.body;
    const std::string id = r.json()->getValue<std::string>("id");
    Poco::JSON::Object::Ptr m;
    for (int i = 0; i < 300; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      m = http(svcd_->port(), "GET", "/api/email-messages/" + id + "/", "",
               bearer(key.empty() ? key_ : key))
              .json();
      if (m->getValue<std::string>("status") != "queued") break;
    }
    return m;
  }

  // swaks delivers a report to `rcpt` from the null sender. @return swaks's exit and output.
  std::pair<int, std::string> deliver(const std::string& rcpt, const std::string& data,
                                      const std::string& from = "<>") {
    const std::string file = Poco::TemporaryFile::tempName("/tmp/") + "-report.eml";
    std::ofstream(file) << data;
    auto out = runCommand("swaks --server 127.0.0.1:" + std::to_string(smtp_port_) + " --from '" +
                          from + "' --to " + rcpt + " --data @" + file);
    Poco::File(file).remove();
    if (out.first == 0) {
      EXPECT_TRUE(allFiled()) << "the message acknowledged was never filed";
    }
    return out;
  }

  // The event stream from its start, read until `needles` are in it and then nothing more
  // comes for a second.
  std::string events(const std::string& types, const std::vector<std::string>& needles,
                     const std::string& key = "") {
    return eventStream(svcd_->port(), key.empty() ? key_ : key, "last_event_id=0&types=" + types,
                       needles, 1000);
  }
};

// The envelope sender of each recipient, as smtp-sink recorded the `n` messages in dump (with
// VERP, one message per recipient). @return by recipient; empty when there are not n messages.
inline std::map<std::string, std::string> envelopeSenders(const std::string& dump, std::size_t n) {
  std::vector<std::string> files;
  for (int i = 0; i < 300 && files.size() < n; ++i) {
    files.clear();
    Poco::File(dump).list(files);
    if (files.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::map<std::string, std::string> out;
  if (files.size() != n) return out;
  for (const auto& f : files) {
    std::ifstream in(dump + "/" + f);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string raw = ss.str();
    std::smatch from;
    if (!std::regex_search(raw, from, std::regex("X-Mail-Args: <([^>]*)>"))) return {};
    const std::regex rcpt("X-Rcpt-Args: <([^>]*)>");
    for (auto it = std::sregex_iterator(raw.begin(), raw.end(), rcpt); it != std::sregex_iterator();
         ++it) {
      out[(*it)[1].str()] = from[1].str();
    }
  }
  return out;
}

// The envelope sender smtp-sink recorded for the one message in dump.
inline std::string envelopeSender(const std::string& dump) {
  auto senders = envelopeSenders(dump, 1);
  return senders.empty() ? "" : senders.begin()->second;
}

}  // namespace svc::testing
