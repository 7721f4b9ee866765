// Inbound mail's authentication over real sockets: dnsmasq on loopback serves SPF, DKIM and
// DMARC records, swaks sends from several 127.0.0.x addresses, dkimpy signs, and svcd judges:
// verdicts on the views, the Authentication-Results header, DMARC reject (550) and quarantine,
// SPF softfail and neutral, a DNS server that never answers (temperror, message kept), and
// authenticated=true on the list and the wait.
#include "email_fixture.h"
#include "harness.h"

#include <Poco/File.h>
#include <Poco/JSON/Array.h>
#include <Poco/Net/DatagramSocket.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

namespace svc::testing {
namespace {

class EmailAuth : public Email {
 protected:
  void SetUp() override {
    dir_ = Poco::TemporaryFile::tempName("/tmp/") + "-mailauth";
    Poco::File(dir_).createDirectories();
    // A DKIM key for pass.test (1024 bits: its TXT record fits one string of 255).
    ASSERT_EQ(runCommand("openssl genrsa -out " + dir_ + "/dkim.pem 1024").first, 0);
    auto [rc, pub] = runCommand("openssl rsa -in " + dir_ +
                                "/dkim.pem -pubout -outform DER 2>/dev/null | base64 -w0");
    ASSERT_EQ(rc, 0);
    dns_port_ = freePort();
    const auto txt = [](const std::string& name, const std::string& value) {
      return " '--txt-record=" + name + "," + value + "'";  // no commas in value: one string
    };
    // --local=/test/: every other name under test. is answered NXDOMAIN, as a real zone would.
    dns_ = std::make_unique<Child>(
        "dnsmasq --keep-in-foreground --no-resolv --no-hosts --bind-interfaces "
        "--listen-address=127.0.0.1 --user=root --pid-file= --local=/test/ --local-ttl=300 "
        "--port=" +
        std::to_string(dns_port_) + txt("pass.test", "v=spf1 ip4:127.0.0.2 -all") +
        txt("_dmarc.pass.test", "v=DMARC1; p=reject") +
        txt("s1._domainkey.pass.test", "v=DKIM1; k=rsa; p=" + pub) +
        txt("quarantine.test", "v=spf1 ip4:127.0.0.2 -all") +
        txt("_dmarc.quarantine.test", "v=DMARC1; p=quarantine") +
        txt("soft.test", "v=spf1 ip4:127.0.0.2 ~all") + txt("neutral.test", "v=spf1 ?all"));
    startSvcd({"--set", "email.dns.server=127.0.0.1:" + std::to_string(dns_port_)});
    inbox_ = identity("Inbox", "inbox");
  }
  void TearDown() override {
    dns_.reset();
    Poco::File(dir_).remove(true);
  }

  // Sends a message with swaks from `source` (a 127.0.0.x address). @return swaks's output.
  std::pair<int, std::string> send(const std::string& source, const std::string& mail_from,
                                   const std::string& from_header, const std::string& subject,
                                   int signatures = 0) {
    const std::string eml = dir_ + "/m.eml";
    {
      std::ofstream(eml, std::ios::binary)
          << "From: " << from_header << "\r\nTo: inbox@agents.test\r\nSubject: " << subject
          << "\r\nMessage-ID: <" << subject << "@example>\r\n\r\nYour code is 482913\r\n";
    }
    for (int i = 0; i < signatures; ++i) {  // dkimpy, an independent signer
      const std::string py =
          "import dkim,sys; m=open(sys.argv[1],'rb').read(); "
          "s=dkim.sign(m,b's1',b'pass.test',open(sys.argv[2],'rb').read(),"
          "canonicalize=(b'relaxed',b'relaxed'),include_headers=[b'from',b'to',b'subject']); "
          "open(sys.argv[1],'wb').write(s+m)";
      EXPECT_EQ(
          runCommand("/usr/bin/python3 -c \"" + py + "\" " + eml + " " + dir_ + "/dkim.pem").first,
          0);
    }
    return runCommand("swaks --server 127.0.0.1:" + std::to_string(smtp_port_) +
                      " --local-interface " + source + " --helo mx." +
                      mail_from.substr(mail_from.find('@') + 1) + " --from " + mail_from +
                      " --to inbox@agents.test --data " + eml);
  }

