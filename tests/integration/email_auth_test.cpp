// Inbound mail's authentication over real sockets: dnsmasq on loopback serves SPF, DKIM and
// DMARC records, swaks sends from several 127.0.0.x addresses, dkimpy signs, and svcd judges:
// verdicts on the views, the Authentication-Results header, DMARC reject (550) and quarantine,
// SPF softfail and neutral, a DNS server that never answers (temperror, message kept), and
// authenticated=true on the list and the wait.
#include "email_fixture.h"
#include "harness.h"
#include "smtp_burst.h"

#include <Poco/File.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Net/DatagramSocket.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

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
    const auto txt = [](const std::string& name, const std::string& value) {
      return " '--txt-record=" + name + "," + value + "'";  // no commas in value: one string
    };
    // --local=/test/: every other name under test. is answered NXDOMAIN, as a real zone would.
    dns_ = std::make_unique<Child>(
        [&](int port) {
          return "dnsmasq --keep-in-foreground --no-resolv --no-hosts --bind-interfaces "
                 "--listen-address=127.0.0.1 --user=root --pid-file= --local=/test/ "
                 "--local-ttl=300 --port=" +
                 std::to_string(port) + txt("pass.test", "v=spf1 ip4:127.0.0.2 -all") +
                 txt("_dmarc.pass.test", "v=DMARC1; p=reject") +
                 txt("s1._domainkey.pass.test", "v=DKIM1; k=rsa; p=" + pub) +
                 txt("quarantine.test", "v=spf1 ip4:127.0.0.2 -all") +
                 txt("_dmarc.quarantine.test", "v=DMARC1; p=quarantine") +
                 txt("soft.test", "v=spf1 ip4:127.0.0.2 ~all") +
                 txt("neutral.test", "v=spf1 ?all") +
                 // A part of pass.test delegated to a server that never answers (a dead sub-zone).
                 " --server=/slow._domainkey.pass.test/127.0.0.1#" +
                 std::to_string(silent_.address().port());
        },
        Ready::kDns);
    dns_port_ = dns_->port();
    startSvcd({"--set", "email.dns.server=127.0.0.1:" + std::to_string(dns_port_)});
    inbox_ = identity("Inbox", "inbox");
  }
  void TearDown() override {
    dns_.reset();
    Poco::File(dir_).remove(true);
  }

  // Sends a message with swaks from `source` (a 127.0.0.x address), with `headers` (whole
  // lines) above its own and `code` in its body. @return swaks's output.
  std::pair<int, std::string> send(const std::string& source, const std::string& mail_from,
                                   const std::string& from_header, const std::string& subject,
                                   int signatures = 0, const std::string& headers = "",
                                   const std::string& code = "482913") {
    const std::string eml = dir_ + "/m.eml";
    {
      std::ofstream(eml, std::ios::binary)
          << headers << "From: " << from_header
          << "\r\nTo: inbox@agents.test\r\nSubject: " << subject << "\r\nMessage-ID: <" << subject
          << "@example>\r\n\r\nYour code is " << code << "\r\n";
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
    auto sent = runCommand("swaks --server 127.0.0.1:" + std::to_string(smtp_port_) +
                           " --local-interface " + source + " --helo mx." +
                           mail_from.substr(mail_from.find('@') + 1) + " --from " + mail_from +
                           " --to inbox@agents.test --data " + eml);
    // A message acknowledged is filed before its 250 only when filing is quick.
    if (sent.second.find("250 2.0.0") != std::string::npos) {
      EXPECT_TRUE(allFiled()) << "a message acknowledged was never filed";
    }
    return sent;
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

  // The event stream from its start (every type), as the account's key sees it, read until
  // `needles` are in it and then nothing more comes for a second.
  std::string events(const std::string& query, const std::vector<std::string>& needles) {
    return eventStream(svcd_->port(), key_, "last_event_id=0" + query, needles, 1000);
  }

  // Every spool segment's bytes, in no particular order: the records of recent mail.
  std::string spool() {
    auto [rc, spools] = runCommand("find " + svcd_->dataDir() + " -type d -name spool");
    EXPECT_EQ(rc, 0);
    EXPECT_FALSE(spools.empty());
    std::string spooled;
    std::istringstream dirs(spools);
    for (std::string d; std::getline(dirs, d);) {
      std::vector<std::string> files;
      Poco::File(d).list(files);
      for (const auto& f : files) {
        std::ifstream in(d + "/" + f, std::ios::binary);
        spooled += std::string(std::istreambuf_iterator<char>(in), {});
      }
    }
    return spooled;
  }

  Poco::Net::DatagramSocket silent_{Poco::Net::SocketAddress("127.0.0.1", 0)};
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

// A forged From's sender cannot turn its DMARC fail into a DNS error: a signature naming a key
// no resolver can ask is a permerror (refused 550), and a key lookup of the From domain that
// fails for now, under p=reject, is deferred (451), never accepted.
TEST_F(EmailAuth, ADnsErrorTheSenderMadeDoesNotGetAForgedFromPastReject) {
  const auto fake = [](const std::string& selector) {
    return "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=pass.test; s=" + selector +
           "; h=from; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=dGVzdA==\r\n";
  };
  auto [rc, out] = send("127.0.0.3", "bounce@elsewhere.test", "GitHub <noreply@pass.test>",
                        "unaskable", 0, fake(std::string(64, 'a')));
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("550 5.7.1"), std::string::npos) << out;
  auto [rc2, out2] = send("127.0.0.3", "bounce@elsewhere.test", "GitHub <noreply@pass.test>",
                          "silent-key", 0, fake("slow"));
  EXPECT_NE(rc2, 0);
  EXPECT_NE(out2.find("451 4.7.5"), std::string::npos) << out2;
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

// The event stream, webhooks and MCP's wait feed agents that act on codes: a message the policy
// hid is published as email.quarantined (declared, with its object), never as email.received,
// and no event carries its code.
TEST_F(EmailAuth, QuarantinedMailIsPublishedAsQuarantinedWithoutItsCode) {
  ASSERT_EQ(
      send("127.0.0.3", "x@quarantine.test", "x@quarantine.test", "hidden", 0, "", "731904").first,
      0);
  ASSERT_EQ(send("127.0.0.2", "a@pass.test", "a@pass.test", "genuine", 0, "", "482913").first, 0);
  auto hidden = only("hidden", "&quarantined=true");
  ASSERT_TRUE(hidden->getValue<bool>("quarantined"));
  EXPECT_EQ(hidden->getValue<std::string>("extracted_code"), "731904");  // GET still shows it
  // Marked read: its email.updated carries no code either.
  ASSERT_EQ(call("PATCH", "/api/email-messages/" + hidden->getValue<std::string>("id") + "/",
                 R"({"is_read":true})")
                .status,
            200);

  const std::string stream =
      events("", {"event: email.received", "event: email.quarantined", "event: email.updated"});
  std::vector<Poco::JSON::Object::Ptr> received, quarantined;
  std::smatch m;
  const std::regex event("event: ([a-z_.]+)\ndata: ([^\n]+)");
  for (auto it = stream.cbegin(); std::regex_search(it, stream.cend(), m, event);
       it = m.suffix().first) {
    auto data = Poco::JSON::Parser().parse(m[2].str()).extract<Poco::JSON::Object::Ptr>();
    if (m[1] == "email.received") received.push_back(data->getObject("object"));
    if (m[1] == "email.quarantined") quarantined.push_back(data->getObject("object"));
  }
  ASSERT_EQ(received.size(), 1u) << stream;
  EXPECT_EQ(received[0]->getValue<std::string>("subject"), "genuine");
  EXPECT_EQ(received[0]->getValue<std::string>("extracted_code"), "482913");
  ASSERT_EQ(quarantined.size(), 1u) << stream;
  EXPECT_EQ(quarantined[0]->getValue<std::string>("id"), hidden->getValue<std::string>("id"));
  EXPECT_TRUE(quarantined[0]->getValue<bool>("quarantined"));
  EXPECT_TRUE(quarantined[0]->isNull("extracted_code"));
  EXPECT_EQ(stream.find("731904"), std::string::npos) << stream;
  EXPECT_NE(stream.find("event: email.updated"), std::string::npos) << stream;

  // Declared: the stream filters by it, and the API description lists it with its object.
  const std::string filtered = events("&types=email.quarantined", {"event: email.quarantined"});
  EXPECT_NE(filtered.find("event: email.quarantined"), std::string::npos) << filtered;
  EXPECT_EQ(filtered.find("event: email.received"), std::string::npos) << filtered;
  auto schema = call("GET", "/api/schema/").json();
  auto hook = schema->getObject("webhooks")->getObject("email.quarantined");
  ASSERT_TRUE(hook);
  std::ostringstream body;
  hook->getObject("post")->getObject("requestBody")->stringify(body);
  EXPECT_NE(body.str().find("#/components/schemas/EmailQuarantinedEvent"), std::string::npos)
      << body.str();
  std::ostringstream declared;
  schema->getObject("components")
      ->getObject("schemas")
      ->getObject("EmailQuarantinedEvent")
      ->stringify(declared);
  EXPECT_NE(declared.str().find("\"object\""), std::string::npos) << declared.str();
  EXPECT_NE(declared.str().find("#/components/schemas/"), std::string::npos) << declared.str();
}

// RFC 8601 section 5: an Authentication-Results field naming this server did not come from it.
// It is removed before ours is added; another server's is kept.
TEST_F(EmailAuth, ForgedAuthenticationResultsNamingThisServerAreRemoved) {
  auto [rc, out] = send("127.0.0.3", "a@soft.test", "GitHub <noreply@soft.test>", "forged-ar", 0,
                        "Authentication-Results: agents.test; dkim=pass header.d=forged.example "
                        "header.s=s1; dmarc=pass header.from=soft.test\r\n"
                        "Authentication-Results: mx.relay.example; spf=pass "
                        "smtp.mailfrom=kept@relay.example\r\n");
  ASSERT_EQ(rc, 0) << out;
  auto a = only("forged-ar")->getObject("authentication");
  EXPECT_EQ(a->getValue<std::string>("verdict"), "none");
  EXPECT_EQ(a->getValue<std::string>("header").find("forged.example"), std::string::npos);
  // The plugin keeps no raw copy of filed mail; the spool record holds the message as received
  // until a new segment starts: ours above the message, the relay's kept, the forgery gone.
  const std::string spooled = spool();
  const std::size_t at = spooled.find("Subject: forged-ar");
  ASSERT_NE(at, std::string::npos);
  const std::size_t record = spooled.rfind("SVC-AUTH ", at);
  ASSERT_NE(record, std::string::npos);
  const std::string head = spooled.substr(record, at - record);
  EXPECT_NE(head.find("Authentication-Results: agents.test;\r\n\tspf=softfail"), std::string::npos)
      << head;
  EXPECT_NE(head.find("Authentication-Results: mx.relay.example; spf=pass"), std::string::npos)
      << head;
  EXPECT_EQ(head.find("header.d=forged.example"), std::string::npos) << head;
  EXPECT_EQ(head.find("dmarc=pass"), std::string::npos) << head;
}

// SPF passed for the From's own domain, so DMARC passes whatever DKIM says: the signature is
// verified when the message is filed, not before its 250, and the message is filed with the same
// verdict and header as one checked at once.
TEST_F(EmailAuth, DkimThatCannotChangeTheAnswerIsVerifiedWhenFiled) {
  auto [rc, out] = send("127.0.0.2", "a@pass.test", "A <a@pass.test>", "spf-aligned", 1);
  ASSERT_EQ(rc, 0) << out;
  const std::string spooled = spool();
  const std::size_t at = spooled.find("Subject: spf-aligned");
  ASSERT_NE(at, std::string::npos);
  const std::size_t record = spooled.rfind("SVC-AUTH ", at);
  ASSERT_NE(record, std::string::npos);
  const std::string head = spooled.substr(record, at - record);
  EXPECT_EQ(head.rfind("SVC-AUTH later ", 0), 0u) << head;
  EXPECT_EQ(head.find("Authentication-Results:"), std::string::npos) << head;

  auto a = only("spf-aligned")->getObject("authentication");
  EXPECT_EQ(a->getValue<std::string>("verdict"), "pass");
  EXPECT_EQ(a->getObject("spf")->getValue<std::string>("result"), "pass");
  auto dkim = a->getArray("dkim");
  ASSERT_EQ(dkim->size(), 1u);
  EXPECT_EQ(dkim->getObject(0)->getValue<std::string>("result"), "pass");
  EXPECT_EQ(a->getObject("dmarc")->getValue<std::string>("result"), "pass");
  EXPECT_TRUE(a->getObject("dmarc")->getValue<bool>("dkim_aligned"));
  EXPECT_NE(a->getValue<std::string>("header").find("; dkim=pass header.d=pass.test"),
            std::string::npos)
      << a->getValue<std::string>("header");

  // Without SPF's pass, DKIM decides whether p=reject refuses it: checked before the answer.
  auto [rc2, out2] = send("127.0.0.3", "a@pass.test", "A <a@pass.test>", "dkim-decides", 1);
  ASSERT_EQ(rc2, 0) << out2;
  const std::string later = spool();
  const std::size_t at2 = later.find("Subject: dkim-decides");
  ASSERT_NE(at2, std::string::npos);
  const std::size_t record2 = later.rfind("SVC-AUTH ", at2);
  ASSERT_NE(record2, std::string::npos);
  const std::string head2 = later.substr(record2, at2 - record2);
  EXPECT_EQ(head2.rfind("SVC-AUTH pass 0 ", 0), 0u) << head2;
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

// Checks left for filing survive a crash with the DNS answers they need: a burst of signed mail
// whose SPF passes for its From (so DKIM is verified when filed), svcd killed with -9 while some
// of it waits in the spool, the DNS server gone, and svcd started again: every message is filed,
// its signature verified from the answers the spool kept.
TEST_F(EmailAuth, ChecksLeftForFilingSurviveKill9WithoutTheDnsServer) {
  // One signature (dkimpy) over From, To and the body; each message adds its own Subject.
  const std::string eml = dir_ + "/burst.eml";
  std::ofstream(eml, std::ios::binary)
      << "From: A <a@pass.test>\r\nTo: inbox@agents.test\r\n\r\nYour code is 1234\r\n";
  ASSERT_EQ(runCommand("/usr/bin/python3 -c \"import dkim,sys; m=open(sys.argv[1],'rb').read(); "
                       "s=dkim.sign(m,b's1',b'pass.test',open(sys.argv[2],'rb').read(),"
                       "canonicalize=(b'relaxed',b'relaxed'),include_headers=[b'from',b'to']); "
                       "open(sys.argv[1],'wb').write(s+m)\" " +
                       eml + " " + dir_ + "/dkim.pem")
                .first,
            0);
  std::ifstream in(eml, std::ios::binary);
  const std::string signed_message((std::istreambuf_iterator<char>(in)), {});
  db_url_ = svcd_->dbUrl();  // the restarted svcd's database too
  // From an address SPF lists.
  SmtpBurst burst(
      smtp_port_, 4, "later-",
      [&signed_message](const std::string& subject) {
        return "EHLO mx.pass.test\r\nMAIL FROM:<a@pass.test>\r\nRCPT TO:<inbox@agents.test>\r\n"
               "DATA\r\nSubject: " +
               subject + "\r\n" + signed_message + ".\r\nQUIT\r\n";
      },
      "127.0.0.2");
  burst.waitForSome();
  svcd_->kill9();
  const std::set<std::string> acknowledged = burst.stop();
  ASSERT_GT(acknowledged.size(), 10u);
  dns_.reset();  // the answers must come from the spool now
  auto crashed = std::move(svcd_);
  startSvcd({"--set", "data.dir=" + crashed->dataDir(), "--set",
             "email.dns.server=127.0.0.1:" + std::to_string(dns_port_)});
  // Some of the burst was still in the spool, its checks left for filing.
  std::smatch at;
  const std::string log = svcd_->log();
  ASSERT_TRUE(std::regex_search(
      log, at, std::regex("SMTP spool (\\S+) filed up to segment (\\d+) offset (\\d+)")))
      << log;
  // What the spool holds past the position filed: the rest of that segment and any later one.
  std::string unfiled;
  std::vector<std::string> files;
  Poco::File(at[1].str()).list(files);
  for (const auto& f : files) {
    if (f.rfind("segment-", 0) != 0) continue;
    const long long number = std::stoll(f.substr(8));
    if (number < std::stoll(at[2].str())) continue;
    std::ifstream segment(at[1].str() + "/" + f, std::ios::binary);
    if (number == std::stoll(at[2].str())) segment.seekg(std::stoll(at[3].str()));
    unfiled += std::string((std::istreambuf_iterator<char>(segment)), {});
  }
  EXPECT_NE(unfiled.find("SVC-AUTH later "), std::string::npos)
      << "nothing acknowledged was left to file after the crash";

  // Every acknowledged message, however many a fast machine acknowledged: paged through, not
  // counted (a list's count stops at email.messages.exact_count).
  waitForSubjects(acknowledged, "identity=" + inbox_.uuid, std::chrono::seconds(120));
  EXPECT_TRUE(allFiled());  // then the list holds still while it is paged through
  auto stored = storedSubjects("identity=" + inbox_.uuid);
  auto passed = storedSubjects("identity=" + inbox_.uuid + "&authenticated=true");
  for (const auto& s : acknowledged) {
    EXPECT_EQ(stored[s], 1) << s << " was acknowledged with 250";
    EXPECT_EQ(passed[s], 1) << s << " was not filed with its signature verified";
  }
  EXPECT_EQ(passed.size(), stored.size()) << "every message filed with its signature verified";
  auto oldest = messages("identity=" + inbox_.uuid + "&limit=1");  // the list is oldest first
  ASSERT_EQ(oldest->size(), 1u);
  auto last =
      message(oldest->getObject(0)->getValue<std::string>("id"))->getObject("authentication");
  ASSERT_EQ(last->getArray("dkim")->size(), 1u);
  EXPECT_EQ(last->getArray("dkim")->getObject(0)->getValue<std::string>("result"), "pass");
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
// budget, the message is kept with temperror, and the session is answered 250. One silent zone
// pauses only itself (each of the three zones the first message names is waited for); three in
// a row with no answer between mean the server is down, and then nothing more is waited for.
TEST_F(EmailAuth, ADnsServerThatNeverAnswersGivesTemperrorAndKeepsTheMessage) {
  Poco::Net::DatagramSocket silent(Poco::Net::SocketAddress("127.0.0.1", 0));
  svcd_.reset();
  key_.clear();  // the new svcd signs in anew
  startSvcd({"--set", "email.dns.server=127.0.0.1:" + std::to_string(silent.address().port())});
  Ident inbox = identity("Slow", "slow");
  // SPF asks one.test, DKIM three.test (for the signature's key), DMARC two.test (From).
  const std::string signature =
      "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=three.test; s=s1; h=from; "
      "bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=dGVzdA==";
  const auto start = std::chrono::steady_clock::now();
  auto [rc, out] = runCommand("swaks --server 127.0.0.1:" + std::to_string(smtp_port_) +
                              " --local-interface 127.0.0.5 --from a@one.test --to "
                              "slow@agents.test --header 'From: x@two.test' --add-header '" +
                              signature + "' --header 'Subject: slow-dns' --body x");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("250 2.0.0"), std::string::npos) << out;
  EXPECT_GE(took, std::chrono::milliseconds(5500));  // three zones, each waited out (2 s)
  EXPECT_LT(took, std::chrono::seconds(30));         // not each query waited out many times over
  EXPECT_TRUE(allFiled());
  auto list = messages("identity=" + inbox.uuid);
  ASSERT_EQ(list->size(), 1u);
  auto a = list->getObject(0)->getObject("authentication");
  EXPECT_EQ(a->getObject("spf")->getValue<std::string>("result"), "temperror");
  EXPECT_EQ(a->getObject("dmarc")->getValue<std::string>("result"), "temperror");
  EXPECT_EQ(a->getValue<std::string>("verdict"), "none");
  // The queries the silent server took so far (the three zones', and the probe of the server
  // itself), sent before the 250: @return how many were waiting.
  const auto drain = [&] {
    int n = 0;
    char buf[1500];
    while (::recv(silent.impl()->sockfd(), buf, sizeof buf, MSG_DONTWAIT) >= 0) ++n;
    return n;
  };
  EXPECT_GE(drain(), 3);
  // Three silent zones in a row: the resolver takes the server for down, and the next message
  // (a fourth zone) is judged without asking it: no query reaches it before the 250.
  auto [rc2, out2] = runCommand("swaks --server 127.0.0.1:" + std::to_string(smtp_port_) +
                                " --local-interface 127.0.0.5 --from b@other.test --to "
                                "slow@agents.test --header 'Subject: slow-dns-2' --body x");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("250 2.0.0"), std::string::npos) << out2;
  EXPECT_EQ(drain(), 0) << "the server taken for down was asked again";
  EXPECT_TRUE(allFiled());
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
