// Bounces of outbound mail over real sockets: the relay (Postfix's smtp-sink, or a listener here
// that refuses chosen recipients) takes the message from its VERP envelope sender, and delivery
// reports come back by SMTP (swaks) to that address or to the sender's own. Forged and delayed
// reports change nothing; svcctl shows the status.
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
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

namespace svc::testing {
namespace {

std::string text(const Poco::JSON::Object::Ptr& o) {
  std::ostringstream out;
  o->stringify(out);
  return out.str();
}

int freePort() {
  Poco::Net::ServerSocket s(Poco::Net::SocketAddress("127.0.0.1", 0));
  return s.address().port();
}

// smtp-sink, ended with the test.
class Sink {
 public:
  explicit Sink(const std::string& dump) : port_(freePort()) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      const std::string cmd = "exec smtp-sink -u nobody -d " + dump +
                              "/%M. 127.0.0.1:" + std::to_string(port_) + " 10 >/dev/null 2>&1";
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Ready once it answers: a loaded machine may take seconds to start it.
    for (int i = 0; i < 100; ++i) {
      try {
        Poco::Net::StreamSocket probe(Poco::Net::SocketAddress("127.0.0.1", port_));
        return;
      } catch (const Poco::Exception&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
  ~Sink() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }

 private:
  int port_;
  pid_t pid_;
};

// A relay that refuses for good (550 5.1.1) every recipient whose address starts with "gone",
// takes the others, and keeps the envelope of what it took.
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
        send("250 2.1.0 Ok\r\n");
      } else if (verb == "RCPT") {
        if (l->find("<gone") != std::string::npos) {
          send("550 5.1.1 " + l->substr(8) + ": Recipient address rejected: User unknown\r\n");
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
  std::vector<std::string> taken_;
  std::thread thread_;
};

// A delivery report as Postfix writes one: about `message_id`, for `recipient`.
std::string report(const std::string& to, const std::string& recipient,
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

  void startWithRelay(int relay_port) {
    startSvcd({"--set", "email.relay.host=127.0.0.1", "--set",
               "email.relay.port=" + std::to_string(relay_port), "--set",
               "email.relay.starttls=false"});
  }

  // Sends through the relay and waits until the relay has answered. @return the message.
  Poco::JSON::Object::Ptr sendAndWait(const Ident& from, const std::string& to,
                                      const std::string& key = "") {
    auto r = call("POST", "/api/email-messages/compose/?identity=" + from.uuid,
                  R"({"to_email":)" + to + R"(,"subject":"Quote","content":"Ten."})", key);
    EXPECT_EQ(r.status, 201) << r.body;
    const std::string id = r.json()->getValue<std::string>("id");
    Poco::JSON::Object::Ptr m;
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      m = http(svcd_->port(), "GET", "/api/email-messages/" + id + "/", "",
               bearer(key.empty() ? key_ : key))
              .json();
      if (m->getValue<std::string>("status") != "queued") break;
    }
    return m;
  }

  // swaks delivers a report to `rcpt` from the null sender. @return swaks's exit and output.
  std::pair<int, std::string> deliver(const std::string& rcpt, const std::string& data) {
    const std::string file = Poco::TemporaryFile::tempName("/tmp/") + "-report.eml";
    std::ofstream(file) << data;
    auto out = runCommand("swaks --server 127.0.0.1:" + std::to_string(smtp_port_) +
                          " --from '<>' --to " + rcpt + " --data @" + file);
    Poco::File(file).remove();
    return out;
  }

  std::string events(const std::string& types, const std::string& key = "") {
    return rawExchange(svcd_->port(),
                       "GET /api/events/stream/?last_event_id=0&types=" + types +
                           " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                           (key.empty() ? key_ : key) + "\r\n\r\n",
                       1500);
  }
};

// The envelope sender smtp-sink recorded for the one message in dump.
std::string envelopeSender(const std::string& dump) {
  std::vector<std::string> files;
  for (int i = 0; i < 50 && files.empty(); ++i) {
    Poco::File(dump).list(files);
    if (files.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (files.size() != 1) return "";
  std::ifstream in(dump + "/" + files.front());
  std::stringstream ss;
  ss << in.rdbuf();
  std::smatch m;
  const std::string raw = ss.str();
  return std::regex_search(raw, m, std::regex("X-Mail-Args: <([^>]*)>")) ? m[1].str() : "";
}

TEST_F(EmailBounces, AReportToTheVerpAddressBouncesTheMessageAndIsNotFiled) {
  const std::string dump = Poco::TemporaryFile::tempName("/tmp/") + "-sink";
  Poco::File(dump).createDirectories();
  ASSERT_EQ(::chmod(dump.c_str(), 0777), 0);
  Sink sink(dump);
  startWithRelay(sink.port());
  Ident a = identity("Alice", "alice");
  auto sent = sendAndWait(a, R"(["nobody@remote.example","zed@remote.example"])");
  ASSERT_EQ(sent->getValue<std::string>("status"), "sent");
  EXPECT_TRUE(sent->isNull("bounce"));
  const std::string id = sent->getValue<std::string>("id");
  const std::string message_id = sent->getValue<std::string>("message_id");
  const std::string verp = envelopeSender(dump);
  Poco::File(dump).remove(true);
  ASSERT_TRUE(std::regex_match(verp, std::regex("bounces\\+[0-9a-f]{32}@agents\\.test"))) << verp;

  // A token no message has is refused at RCPT.
  auto [bad_rc, bad] =
      deliver("bounces+00000000000000000000000000000000@agents.test",
              report(verp, "nobody@remote.example", message_id, "failed", "5.1.1"));
  EXPECT_NE(bad_rc, 0);
  EXPECT_NE(bad.find("550 5.1.1"), std::string::npos) << bad;
  // The right token on another domain of this server names nothing either.
  std::string other_domain = verp.substr(0, verp.find('@')) + "@alt.test";
  EXPECT_NE(deliver(other_domain,
                    report(other_domain, "nobody@remote.example", message_id, "failed", "5.1.1"))
                .first,
            0);

  // Delayed: nothing changes, and the report is not filed.
  auto [rc1, out1] =
      deliver(verp, report(verp, "nobody@remote.example", message_id, "delayed", "4.4.1"));
  ASSERT_EQ(rc1, 0) << out1;
  auto m = message(id);
  EXPECT_EQ(m->getValue<std::string>("status"), "sent");
  EXPECT_TRUE(m->isNull("bounce"));

  // Failed: bounced for that recipient, with the remote server's words.
  auto [rc2, out2] =
      deliver(verp, report(verp, "nobody@remote.example", message_id, "failed", "5.1.1"));
  ASSERT_EQ(rc2, 0) << out2;
  m = message(id);
  EXPECT_EQ(m->getValue<std::string>("status"), "bounced");
  ASSERT_FALSE(m->isNull("bounce")) << text(m);
  auto recipients = m->getObject("bounce")->getArray("recipients");
  ASSERT_EQ(recipients->size(), 1u);
  auto b = recipients->getObject(0);
  EXPECT_EQ(b->getValue<std::string>("recipient"), "nobody@remote.example");
  EXPECT_EQ(b->getValue<std::string>("status"), "5.1.1");
  EXPECT_EQ(b->getValue<std::string>("source"), "dsn");
  EXPECT_EQ(b->getValue<std::string>("reason"),
            "550 5.1.1 <nobody@remote.example>: Recipient address rejected: User unknown in "
            "virtual mailbox table");
  EXPECT_FALSE(m->getObject("bounce")->getValue<std::string>("bounced_dt").empty());
  // The list shows it too; the reports are not mail: only the sent message is listed.
  auto list = messages("identity=" + a.uuid);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(list->getObject(0)->getValue<std::string>("status"), "bounced");
  EXPECT_FALSE(list->getObject(0)->isNull("bounce"));
  auto threads = call("GET", "/api/email-inbox/?identity=" + a.uuid).json()->getArray("results");
  EXPECT_EQ(threads->size(), 1u);

  // The same report again adds nothing and publishes nothing more.
  ASSERT_EQ(
      deliver(verp, report(verp, "nobody@remote.example", message_id, "failed", "5.1.1")).first, 0);
  const std::string stream = events("email.bounced,email.received");
  EXPECT_EQ(stream.find("event: email.received"), std::string::npos) << stream;
  std::size_t first = stream.find("event: email.bounced");
  ASSERT_NE(first, std::string::npos) << stream;
  EXPECT_EQ(stream.find("event: email.bounced", first + 1), std::string::npos) << stream;
  EXPECT_NE(stream.find(id), std::string::npos);
  EXPECT_NE(stream.find(R"("recipient":"nobody@remote.example")"), std::string::npos) << stream;
  EXPECT_NE(stream.find("User unknown in virtual mailbox table"), std::string::npos) << stream;

  // Mail to the VERP address that is no report (an auto-reply) is filed in the sender's inbox.
  ASSERT_EQ(deliver(verp, "From: zed@remote.example\nTo: " + verp +
                              "\nSubject: Out of office\nAuto-Submitted: auto-replied\n\n"
                              "Back Monday.\n")
                .first,
            0);
  list = messages("identity=" + a.uuid);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ(list->getObject(1)->getValue<std::string>("subject"), "Out of office");
  EXPECT_EQ(message(id)->getObject("bounce")->getArray("recipients")->size(), 1u);

  // svcctl: the list's STATUS column and the message's bounce.
  const std::string ctl = binDir() +
                          "/svcctl --url http://127.0.0.1:" + std::to_string(svcd_->port()) +
                          " --key " + key_ + " ";
  auto [rc3, listed] = runCommand(ctl + "mail list --identity " + a.uuid);
  ASSERT_EQ(rc3, 0) << listed;
  EXPECT_NE(listed.find("STATUS"), std::string::npos) << listed;
  EXPECT_NE(listed.find("bounced"), std::string::npos) << listed;
  auto [rc4, read] = runCommand(ctl + "mail read " + id + " --identity " + a.uuid);
  ASSERT_EQ(rc4, 0) << read;
  EXPECT_NE(read.find("Status:  bounced"), std::string::npos) << read;
  EXPECT_NE(read.find("Bounced: nobody@remote.example (5.1.1, dsn, "), std::string::npos) << read;
}

TEST_F(EmailBounces, TheRelaysRefusalBouncesOnlyTheRecipientsItRefused) {
  RefusingRelay relay;
  startWithRelay(relay.port());
  Ident a = identity("Alice", "alice");
  auto m = sendAndWait(a, R"(["gone@remote.example","ok@remote.example"])");
  EXPECT_EQ(m->getValue<std::string>("status"), "bounced") << text(m);
  ASSERT_FALSE(m->isNull("bounce")) << text(m);
  auto recipients = m->getObject("bounce")->getArray("recipients");
  ASSERT_EQ(recipients->size(), 1u);
  auto b = recipients->getObject(0);
  EXPECT_EQ(b->getValue<std::string>("recipient"), "gone@remote.example");
  EXPECT_EQ(b->getValue<std::string>("status"), "5.1.1");
  EXPECT_EQ(b->getValue<std::string>("source"), "relay");
  EXPECT_EQ(b->getValue<std::string>("reason"),
            "RCPT answered 550 5.1.1 <gone@remote.example>: Recipient address rejected: User "
            "unknown");
  // The other recipient still got it.
  EXPECT_EQ(relay.taken(), std::vector<std::string>{"<ok@remote.example>"});
  const std::string stream = events("email.bounced");
  EXPECT_NE(stream.find("event: email.bounced"), std::string::npos) << stream;
  EXPECT_NE(stream.find("RCPT answered 550 5.1.1"), std::string::npos) << stream;

  // Every recipient refused: bounced for each, and nothing sent.
  m = sendAndWait(a, R"(["gone1@remote.example","gone2@remote.example"])");
  EXPECT_EQ(m->getValue<std::string>("status"), "bounced");
  EXPECT_EQ(m->getObject("bounce")->getArray("recipients")->size(), 2u) << text(m);
  EXPECT_EQ(relay.taken().size(), 1u);
}

TEST_F(EmailBounces, ReportsAtTheSendersOwnAddressAndForgedOnes) {
  const std::string dump = Poco::TemporaryFile::tempName("/tmp/") + "-sink";
  Poco::File(dump).createDirectories();
  ASSERT_EQ(::chmod(dump.c_str(), 0777), 0);
  Sink sink(dump);
  startWithRelay(sink.port());
  Ident a = identity("Alice", "alice");
  const std::string b_key = signIn("other@example.com");
  Ident b = identity("Bob", "bob", b_key);
  auto bobs = sendAndWait(b, R"("x@remote.example")", b_key);
  ASSERT_EQ(bobs->getValue<std::string>("status"), "sent");
  const std::string bob_id = bobs->getValue<std::string>("id");
  const std::string bob_message_id = bobs->getValue<std::string>("message_id");
  Poco::File(dump).remove(true);
  auto bobsNow = [&] {
    return http(svcd_->port(), "GET", "/api/email-messages/" + bob_id + "/", "", bearer(b_key))
        .json();
  };

  // A report naming Bob's message, sent to Alice's inbox (another account): Bob's message is
  // untouched, and Alice gets it as ordinary mail.
  auto [rc1, out1] = deliver("alice@agents.test", report("alice@agents.test", "x@remote.example",
                                                         bob_message_id, "failed", "5.1.1"));
  ASSERT_EQ(rc1, 0) << out1;
  EXPECT_EQ(bobsNow()->getValue<std::string>("status"), "sent");
  auto at_alice = messages("identity=" + a.uuid);
  ASSERT_EQ(at_alice->size(), 1u);
  EXPECT_EQ(at_alice->getObject(0)->getValue<std::string>("subject"),
            "Undelivered Mail Returned to Sender");
  EXPECT_EQ(at_alice->getObject(0)->getValue<std::string>("direction"), "incoming");

  // At Bob's own address, a delayed report changes nothing (and is not filed); one naming a
  // message Bob never sent is ordinary mail.
  ASSERT_EQ(deliver("bob@agents.test", report("bob@agents.test", "x@remote.example", bob_message_id,
                                              "delayed", "4.4.1"))
                .first,
            0);
  ASSERT_EQ(deliver("bob@agents.test", report("bob@agents.test", "x@remote.example",
                                              "<never@agents.test>", "failed", "5.1.1"))
                .first,
            0);
  EXPECT_EQ(bobsNow()->getValue<std::string>("status"), "sent");
  auto at_bob =
      http(svcd_->port(), "GET", "/api/email-messages/?identity=" + b.uuid, "", bearer(b_key))
          .json()
          ->getArray("results");
  ASSERT_EQ(at_bob->size(), 2u) << "the sent message and the report about another";
  EXPECT_EQ(at_bob->getObject(1)->getValue<std::string>("direction"), "incoming");

  // A failed report about Bob's message at Bob's own address (a server that wrote to the From):
  // bounced, and not filed.
  ASSERT_EQ(deliver("bob@agents.test", report("bob@agents.test", "x@remote.example", bob_message_id,
                                              "failed", "5.1.1"))
                .first,
            0);
  auto now = bobsNow();
  EXPECT_EQ(now->getValue<std::string>("status"), "bounced");
  ASSERT_FALSE(now->isNull("bounce"));
  EXPECT_EQ(now->getObject("bounce")
                ->getArray("recipients")
                ->getObject(0)
                ->getValue<std::string>("recipient"),
            "x@remote.example");
  EXPECT_EQ(http(svcd_->port(), "GET", "/api/email-messages/?identity=" + b.uuid, "", bearer(b_key))
                .json()
                ->getArray("results")
                ->size(),
            2u);
  // Alice's account saw no bounce event; Bob's did.
  EXPECT_EQ(events("email.bounced").find("event: email.bounced"), std::string::npos);
  EXPECT_NE(events("email.bounced", b_key).find("event: email.bounced"), std::string::npos);
}

}  // namespace
}  // namespace svc::testing