  // The one message of the inbox's list (with `query`) whose subject is `subject`, whole.
  Poco::JSON::Object::Ptr only(const std::string& subject, const std::string& query = "") {
    auto list = messages("identity=" + inbox_.uuid + query);
    Poco::JSON::Object::Ptr found;
    int n = 0;
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (list->getObject(i)->getValue<std::string>("subject") != subject) continue;
      found = list->getObject(i);
      ++n;
    }
    EXPECT_EQ(n, 1) << subject;
    if (!found) return new Poco::JSON::Object;
    return message(found->getValue<std::string>("id"));
  }

  std::string dir_;
  int dns_port_ = 0;
  std::unique_ptr<Child> dns_;
  Ident inbox_;
};

TEST_F(EmailAuth, DkimSignedMailPassesEvenFromAnAddressSpfDoesNotList) {
  auto [rc, out] = send("127.0.0.3", "a@pass.test", "A <a@pass.test>", "signed", 1);
  ASSERT_EQ(rc, 0) << out;
  auto m = only("signed");
  auto a = m->getObject("authentication");
  ASSERT_TRUE(a) << m->get("authentication").toString();
  EXPECT_EQ(a->getValue<std::string>("verdict"), "pass") << a->getValue<std::string>("reason");
  EXPECT_EQ(a->getObject("spf")->getValue<std::string>("result"), "fail");
  EXPECT_EQ(a->getObject("spf")->getValue<std::string>("client_ip"), "127.0.0.3");
  EXPECT_EQ(a->getObject("spf")->getValue<std::string>("domain"), "pass.test");
  auto dkim = a->getArray("dkim");
  ASSERT_EQ(dkim->size(), 1u);
  EXPECT_EQ(dkim->getObject(0)->getValue<std::string>("domain"), "pass.test");
  EXPECT_EQ(dkim->getObject(0)->getValue<std::string>("selector"), "s1");
  EXPECT_EQ(dkim->getObject(0)->getValue<std::string>("result"), "pass");
  auto dmarc = a->getObject("dmarc");
  EXPECT_EQ(dmarc->getValue<std::string>("result"), "pass");
  EXPECT_EQ(dmarc->getValue<std::string>("policy"), "reject");
  EXPECT_EQ(dmarc->getValue<std::string>("from_domain"), "pass.test");
  EXPECT_TRUE(dmarc->getValue<bool>("dkim_aligned"));
  EXPECT_FALSE(dmarc->getValue<bool>("spf_aligned"));
  EXPECT_FALSE(m->getValue<bool>("quarantined"));
  // The header, as RFC 8601 writes it, naming this server.
  const std::string header = a->getValue<std::string>("header");
  EXPECT_TRUE(std::regex_match(
      header, std::regex("Authentication-Results: agents\\.test; spf=fail "
                         "smtp\\.mailfrom=a@pass\\.test smtp\\.helo=mx\\.pass\\.test; dkim=pass "
                         "header\\.d=pass\\.test header\\.s=s1; dmarc=pass \\(p=reject\\) "
                         "header\\.from=pass\\.test")))
      << header;
  // The list view carries it too (declared, so the kernel checked the shape).
  auto listed = messages("identity=" + inbox_.uuid)->getObject(0);
  EXPECT_EQ(listed->getObject("authentication")->getValue<std::string>("verdict"), "pass");
}

// Each signature costs a lookup and a signature check: a message gets its first five checked.
TEST_F(EmailAuth, OnlyTheFirstFiveSignaturesAreChecked) {
  auto [rc, out] = send("127.0.0.3", "a@pass.test", "a@pass.test", "many", 7);
  ASSERT_EQ(rc, 0) << out;
  auto a = only("many")->getObject("authentication");
  EXPECT_EQ(a->getArray("dkim")->size(), 5u);
  EXPECT_EQ(a->getValue<std::string>("verdict"), "pass");
}

TEST_F(EmailAuth, SpfAlonePassesFromAListedAddress) {
  auto [rc, out] = send("127.0.0.2", "a@pass.test", "a@pass.test", "listed");
  ASSERT_EQ(rc, 0) << out;
  auto a = only("listed")->getObject("authentication");
  EXPECT_EQ(a->getObject("spf")->getValue<std::string>("result"), "pass");
  EXPECT_EQ(a->getArray("dkim")->size(), 0u);
  EXPECT_TRUE(a->getObject("dmarc")->getValue<bool>("spf_aligned"));
  EXPECT_EQ(a->getValue<std::string>("verdict"), "pass");
}

TEST_F(EmailAuth, AForgedFromOfARejectDomainIsRefused) {
  auto [rc, out] =
      send("127.0.0.3", "bounce@elsewhere.test", "GitHub <noreply@pass.test>", "forged");
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("550 5.7.1"), std::string::npos) << out;
  EXPECT_NE(out.find("pass.test"), std::string::npos) << out;
  EXPECT_EQ(messages("identity=" + inbox_.uuid + "&quarantined=include")->size(), 0u);
}

TEST_F(EmailAuth, QuarantineIsStoredHiddenAndStillHasItsCode) {
  auto [rc, out] = send("127.0.0.3", "x@quarantine.test", "x@quarantine.test", "quarantined");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(messages("identity=" + inbox_.uuid)->size(), 0u);
  EXPECT_EQ(messages("identity=" + inbox_.uuid + "&quarantined=false")->size(), 0u);
  EXPECT_EQ(messages("identity=" + inbox_.uuid + "&quarantined=include")->size(), 1u);
  auto m = only("quarantined", "&quarantined=true");
  EXPECT_TRUE(m->getValue<bool>("quarantined"));
  EXPECT_EQ(m->getObject("authentication")->getValue<std::string>("verdict"), "fail");
  EXPECT_EQ(m->getObject("authentication")->getObject("dmarc")->getValue<std::string>("policy"),
            "quarantine");
  EXPECT_EQ(m->getValue<std::string>("extracted_code"), "482913");
  // Its thread is its own, left out of the thread list likewise (no subject or preview there).
  const std::string threads = "/api/email-inbox/?identity=" + inbox_.uuid;
  EXPECT_EQ(call("GET", threads).json()->getArray("results")->size(), 0u);
  auto hidden = call("GET", threads + "&quarantined=true").json()->getArray("results");
  ASSERT_EQ(hidden->size(), 1u);
  EXPECT_TRUE(hidden->getObject(0)->getValue<bool>("quarantined"));
  EXPECT_EQ(hidden->getObject(0)->getValue<std::string>("thread_id"),
            m->getValue<std::string>("thread_id"));
  // A wait never hands quarantined mail to an agent.
  auto w = call("GET", "/api/email-messages/wait/?identity=" + inbox_.uuid +
                           "&created_after=2000-01-01T00:00:00Z&timeout=1");
  EXPECT_EQ(w.status, 204) << w.body;
  // Genuine mail carrying the quarantined message's Message-ID (planted to swallow it) is not
  // threaded into the hidden thread: it is listed.
  auto [grc, gout] = send("127.0.0.2", "a@pass.test", "a@pass.test", "quarantined");
  ASSERT_EQ(grc, 0) << gout;
  auto shown = call("GET", threads).json()->getArray("results");
  ASSERT_EQ(shown->size(), 1u);
  EXPECT_NE(shown->getObject(0)->getValue<std::string>("thread_id"),
            m->getValue<std::string>("thread_id"));
}

TEST_F(EmailAuth, SoftfailAndNeutralAreNeitherPassNorFail) {
  ASSERT_EQ(send("127.0.0.3", "a@soft.test", "a@soft.test", "soft").first, 0);
  ASSERT_EQ(send("127.0.0.4", "a@neutral.test", "a@neutral.test", "neutral").first, 0);
  auto soft = only("soft")->getObject("authentication");
  EXPECT_EQ(soft->getObject("spf")->getValue<std::string>("result"), "softfail");
  EXPECT_EQ(soft->getObject("dmarc")->getValue<std::string>("result"), "none");
  EXPECT_EQ(soft->getValue<std::string>("verdict"), "none");
  auto neutral = only("neutral")->getObject("authentication");
  EXPECT_EQ(neutral->getObject("spf")->getValue<std::string>("result"), "neutral");
  EXPECT_EQ(neutral->getValue<std::string>("verdict"), "none");
  EXPECT_NE(neutral->getValue<std::string>("header").find("spf=neutral"), std::string::npos);
}

TEST_F(EmailAuth, AuthenticatedTrueOnTheListAndTheWait) {
  ASSERT_EQ(send("127.0.0.3", "a@soft.test", "a@soft.test", "unauthenticated").first, 0);
  ASSERT_EQ(send("127.0.0.2", "a@pass.test", "a@pass.test", "authenticated").first, 0);
  auto all = messages("identity=" + inbox_.uuid);
  EXPECT_EQ(all->size(), 2u);
  auto pass = messages("identity=" + inbox_.uuid + "&authenticated=true");
  ASSERT_EQ(pass->size(), 1u);
  EXPECT_EQ(pass->getObject(0)->getValue<std::string>("subject"), "authenticated");
  auto rest = messages("identity=" + inbox_.uuid + "&authenticated=false");
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ(rest->getObject(0)->getValue<std::string>("subject"), "unauthenticated");
  EXPECT_EQ(call("GET", "/api/email-messages/?authenticated=maybe").status, 400);

  const std::string wait = "/api/email-messages/wait/?identity=" + inbox_.uuid +
                           "&created_after=2000-01-01T00:00:00Z&timeout=2";
  auto any = call("GET", wait);
  auto only_pass = call("GET", wait + "&authenticated=true");
  ASSERT_EQ(only_pass.status, 200) << only_pass.body;
  EXPECT_EQ(only_pass.json()->getValue<std::string>("subject"), "authenticated");
  if (any.status == 200) {
    EXPECT_EQ(any.json()->getValue<std::string>("subject"), "unauthenticated");
  }
}

// A DNS server that takes the queries and never answers: the checks give up within their time
// budget, the message is kept with temperror, and the session is answered 250.
TEST_F(EmailAuth, ADnsServerThatNeverAnswersGivesTemperrorAndKeepsTheMessage) {
  Poco::Net::DatagramSocket silent(Poco::Net::SocketAddress("127.0.0.1", 0));
  svcd_.reset();
  key_.clear();  // the new svcd signs in anew
  startSvcd({"--set", "email.dns.server=127.0.0.1:" + std::to_string(silent.address().port())});
  Ident inbox = identity("Slow", "slow");
  const auto start = std::chrono::steady_clock::now();
  auto [rc, out] = runCommand("swaks --server 127.0.0.1:" + std::to_string(smtp_port_) +
                              " --local-interface 127.0.0.5 --from a@pass.test --to "
                              "slow@agents.test --header 'Subject: slow-dns' --body x");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("250 2.0.0"), std::string::npos) << out;
  EXPECT_LT(took, std::chrono::seconds(15));
  auto list = messages("identity=" + inbox.uuid);
  ASSERT_EQ(list->size(), 1u);
  auto a = list->getObject(0)->getObject("authentication");
  EXPECT_EQ(a->getObject("spf")->getValue<std::string>("result"), "temperror");
  EXPECT_EQ(a->getObject("dmarc")->getValue<std::string>("result"), "temperror");
  EXPECT_EQ(a->getValue<std::string>("verdict"), "none");
  // The resolver now knows the server is not answering: the next message does not wait out
  // another 2-second query (it would take at least that long otherwise).
  const auto again = std::chrono::steady_clock::now();
  auto [rc2, out2] = runCommand("swaks --server 127.0.0.1:" + std::to_string(smtp_port_) +
                                " --local-interface 127.0.0.5 --from b@other.test --to "
                                "slow@agents.test --header 'Subject: slow-dns-2' --body x");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_LT(std::chrono::steady_clock::now() - again, std::chrono::milliseconds(1800));
  EXPECT_EQ(messages("identity=" + inbox.uuid)->size(), 2u);
}

TEST_F(EmailAuth, LocalDeliveryIsPassAsOurOwn) {
  Ident sender = identity("Sender", "sender");
  ASSERT_EQ(call("POST", "/api/email-messages/compose/?identity=" + sender.uuid,
                 R"({"to_email":"inbox@agents.test","subject":"internal","content":"hi"})")
                .status,
            201);
  auto m = only("internal", "&direction=incoming");
  auto a = m->getObject("authentication");
  EXPECT_EQ(a->getValue<std::string>("verdict"), "pass");
  EXPECT_EQ(a->getValue<std::string>("source"), "local");
  EXPECT_TRUE(a->isNull("spf"));
  EXPECT_NE(a->getValue<std::string>("header").find("auth=pass"), std::string::npos);
  // The sender's own copy is outgoing: no verdict.
  auto sent = messages("identity=" + sender.uuid + "&direction=outgoing");
  ASSERT_EQ(sent->size(), 1u);
  EXPECT_TRUE(sent->getObject(0)->isNull("authentication"));
}

}  // namespace
}  // namespace svc::testing
