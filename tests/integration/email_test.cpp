// The email plugin over real sockets: SMTP in (swaks and hand-written sessions), HTTP out, local
// delivery between identities, the outbox relay into Postfix's smtp-sink, custom domains verified
// against dnsmasq on loopback, and a kill -9 in the middle of an SMTP burst.
#include "email_fixture.h"
#include "harness.h"
#include "smtp_burst.h"

#include <Poco/File.h>
#include <Poco/JSON/Array.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/StreamSocket.h>
#include <Poco/TemporaryFile.h>
#include <Poco/URI.h>

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace svc::testing {
namespace {

TEST_F(Email, IdentitiesGetTheirInboxInTheSameTransaction) {
  Ident generated = identity("Support Bot");
  EXPECT_TRUE(
      std::regex_match(generated.address, std::regex("support-bot-[a-z2-9]{4}@agents\\.test")))
      << generated.address;
  Ident sales = identity("Sales", "sales");
  EXPECT_EQ(sales.address, "sales@agents.test");

  auto count = [&] { return call("GET", "/api/identities/").json()->getValue<int>("count"); };
  const int before = count();
  auto taken = call("POST", "/api/identities/", R"({"name":"Again","email_identifier":"sales"})");
  EXPECT_EQ(taken.status, 409);
  EXPECT_EQ(taken.code(), "email_taken");
  EXPECT_EQ(count(), before) << "a taken address leaves no identity behind";
  // a..b is refused like the rest: SMTP could never deliver to it (RFC 5321 dot-atom).
  for (const char* bad : {R"("-x")", R"("UPPER")", R"("a b")", R"("")", R"("x@y")", R"("a..b")"}) {
    auto r = call("POST", "/api/identities/",
                  std::string(R"({"name":"Bad","email_identifier":)") + bad + "}");
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_TRUE(r.json()->getObject("errors")->has("email_identifier")) << r.body;
  }
  auto other_domain = call("POST", "/api/identities/",
                           R"({"name":"Alt","email_identifier":"x","domain":"alt.test"})");
  ASSERT_EQ(other_domain.status, 201) << other_domain.body;
  EXPECT_EQ(other_domain.json()->getObject("email")->getValue<std::string>("address"),
            "x@alt.test");
  auto foreign = call("POST", "/api/identities/",
                      R"({"name":"F","email_identifier":"y","domain":"example.com"})");
  EXPECT_EQ(foreign.status, 400);
  EXPECT_EQ(count(), before + 1);

  // The identity shows its inbox everywhere.
  auto got = call("GET", "/api/identities/" + sales.uuid + "/").json();
  EXPECT_EQ(got->getObject("email")->getValue<std::string>("id"), sales.inbox);
  auto inbox = call("GET", "/api/email/" + sales.inbox + "/").json();
  EXPECT_EQ(inbox->getValue<std::string>("address"), "sales@agents.test");
  EXPECT_TRUE(inbox->getValue<bool>("is_primary"));
  EXPECT_EQ(inbox->getValue<std::string>("identity"), sales.uuid);

  auto avail = call("GET", "/api/email/check-availability/?email=sales").json();
  EXPECT_FALSE(avail->getValue<bool>("available"));
  EXPECT_EQ(avail->getValue<std::string>("email"), "sales@agents.test");
  avail = call("GET", "/api/email/check-availability/?email=Fresh@alt.test").json();
  EXPECT_TRUE(avail->getValue<bool>("available"));
  EXPECT_EQ(avail->getValue<std::string>("email"), "fresh@alt.test");
  EXPECT_EQ(call("GET", "/api/email/check-availability/?email=a..b%40x").status, 400);
  auto doubled_dots = call("GET", "/api/email/check-availability/?email=a..b");
  EXPECT_EQ(doubled_dots.status, 400) << doubled_dots.body;
  EXPECT_TRUE(doubled_dots.json()->getObject("errors")->has("email")) << doubled_dots.body;
  EXPECT_TRUE(
      call("GET", "/api/email/check-availability/?email=a.b").json()->getValue<bool>("available"));
  EXPECT_EQ(call("GET", "/api/email/check-availability/").status, 400);

  // A second inbox needs an active plan.
  auto second =
      call("POST", "/api/email/", "{\"identity\":\"" + sales.uuid + "\",\"email\":\"sales2\"}");
  ASSERT_EQ(second.status, 201) << second.body;
  EXPECT_FALSE(second.json()->getValue<bool>("is_primary"));
  auto unreachable =
      call("POST", "/api/email/", "{\"identity\":\"" + sales.uuid + "\",\"email\":\"a..b\"}");
  EXPECT_EQ(unreachable.status, 400) << unreachable.body;
  EXPECT_TRUE(unreachable.json()->getObject("errors")->has("email")) << unreachable.body;
  EXPECT_EQ(
      call("POST", "/api/email/", "{\"identity\":\"" + sales.uuid + "\",\"email\":\"sales2\"}")
          .code(),
      "email_taken");
  std::string account =
      call("GET", "/api/health/whoami/").json()->getObject("account")->getValue<std::string>("id");
  ASSERT_EQ(http(svcd_->adminPort(), "POST", "/admin/auth/accounts/" + account + "/plan/",
                 R"({"plan":"none"})", bearer(svcd_->adminToken()))
                .status,
            200);
  auto unpaid = call("POST", "/api/email/", "{\"identity\":\"" + sales.uuid + "\"}");
  EXPECT_EQ(unpaid.status, 402);
  EXPECT_EQ(unpaid.code(), "subscription_required");
  // The contract's sentence, then what to do about it.
  const std::string unpaid_detail = unpaid.json()->getValue<std::string>("detail");
  EXPECT_EQ(unpaid_detail.rfind("An active subscription is required.", 0), 0u) << unpaid_detail;
  EXPECT_NE(unpaid_detail.find("svcctl accounts plan"), std::string::npos) << unpaid_detail;
  EXPECT_EQ(call("POST", "/api/email/", "{}").code(), "identity_required");

  // Another account sees none of it.
  std::string stranger = signIn("stranger@example.com");
  EXPECT_EQ(call("GET", "/api/email/" + sales.inbox + "/", "", stranger).status, 404);
  EXPECT_EQ(call("GET", "/api/email/", "", stranger).json()->getValue<int>("count"), 0);
  EXPECT_EQ(call("POST", "/api/email/", "{\"identity\":\"" + sales.uuid + "\"}", stranger).status,
            404);
}

TEST_F(Email, SwaksDeliversMimeWithAttachmentsAndEncodedHeaders) {
  Ident sales = identity("Sales", "sales");
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-swaks";
  Poco::File(dir).createDirectories();
  {
    std::ofstream(dir + "/report.pdf", std::ios::binary)
        << std::string("%PDF-1.4\0\x01\x02\xff", 12);
  }
  auto [rc, out] =
      runCommand("swaks --server 127.0.0.1:" + std::to_string(smtp_port_) +
                 " --to Sales@agents.test --from alice@example.com"
                 " --header 'Subject: =?UTF-8?B?w5xuaWPDtmRl?= =?ISO-8859-1?Q?caf=E9?= code "
                 "=?UTF-8?B?8J+YgA==?='"
                 " --header 'From: =?UTF-8?Q?Al=C3=AFce?= <alice@example.com>'"
                 " --body 'Your code is 123456' --attach-type application/pdf --attach " +
                 dir + "/report.pdf");
  Poco::File(dir).remove(true);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("250 2.0.0"), std::string::npos) << out;

  auto list = messages("identity=" + sales.uuid);
  ASSERT_EQ(list->size(), 1u);
  auto m = message(list->getObject(0)->getValue<std::string>("id"));
  EXPECT_EQ(m->getValue<std::string>("subject"), "Ünicödecafé code 😀");
  EXPECT_EQ(m->getValue<std::string>("from_email"), "alice@example.com");
  EXPECT_EQ(m->getValue<std::string>("direction"), "incoming");
  EXPECT_NE(m->getValue<std::string>("content").find("Your code is 123456"), std::string::npos);
  auto attachments = m->getArray("attachments");
  ASSERT_EQ(attachments->size(), 1u);
  auto a = attachments->getObject(0);
  EXPECT_EQ(a->getValue<std::string>("filename"), "report.pdf");
  EXPECT_EQ(a->getValue<std::string>("content_type"), "application/pdf");
  EXPECT_EQ(a->getValue<int>("size"), 12);
  auto bytes =
      call("GET", "/api/email-attachments/" + a->getValue<std::string>("uuid") + "/download/");
  ASSERT_EQ(bytes.status, 200);
  EXPECT_EQ(bytes.body, std::string("%PDF-1.4\0\x01\x02\xff", 12));
  EXPECT_NE(bytes.header("content-disposition").find("attachment"), std::string::npos);
  EXPECT_EQ(bytes.header("x-content-type-options"), "nosniff");

  auto threads =
      call("GET", "/api/email-inbox/?identity=" + sales.uuid).json()->getArray("results");
  ASSERT_EQ(threads->size(), 1u);
  auto t = threads->getObject(0);
  EXPECT_EQ(t->getValue<int>("message_count"), 1);
  EXPECT_EQ(t->getValue<int>("unread_count"), 1);
  EXPECT_EQ(t->getArray("attachment_names")->getElement<std::string>(0), "report.pdf");
  EXPECT_EQ(t->getValue<std::string>("preview").substr(0, 19), "Your code is 123456");

  // The event stream tells of it, without the body.
  const std::string stream =
      eventStream(svcd_->port(), key_, "last_event_id=0&types=email.received",
                  {"event: email.received", m->getValue<std::string>("id")});
  EXPECT_NE(stream.find("event: email.received"), std::string::npos) << stream;
  EXPECT_NE(stream.find(m->getValue<std::string>("id")), std::string::npos) << stream;
  EXPECT_EQ(stream.find("Your code is"), std::string::npos) << "no body in events\n" << stream;
  // ... but the code found in it, which is what an agent waits for.
  EXPECT_NE(stream.find(R"("extracted_code":"123456")"), std::string::npos) << stream;
}

TEST_F(Email, VerificationCodesAreFoundWhenMessagesAreStored) {
  Ident sales = identity("Sales", "sales");
  Ident buyer = identity("Buyer", "buyer");
  // A code written in groups, among decoys (an order number, a date, a price).
  ASSERT_NE(smtp(envelope("no-reply@acme.example", "sales@agents.test",
                          "From: Acme <no-reply@acme.example>\r\nTo: sales@agents.test\r\n"
                          "Subject: Your Acme sign-in code\r\n\r\n"
                          "Your verification code is 482 913.\r\nIt expires in 10 minutes.\r\n"
                          "Order #123456 of 2026-11-25 ($12.99) has shipped.\r\n"))
                .find("250 2.0.0"),
            std::string::npos);
  // HTML only: the code on a line of its own in the HTML's text.
  ASSERT_NE(smtp(envelope("noreply@example.org", "sales@agents.test",
                          "From: noreply@example.org\r\nTo: sales@agents.test\r\n"
                          "Subject: Confirm your email\r\nMIME-Version: 1.0\r\n"
                          "Content-Type: text/html; charset=utf-8\r\n\r\n"
                          "<html><body><p>Your one-time passcode:</p>"
                          "<div style=\"font-size:32px\"><b>730&nbsp;521</b></div>"
                          "<p>&copy; 2026 Example, 1600 Main St, CA 94043</p></body></html>\r\n"))
                .find("250 2.0.0"),
            std::string::npos);
  // A receipt: numbers everywhere, no code.
  ASSERT_NE(smtp(envelope("shop@example.com", "sales@agents.test",
                          "From: shop@example.com\r\nTo: sales@agents.test\r\n"
                          "Subject: Your receipt #48291\r\n\r\n"
                          "Total: $1,299.00\r\nCard ending 4821\r\nCall (555) 010-0199.\r\n"))
                .find("250 2.0.0"),
            std::string::npos);

  auto list = messages("identity=" + sales.uuid);
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ(list->getObject(0)->getValue<std::string>("extracted_code"), "482913");
  EXPECT_EQ(list->getObject(1)->getValue<std::string>("extracted_code"), "730521");
  ASSERT_TRUE(list->getObject(2)->has("extracted_code"));
  EXPECT_TRUE(list->getObject(2)->isNull("extracted_code"));
  auto full = message(list->getObject(0)->getValue<std::string>("id"));
  EXPECT_EQ(full->getValue<std::string>("extracted_code"), "482913");
  auto receipt = message(list->getObject(2)->getValue<std::string>("id"));
  ASSERT_TRUE(receipt->has("extracted_code"));
  EXPECT_TRUE(receipt->isNull("extracted_code"));
  auto thread =
      call("GET", "/api/email-inbox/" + full->getValue<std::string>("thread_id") + "/").json();
  EXPECT_EQ(thread->getArray("messages")->getObject(0)->getValue<std::string>("extracted_code"),
            "482913");

  // Mail sent from here: the sent message and the copy delivered locally both carry it.
  auto sent = call("POST", "/api/email-messages/compose/?identity=" + sales.uuid,
                   R"({"to_email":"buyer@agents.test","subject":"Your PIN",)"
                   R"("content":"Your new PIN is 6104. Keep it safe."})");
  ASSERT_EQ(sent.status, 201) << sent.body;
  EXPECT_EQ(sent.json()->getValue<std::string>("extracted_code"), "6104");
  auto at_buyer = messages("identity=" + buyer.uuid);
  ASSERT_EQ(at_buyer->size(), 1u);
  EXPECT_EQ(at_buyer->getObject(0)->getValue<std::string>("extracted_code"), "6104");
  auto outgoing = messages("identity=" + sales.uuid + "&direction=outgoing");
  ASSERT_EQ(outgoing->size(), 1u);
  EXPECT_EQ(outgoing->getObject(0)->getValue<std::string>("extracted_code"), "6104");

  const std::string stream =
      eventStream(svcd_->port(), key_, "last_event_id=0&types=email.received",
                  {R"("extracted_code":"482913")", R"("extracted_code":null)"});
  EXPECT_NE(stream.find(R"("extracted_code":"482913")"), std::string::npos) << stream;
  EXPECT_NE(stream.find(R"("extracted_code":null)"), std::string::npos) << stream;
}

TEST_F(Email, MimeStructuresCharsetsAndMalformedParts) {
  Ident sales = identity("Sales", "sales");
  // multipart/mixed holding multipart/alternative (text + html), a Latin-1 text part in QP, and
  // an attachment whose base64 is broken.
  const std::string data =
      "From: Bob <bob@example.com>\r\nTo: sales@agents.test\r\nSubject: Nested\r\n"
      "Message-ID: <nested-1@example.com>\r\nMIME-Version: 1.0\r\n"
      "Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\npreamble\r\n"
      "--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n"
      "--inner\r\nContent-Type: text/plain; charset=iso-8859-1\r\n"
      "Content-Transfer-Encoding: quoted-printable\r\n\r\nGr=FC=DFe, soft=\r\nbreak\r\n"
      "--inner\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Gr\xc3\xbc\xc3\x9f"
      "e</p>\r\n--inner--\r\n"
      "--outer\r\nContent-Type: application/octet-stream; name=\"data.bin\"\r\n"
      "Content-Transfer-Encoding: base64\r\n\r\nAAEC!!!Aw==\r\n--outer--\r\n";
  EXPECT_NE(
      smtp(envelope("bob@example.com", "sales@agents.test", data)).find("250 2.0.0 Ok: stored"),
      std::string::npos);
  // No boundary at all, 8-bit Latin-1 in a header, and nesting 40 deep.
  std::string deep =
      "From: eve@example.com\r\nTo: sales@agents.test\r\nSubject: Deep \xe9t\xe9\r\n"
      "Content-Type: multipart/mixed; boundary=b0\r\n\r\n";
  for (int i = 1; i < 40; ++i) {
    deep += "--b" + std::to_string(i - 1) + "\r\nContent-Type: multipart/mixed; boundary=b" +
            std::to_string(i) + "\r\n\r\n";
  }
  deep += "--b39\r\nContent-Type: text/plain\r\n\r\nbottom\r\n";
  auto answer = smtp(envelope("eve@example.com", "sales@agents.test", deep) +
                     "");  // accepted and stored safely, or refused: never a crash
  EXPECT_NE(answer.find("250 2.0.0 Ok: stored"), std::string::npos) << answer;
  std::string no_boundary =
      "From: eve@example.com\r\nTo: sales@agents.test\r\nSubject: nb\r\n"
      "Content-Type: multipart/mixed\r\n\r\njust text\r\n";
  EXPECT_NE(smtp(envelope("eve@example.com", "sales@agents.test", no_boundary)).find("250 2.0.0"),
            std::string::npos);

  auto list = messages("identity=" + sales.uuid);
  ASSERT_EQ(list->size(), 3u);
  auto nested = message(list->getObject(0)->getValue<std::string>("id"));
  EXPECT_EQ(nested->getValue<std::string>("content").substr(0, 22), "Grüße, softbreak");
  EXPECT_EQ(nested->getValue<std::string>("html"), "<p>Grüße</p>");
  EXPECT_EQ(nested->getValue<std::string>("message_id"), "<nested-1@example.com>");
  auto att = nested->getArray("attachments");
  ASSERT_EQ(att->size(), 1u);
  EXPECT_EQ(att->getObject(0)->getValue<std::string>("filename"), "data.bin");
  EXPECT_EQ(att->getObject(0)->getValue<int>("size"), 4);  // the valid base64 around the junk
  auto deep_msg = message(list->getObject(1)->getValue<std::string>("id"));
  EXPECT_EQ(deep_msg->getValue<std::string>("subject"), "Deep été");
  auto nb = message(list->getObject(2)->getValue<std::string>("id"));
  EXPECT_NE(nb->getValue<std::string>("content").find("just text"), std::string::npos);
  EXPECT_EQ(svcd_->get("/api/health/").status, 200);
}

TEST_F(Email, SmtpProtocolAndRefusals) {
  Ident sales = identity("Sales", "sales");
  auto a = smtp("MAIL FROM:<a@example.com>\r\nQUIT\r\n");
  EXPECT_NE(a.find("220 "), std::string::npos);
  EXPECT_NE(a.find("503 5.5.1 Say EHLO first"), std::string::npos) << a;

  a = smtp("EHLO c.example\r\nVRFY sales\r\nNOOP\r\nRSET\r\nFOO\r\nQUIT\r\n");
  for (const char* want : {"250-PIPELINING", "250-SIZE ", "250-8BITMIME", "252 2.5.2",
                           "250 2.0.0 Ok", "500 5.5.2", "221 2.0.0"}) {
    EXPECT_NE(a.find(want), std::string::npos) << want << "\n" << a;
  }
  EXPECT_EQ(a.find("STARTTLS"), std::string::npos) << "no certificate, no STARTTLS";

  a = smtp(
      "EHLO c.example\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<nobody@agents.test>\r\n"
      "RCPT TO:<not an address>\r\nDATA\r\nQUIT\r\n");
  EXPECT_NE(a.find("550 5.1.1 <nobody@agents.test>"), std::string::npos) << a;
  EXPECT_NE(a.find("501 5.1.3"), std::string::npos) << a;
  EXPECT_NE(a.find("554 5.5.1 No valid recipients"), std::string::npos) << a;

  a = smtp("EHLO c.example\r\nMAIL FROM:<a@example.com> SIZE=999999999999\r\nQUIT\r\n");
  EXPECT_NE(a.find("552 5.3.4"), std::string::npos) << a;

  // Bare LF and bare CR end nothing and get the whole message refused: the smuggled second
  // message after "\n.\r\n" is never read as a message of its own.
  const std::string smuggle =
      "Subject: first\r\n\r\nhello\n.\r\nMAIL FROM:<evil@example.com>\r\n"
      "RCPT TO:<sales@agents.test>\r\nDATA\r\nSubject: smuggled\r\n\r\nx";
  a = smtp(envelope("a@example.com", "sales@agents.test", smuggle));
  EXPECT_NE(a.find("550 5.6.0"), std::string::npos) << a;
  a = smtp(envelope("a@example.com", "sales@agents.test", "Subject: cr\r\n\r\nbare\rcr"));
  EXPECT_NE(a.find("550 5.6.0"), std::string::npos) << a;
  a = smtp(envelope("a@example.com", "sales@agents.test",
                    "Subject: long\r\n\r\n" + std::string(1500, 'x') + ".\r\n"));
  EXPECT_NE(a.find("550 5.6.0 Message refused: a line is longer"), std::string::npos) << a;
  EXPECT_EQ(messages("identity=" + sales.uuid)->size(), 0u) << "nothing refused was stored";

  // Dot-stuffing is undone; a leading-dot line survives.
  a = smtp(envelope("a@example.com", "sales@agents.test", "Subject: dots\r\n\r\n..hidden\r\nend"));
  EXPECT_NE(a.find("250 2.0.0 Ok: stored"), std::string::npos) << a;
  auto list = messages("identity=" + sales.uuid);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(
      message(list->getObject(0)->getValue<std::string>("id"))->getValue<std::string>("content"),
      ".hidden\r\nend\r\n");
}

TEST_F(Email, RecipientLimitsSizeLimitsAndTimeouts) {
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.smtp.max_recipients=2", "--set", "email.smtp.max_message_bytes=2000",
             "--set", "email.smtp.timeout_seconds=8", "--set",
             "email.smtp.idle_timeout_seconds=1"});
  identity("A", "a");
  identity("B", "b");
  identity("C", "c");
  auto a = smtp(
      "EHLO c.example\r\nMAIL FROM:<x@example.com>\r\nRCPT TO:<a@agents.test>\r\n"
      "RCPT TO:<b@agents.test>\r\nRCPT TO:<c@agents.test>\r\nRSET\r\nQUIT\r\n");
  EXPECT_NE(a.find("452 4.5.3 Too many recipients"), std::string::npos) << a;
  a = smtp(envelope(
      "x@example.com", "a@agents.test",
      "Subject: big\r\n\r\n" + std::string(40, 'y') + "\r\n" + [] {
        std::string s;
        for (int i = 0; i < 100; ++i) s += std::string(60, 'z') + "\r\n";
        return s;
      }()));
  EXPECT_NE(a.find("552 5.3.4"), std::string::npos) << a;
  // A client that says nothing outside a mail transaction is let go after the short timeout...
  // (1 s, well before the full 8 s.)
  auto start = std::chrono::steady_clock::now();
  a = rawExchange(smtp_port_, "EHLO slow.example\r\n", 30000);
  EXPECT_NE(a.find("421 4.4.2"), std::string::npos) << a;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(5000));
  // ...and inside one after the full timeout.
  start = std::chrono::steady_clock::now();
  a = rawExchange(smtp_port_, "EHLO slow.example\r\nMAIL FROM:<x@example.com>\r\n", 30000);
  EXPECT_NE(a.find("421 4.4.2"), std::string::npos) << a;
  EXPECT_GT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(7500));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20000));
}

TEST_F(Email, LocalDeliveryThreadsRepliesAndHidesBcc) {
  Ident a = identity("Alice", "alice");
  Ident b = identity("Bob", "bob");
  Ident c = identity("Carol", "carol");
  Ident d = identity("Dave", "dave");
  auto sent = call("POST", "/api/email-messages/compose/?identity=" + a.uuid,
                   R"({"to_email":"Bob <bob@agents.test>","cc":["carol@agents.test"],)"
                   R"("bcc":"dave@agents.test","subject":"Plan","content":"Shall we?"})");
  ASSERT_EQ(sent.status, 201) << sent.body;
  auto s = sent.json();
  EXPECT_EQ(s->getValue<std::string>("status"), "sent");
  EXPECT_EQ(s->getValue<std::string>("direction"), "outgoing");
  EXPECT_EQ(s->getArray("bcc")->getElement<std::string>(0), "dave@agents.test");

  auto at_bob = messages("identity=" + b.uuid);
  ASSERT_EQ(at_bob->size(), 1u);
  auto bm = message(at_bob->getObject(0)->getValue<std::string>("id"));
  EXPECT_EQ(bm->getValue<std::string>("message_id"), s->getValue<std::string>("message_id"));
  EXPECT_FALSE(bm->has("bcc")) << "incoming messages never show a bcc";
  EXPECT_EQ(bm->getArray("cc")->getElement<std::string>(0), "carol@agents.test");
  EXPECT_FALSE(bm->getValue<bool>("is_read"));
  ASSERT_EQ(messages("identity=" + d.uuid)->size(), 1u) << "the blind copy arrived";

  // Bob replies all: to Alice (the sender), cc Carol; never Bob himself, never Dave.
  auto r = call("POST", "/api/email-messages/" + bm->getValue<std::string>("id") + "/reply-all/",
                R"({"content":"Yes."})");
  ASSERT_EQ(r.status, 201) << r.body;
  auto rj = r.json();
  EXPECT_EQ(rj->getValue<std::string>("subject"), "Re: Plan");
  EXPECT_EQ(rj->getValue<std::string>("in_reply_to"), s->getValue<std::string>("message_id"));
  std::set<std::string> to, cc;
  for (auto& v : *rj->getArray("to_email")) to.insert(v.toString());
  for (auto& v : *rj->getArray("cc")) cc.insert(v.toString());
  EXPECT_EQ(to, (std::set<std::string>{"alice@agents.test"}));
  EXPECT_EQ(cc, (std::set<std::string>{"carol@agents.test"}));
  EXPECT_EQ(rj->getValue<std::string>("thread_id"), bm->getValue<std::string>("thread_id"));

  // Alice sees one thread of two messages; the reply references the original.
  auto threads = call("GET", "/api/email-inbox/?identity=" + a.uuid).json()->getArray("results");
  ASSERT_EQ(threads->size(), 1u);
  EXPECT_EQ(threads->getObject(0)->getValue<int>("message_count"), 2);
  EXPECT_EQ(threads->getObject(0)->getValue<int>("unread_count"), 1);
  auto thread = call("GET", "/api/email-inbox/" +
                                threads->getObject(0)->getValue<std::string>("thread_id") + "/")
                    .json();
  auto msgs = thread->getArray("messages");
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ(msgs->getObject(0)->getValue<std::string>("direction"), "outgoing");
  EXPECT_EQ(msgs->getObject(1)->getValue<std::string>("content"), "Yes.");
  auto refs = msgs->getObject(1)->getArray("references");
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_EQ(refs->getElement<std::string>(0), s->getValue<std::string>("message_id"));

  // Alice replies: one Re:, never two; reply goes to Bob only.
  auto rr = call(
      "POST", "/api/email-messages/" + msgs->getObject(1)->getValue<std::string>("id") + "/reply/",
      R"({"content":"Good."})");
  ASSERT_EQ(rr.status, 201) << rr.body;
  EXPECT_EQ(rr.json()->getValue<std::string>("subject"), "Re: Plan");
  EXPECT_EQ(rr.json()->getArray("to_email")->size(), 1u);
  EXPECT_EQ(rr.json()->getArray("references")->size(), 2u);

  // Forward carries the attachments and gets one Fwd:.
  auto up =
      http(svcd_->port(), "POST", "/api/email-attachments/?filename=notes.txt&identity=" + c.uuid,
           "hello notes", {{"Authorization", "Bearer " + key_}, {"Content-Type", "text/plain"}});
  ASSERT_EQ(up.status, 201) << up.body;
  std::string att = up.json()->getValue<std::string>("uuid");
  auto with = call("POST", "/api/email-messages/compose/?identity=" + c.uuid,
                   "{\"to_email\":[\"alice@agents.test\"],\"subject\":\"Fwd: notes\",\"content\":"
                   "\"see\",\"attachment_uuids\":[\"" +
                       att + "\"]}");
  ASSERT_EQ(with.status, 201) << with.body;
  auto fw =
      call("POST", "/api/email-messages/" + with.json()->getValue<std::string>("id") + "/forward/",
           R"({"to_email":"dave@agents.test","content":"FYI"})");
  ASSERT_EQ(fw.status, 201) << fw.body;
  EXPECT_EQ(fw.json()->getValue<std::string>("subject"), "Fwd: notes");
  EXPECT_EQ(fw.json()->getArray("attachments")->size(), 1u);
  EXPECT_NE(fw.json()->getValue<std::string>("content").find("Forwarded message"),
            std::string::npos);
  auto at_dave =
      messages("identity=" + d.uuid + "&thread_id=" +
               messages("identity=" + d.uuid)->getObject(1)->getValue<std::string>("thread_id"));
  ASSERT_GE(at_dave->size(), 1u);
  auto dm = message(at_dave->getObject(0)->getValue<std::string>("id"));
  ASSERT_EQ(dm->getArray("attachments")->size(), 1u);
  auto dl =
      call("GET", "/api/email-attachments/" +
                      dm->getArray("attachments")->getObject(0)->getValue<std::string>("uuid") +
                      "/download/?identity=" + d.uuid);
  EXPECT_EQ(dl.body, "hello notes");
}

TEST_F(Email, SendingValidationAndFences) {
  Ident a = identity("Alice", "alice");
  Ident b = identity("Bob", "bob");
  const std::string compose = "/api/email-messages/compose/?identity=" + a.uuid;
  auto expectInvalid = [&](const std::string& body, const std::string& field) {
    auto r = call("POST", compose, body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    if (r.status == 400) {
      EXPECT_TRUE(r.json()->getObject("errors")->has(field)) << r.body;
    }
  };
  expectInvalid(R"({"subject":"s","content":"c"})", "to_email");
  expectInvalid(R"({"to_email":"bob@agents.test","content":"c"})", "subject");
  expectInvalid(R"({"to_email":"bob@agents.test","subject":"s"})", "content");
  expectInvalid(
      R"({"to_email":"bob@agents.test","subject":"a\r\nBcc: x@evil.example","content":"c"})",
      "subject");
  expectInvalid(
      R"({"to_email":"bob@agents.test\r\nBcc: x@evil.example","subject":"s","content":"c"})",
      "to_email");
  expectInvalid(R"({"to_email":"not-an-address","subject":"s","content":"c"})", "to_email");
  expectInvalid(R"({"to_email":"x@-bad-.example","subject":"s","content":"c"})", "to_email");
  expectInvalid(R"({"to_email":42,"subject":"s","content":"c"})", "to_email");
  expectInvalid(R"({"to_email":"ghost@agents.test","subject":"s","content":"c"})", "to_email");
  expectInvalid(
      R"({"to_email":"bob@agents.test","subject":"s","content":"c","attachment_uuids":["00000000-0000-4000-8000-000000000000"]})",
      "attachment_uuids");
  std::string many = "[";
  for (int i = 0; i < 51; ++i)
    many += (i ? ",\"" : "\"") + std::string("r") + std::to_string(i) + "@remote.example\"";
  expectInvalid(R"({"to_email":)" + many + R"(],"subject":"s","content":"c"})", "to_email");
  EXPECT_EQ(call("POST", "/api/email-messages/compose/",
                 R"({"to_email":"bob@agents.test","subject":"s","content":"c"})")
                .code(),
            "identity_required");
  // No relay configured: mail for other servers is refused before anything is stored, with a
  // 4xx an agent does not retry (it stays so until the operator configures a relay).
  auto remote =
      call("POST", compose, R"({"to_email":"x@remote.example","subject":"s","content":"c"})");
  EXPECT_EQ(remote.status, 422) << remote.body;
  EXPECT_EQ(remote.code(), "relay_not_configured");
  EXPECT_EQ(remote.header("retry-after"), "") << "nothing passes by waiting";
  const std::string remote_detail = remote.json()->getValue<std::string>("detail");
  EXPECT_NE(remote_detail.find("x@remote.example"), std::string::npos) << remote_detail;
  EXPECT_NE(remote_detail.find("operator"), std::string::npos) << remote_detail;
  EXPECT_EQ(messages("identity=" + a.uuid)->size(), 0u);

  // Fences: another account cannot see or answer Alice's mail; an identity key sees only its own.
  ASSERT_EQ(call("POST", compose, R"({"to_email":"bob@agents.test","subject":"hi","content":"c"})")
                .status,
            201);
  std::string bob_msg = messages("identity=" + b.uuid)->getObject(0)->getValue<std::string>("id");
  std::string stranger = signIn("stranger@example.com");
  EXPECT_EQ(call("GET", "/api/email-messages/" + bob_msg + "/", "", stranger).status, 404);
  EXPECT_EQ(
      call("POST", "/api/email-messages/" + bob_msg + "/reply/", R"({"content":"x"})", stranger)
          .status,
      404);
  EXPECT_EQ(messages("", stranger)->size(), 0u);
  auto key =
      call("POST", "/api/auth/keys/identity/", "{\"identity\":\"" + a.uuid + "\",\"label\":\"a\"}");
  ASSERT_EQ(key.status, 201) << key.body;
  std::string alice_key = key.json()->getValue<std::string>("key");
  EXPECT_EQ(call("GET", "/api/email-messages/" + bob_msg + "/", "", alice_key).status, 404);
  EXPECT_EQ(
      call("POST", "/api/email-messages/" + bob_msg + "/reply/", R"({"content":"x"})", alice_key)
          .status,
      404);
  EXPECT_EQ(messages("", alice_key)->size(), 1u) << "Alice's own sent message only";
  EXPECT_EQ(call("GET", "/api/email-inbox/?identity=" + b.uuid, "", alice_key).status, 403);
}

// An identity's sending is limited per hour and per day; past it, 429 in the contract's
// throttled shape, with how long to wait, and nothing is sent.
TEST_F(Email, SendingLimitAnswers429WithRetryAfter) {
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.send.per_hour=3"});
  Ident a = identity("Alice", "alice");
  Ident b = identity("Bob", "bob");
  composeMany(a, b.address, 3);
  auto r = call("POST", "/api/email-messages/compose/?identity=" + a.uuid,
                "{\"to_email\":\"" + b.address + "\",\"subject\":\"n3\",\"content\":\"c\"}");
  ASSERT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(r.json()->getValue<std::string>("code"), "throttled");
  const int wait = r.json()->getValue<int>("retry_after_seconds");
  EXPECT_GT(wait, 3000);  // the oldest of the three leaves the hour's window in about an hour
  EXPECT_LE(wait, 3601);
  EXPECT_EQ(r.header("retry-after"), std::to_string(wait));
  EXPECT_NE(r.json()->getValue<std::string>("detail").find("3 an hour"), std::string::npos)
      << r.body;
  EXPECT_EQ(messages("identity=" + a.uuid + "&direction=outgoing")->size(), 3u);
}

TEST_F(Email, ReadStateListsFiltersAndCursor) {
  Ident a = identity("Alice", "alice");
  Ident b = identity("Bob", "bob");
  composeMany(a, "bob@agents.test", 5);
  if (HasFatalFailure()) return;
  auto all = messages("identity=" + b.uuid);
  ASSERT_EQ(all->size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(all->getObject(i)->getValue<std::string>("subject"), "n" + std::to_string(i));
    EXPECT_FALSE(all->getObject(i)->has("content")) << "lists leave out bodies";
  }
  // created_after is strict: the second message's time gives the last three.
  std::string t1 = all->getObject(1)->getValue<std::string>("created_dt");
  auto after = messages("identity=" + b.uuid + "&created_after=" + t1);
  ASSERT_EQ(after->size(), 3u);
  EXPECT_EQ(after->getObject(0)->getValue<std::string>("subject"), "n2");
  EXPECT_EQ(call("GET", "/api/email-messages/?created_after=yesterday").status, 400);
  EXPECT_EQ(call("GET", "/api/email-messages/?direction=sideways").status, 400);
  EXPECT_EQ(call("GET", "/api/email-messages/?is_read=maybe").status, 400);

  auto page = call("GET", "/api/email-messages/?identity=" + b.uuid + "&limit=2&offset=2").json();
  EXPECT_EQ(page->getValue<int>("count"), 5);
  EXPECT_EQ(page->getArray("results")->getObject(0)->getValue<std::string>("subject"), "n2");
  EXPECT_FALSE(page->isNull("next"));
  EXPECT_FALSE(page->isNull("previous"));
  EXPECT_EQ(messages("direction=outgoing&identity=" + a.uuid)->size(), 5u);
  EXPECT_EQ(messages("direction=incoming&identity=" + a.uuid)->size(), 0u);
  EXPECT_EQ(messages("from_email=alice@agents.test&identity=" + b.uuid)->size(), 5u);

  const std::string id = all->getObject(0)->getValue<std::string>("id");
  EXPECT_EQ(call("PUT", "/api/email-messages/" + id + "/", "{}").status, 400);
  EXPECT_EQ(call("PATCH", "/api/email-messages/" + id + "/", R"({"is_read":"yes"})").status, 400);
  auto put = call("PUT", "/api/email-messages/" + id + "/", R"({"is_read":true})");
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_TRUE(put.json()->getValue<bool>("is_read"));
  EXPECT_EQ(messages("is_read=false&identity=" + b.uuid)->size(), 4u);
  auto unread = call("GET", "/api/email-inbox/?has_unread=true&identity=" + b.uuid).json();
  EXPECT_EQ(unread->getValue<int>("count"), 4);
  auto read_threads = call("GET", "/api/email-inbox/?has_unread=false&identity=" + b.uuid).json();
  EXPECT_EQ(read_threads->getValue<int>("count"), 1);
  ASSERT_EQ(call("PATCH", "/api/email-messages/" + id + "/", R"({"is_read":false})").status, 200);
  EXPECT_EQ(call("GET", "/api/email-inbox/?has_unread=false&identity=" + b.uuid)
                .json()
                ->getValue<int>("count"),
            0);
  EXPECT_EQ(call("GET", "/api/email-inbox/00000000-0000-4000-8000-000000000000/").status, 404);
}

// The routes' declarations, checked by the kernel before a handler runs: an unknown field or
// parameter is refused naming it (the issue's PATCH {"subject"} answered 200 and changed nothing),
// every problem is reported in one answer, and an enum's error lists what it allows.
TEST_F(Email, DeclaredShapesRefuseUnknownFieldsAndParametersAllAtOnce) {
  Ident a = identity("Alice", "alice");
  identity("Bob", "bob");
  // @return the refusal's errors, field by field (its first message); {} when not a 400.
  auto refusal = [](const HttpReply& r) {
    std::map<std::string, std::string> out;
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.code(), "invalid") << r.body;
    if (r.status != 400) return out;
    auto errors = r.json()->getObject("errors");
    for (const auto& name : errors ? errors->getNames() : std::vector<std::string>{}) {
      out[name] = errors->getArray(name)->getElement<std::string>(0);
    }
    return out;
  };
  const std::string compose = "/api/email-messages/compose/?identity=" + a.uuid;

  // Unknown fields, on a body that is otherwise right: nothing is sent.
  auto extra = refusal(
      call("POST", compose,
           R"({"to_email":"bob@agents.test","subject":"s","content":"c","html":"<p>c</p>"})"));
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_NE(extra["html"].find("unknown field"), std::string::npos) << extra["html"];
  EXPECT_NE(extra["html"].find("to_email"), std::string::npos) << "names what it takes";
  EXPECT_EQ(messages("identity=" + a.uuid)->size(), 0u);

  // Several problems in one answer: a missing field, two wrong types, a bad element, an unknown.
  auto many = refusal(call(
      "POST", compose, R"({"subject":5,"content":null,"attachment_uuids":["x"],"sender":"a"})"));
  EXPECT_EQ(many.size(), 5u);
  EXPECT_EQ(many["to_email"], "this field is required");
  EXPECT_EQ(many["subject"], "must be a string");
  EXPECT_EQ(many["content"], "must be a string, not null");
  EXPECT_EQ(many["attachment_uuids[0]"], "must be a UUID");
  EXPECT_NE(many["sender"].find("unknown field"), std::string::npos);

  // Unknown and bad query parameters, all named; an enum's error lists the values it allows.
  auto query = refusal(call("GET", "/api/email-messages/?wait=true&q=&limit=0&direction=sideways"));
  EXPECT_EQ(query.size(), 4u);
  EXPECT_NE(query["wait"].find("unknown parameter"), std::string::npos) << query["wait"];
  EXPECT_NE(query["wait"].find("created_after"), std::string::npos) << "names what it takes";
  EXPECT_NE(query["q"].find("unknown parameter"), std::string::npos);
  EXPECT_EQ(query["limit"], "must be at least 1");
  EXPECT_EQ(query["direction"], "must be one of: incoming, outgoing");
  EXPECT_EQ(refusal(call("GET", "/api/email-inbox/?unread=true")).count("unread"), 1u);
  EXPECT_EQ(refusal(call("GET", "/api/email/?identity=" + a.uuid + "&address=x")).count("address"),
            1u);
  EXPECT_EQ(refusal(call("GET", "/api/domains/?kind=custom")).count("kind"), 1u);
  EXPECT_EQ(refusal(call("GET", "/api/email/check-availability/"))["email"],
            "this parameter is required");

  // The issue's PATCH: a field a message does not have is refused, not ignored.
  composeMany(a, "bob@agents.test", 1);
  const std::string id = messages("identity=" + a.uuid)->getObject(0)->getValue<std::string>("id");
  auto patch = refusal(call("PATCH", "/api/email-messages/" + id + "/", R"({"subject":"x"})"));
  EXPECT_NE(patch["subject"].find("this object takes: is_read"), std::string::npos)
      << patch["subject"];
  EXPECT_EQ(refusal(call("PUT", "/api/email-messages/" + id + "/", "{}"))["is_read"],
            "this field is required");
  auto reply = refusal(call("POST", "/api/email-messages/" + id + "/reply/",
                            R"({"content":"c","to_email":"x@agents.test","subject":"s"})"));
  EXPECT_EQ(reply.size(), 2u) << "a reply's recipients and subject come from its parent";
  auto domain = refusal(call("POST", "/api/domains/", R"({"domain":"example.org"})"));
  EXPECT_EQ(domain["name"], "this field is required");
  EXPECT_NE(domain["domain"].find("unknown field"), std::string::npos);
  EXPECT_EQ(refusal(call("POST", "/api/email/", R"({"identity":"nope","email":""})")).size(), 2u);
}

TEST_F(Email, AttachmentUploadsAndLimits) {
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.attachments.max_bytes=1000"});
  Ident a = identity("Alice", "alice");
  const std::string multipart =
      "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; "
      "filename=\"r\xc3\xa9sum\xc3\xa9.txt\"\r\n"
      "Content-Type: text/plain\r\n\r\nmy cv\r\n--XyZ--\r\n";
  auto up = http(
      svcd_->port(), "POST", "/api/email-attachments/", multipart,
      {{"Authorization", "Bearer " + key_}, {"Content-Type", "multipart/form-data; boundary=XyZ"}});
  ASSERT_EQ(up.status, 201) << up.body;
  auto j = up.json();
  EXPECT_EQ(j->getValue<std::string>("filename"), "résumé.txt");
  EXPECT_EQ(j->getValue<int>("size"), 5);
  auto rec = call("GET", "/api/email-attachments/" + j->getValue<std::string>("uuid") + "/");
  EXPECT_EQ(rec.json()->getValue<std::string>("content_type"), "text/plain");
  // A body cut short before its closing boundary is refused, not stored truncated.
  const std::string cut_short = multipart.substr(0, multipart.find("\r\n--XyZ--"));
  auto truncated = http(
      svcd_->port(), "POST", "/api/email-attachments/", cut_short,
      {{"Authorization", "Bearer " + key_}, {"Content-Type", "multipart/form-data; boundary=XyZ"}});
  EXPECT_EQ(truncated.status, 400) << truncated.body;
  EXPECT_EQ(truncated.code(), "invalid");
  EXPECT_TRUE(truncated.json()->getObject("errors")->has("body")) << truncated.body;
  auto big = http(
      svcd_->port(), "POST", "/api/email-attachments/?filename=big.bin", std::string(1001, 'x'),
      {{"Authorization", "Bearer " + key_}, {"Content-Type", "application/octet-stream"}});
  EXPECT_EQ(big.status, 413) << big.body;
  auto unnamed = http(svcd_->port(), "POST", "/api/email-attachments/", "x",
                      {{"Authorization", "Bearer " + key_}, {"Content-Type", "text/plain"}});
  EXPECT_EQ(unnamed.status, 400);
  auto traversal = http(svcd_->port(), "POST", "/api/email-attachments/?filename=..%2F..%2Fetc",
                        "x", {{"Authorization", "Bearer " + key_}, {"Content-Type", "text/plain"}});
  EXPECT_EQ(traversal.status, 400);
  std::string stranger = signIn("stranger@example.com");
  EXPECT_EQ(call("GET", "/api/email-attachments/" + j->getValue<std::string>("uuid") + "/download/",
                 "", stranger)
                .status,
            404);
}

TEST_F(Email, RelaySendsThroughSmtpSinkWithThreadingHeadersAndNoBcc) {
  const std::string dump = Poco::TemporaryFile::tempName("/tmp/") + "-sink";
  Poco::File(dump).createDirectories();
  ASSERT_EQ(::chmod(dump.c_str(), 0777), 0);
  Child sink(
      [&](int port) {
        return "smtp-sink -u nobody -d " + dump + "/%M. 127.0.0.1:" + std::to_string(port) + " 10";
      },
      Ready::kTcp);
  const int sink_port = sink.port();
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.relay.host=127.0.0.1", "--set",
             "email.relay.port=" + std::to_string(sink_port), "--set",
             "email.relay.starttls=false"});
  Ident a = identity("Alice", "alice");
  // Someone outside writes in; Alice replies all through the relay.
  const std::string data =
      "From: Zed <zed@remote.example>\r\nTo: alice@agents.test, yan@remote.example\r\n"
      "Subject: Re: Quote\r\nMessage-ID: <q2@remote.example>\r\nReferences: <q1@remote.example>\r\n"
      "\r\nWhat's the price?";
  ASSERT_NE(smtp(envelope("zed@remote.example", "alice@agents.test", data)).find("250 2.0.0"),
            std::string::npos);
  std::string in_id = messages("identity=" + a.uuid)->getObject(0)->getValue<std::string>("id");
  auto r = call("POST", "/api/email-messages/" + in_id + "/reply-all/",
                R"({"content":"Ten.\n.\nReally.","bcc":"boss@remote.example"})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()->getValue<std::string>("status"), "queued");
  EXPECT_EQ(r.json()->getValue<std::string>("subject"), "Re: Quote");
  const std::string out_id = r.json()->getValue<std::string>("id");
  std::string status;
  for (int i = 0; i < 300 && status != "sent"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = message(out_id)->getValue<std::string>("status");
  }
  EXPECT_EQ(status, "sent");
  // With VERP, one transaction per recipient: three copies, each with one envelope recipient.
  std::vector<std::string> files;
  Poco::File(dump).list(files);
  ASSERT_EQ(files.size(), 3u);
  std::string raw, all;
  for (const auto& f : files) {
    std::ifstream in(dump + "/" + f);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string one = ss.str();  // smtp-sink writes the lines it received with LF ends
    one.erase(std::remove(one.begin(), one.end(), '\r'), one.end());
    EXPECT_EQ(one.find("X-Rcpt-Args:"), one.rfind("X-Rcpt-Args:")) << one;
    if (one.find("X-Rcpt-Args: <zed@remote.example>") != std::string::npos) raw = one;
    if (one.find("X-Rcpt-Args: <boss@remote.example>") != std::string::npos) {
      EXPECT_EQ(one.find("boss@"), one.rfind("boss@")) << "boss appears in the envelope only";
    }
    all += one;
  }
  Poco::File(dump).remove(true);
  ASSERT_FALSE(raw.empty()) << all;
  EXPECT_NE(all.find("X-Rcpt-Args: <yan@remote.example>"), std::string::npos) << all;
  EXPECT_NE(all.find("X-Rcpt-Args: <boss@remote.example>"), std::string::npos)
      << "bcc is an envelope recipient";
  EXPECT_EQ(all.find("Bcc:"), std::string::npos) << all;
  EXPECT_EQ(raw.find("boss@"), std::string::npos) << "zed's copy does not name boss";
  EXPECT_NE(raw.find("In-Reply-To: <q2@remote.example>"), std::string::npos) << raw;
  EXPECT_NE(raw.find("References: <q1@remote.example>\n <q2@remote.example>"), std::string::npos)
      << raw;
  EXPECT_NE(raw.find("Subject: Re: Quote"), std::string::npos);
  EXPECT_NE(raw.find("To: zed@remote.example,\n yan@remote.example"), std::string::npos) << raw;
}

// The relay's copy carries a DKIM signature that an independent verifier (dkimpy, Debian's
// python3-dkim) accepts with the public key of the configured private key.
TEST_F(Email, OutgoingMailIsDkimSigned) {
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-dkim";
  Poco::File(dir + "/sink").createDirectories();
  ASSERT_EQ(::chmod((dir + "/sink").c_str(), 0777), 0);
  ASSERT_EQ(runCommand("openssl genrsa -out " + dir + "/key.pem 2048 && openssl rsa -in " + dir +
                       "/key.pem -pubout -outform DER -out " + dir + "/pub.der")
                .first,
            0);
  Child sink(
      [&](int port) {
        return "smtp-sink -u nobody -d " + dir + "/sink/%M. 127.0.0.1:" + std::to_string(port) +
               " 10";
      },
      Ready::kTcp);
  const int sink_port = sink.port();
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.relay.host=127.0.0.1", "--set",
             "email.relay.port=" + std::to_string(sink_port), "--set", "email.relay.starttls=false",
             "--set", "email.dkim.selector=s2026", "--set",
             "email.dkim.key_file=" + dir + "/key.pem"});
  Ident a = identity("Alice", "alice");
  auto r = call("POST", "/api/email-messages/compose/?identity=" + a.uuid,
                R"({"to_email":"Zed <zed@remote.example>","subject":"Signed   héllo","content":)"
                R"("Line one  \nline two\t\n\n\n"})");
  ASSERT_EQ(r.status, 201) << r.body;
  std::vector<std::string> files;
  for (int i = 0; i < 300 && files.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Poco::File(dir + "/sink").list(files);
  }
  ASSERT_EQ(files.size(), 1u);
  // smtp-sink stores lines with LF; the verifier gets the CRLF the message travelled with, minus
  // smtp-sink's own lines above our headers.
  const std::string script =
      "import sys, base64, dkim\n"
      "raw = open(sys.argv[1], 'rb').read().replace(b'\\r\\n', b'\\n')\n"
      "raw = raw[raw.index(b'DKIM-Signature:'):].replace(b'\\n', b'\\r\\n')\n"
      "pub = base64.b64encode(open(sys.argv[2], 'rb').read())\n"
      "def dns(name, timeout=5):\n"
      "    assert name == b's2026._domainkey.agents.test.', name\n"
      "    return b'v=DKIM1; k=rsa; p=' + pub\n"
      "ok = dkim.verify(raw, dnsfunc=dns)\n"
      "bad = dkim.verify(raw.replace(b'line two', b'line 2'), dnsfunc=dns)\n"
      "print('verified' if ok and not bad else 'FAILED', ok, bad)\n";
  std::ofstream(dir + "/verify.py") << script;
  auto [rc, out] = runCommand("/usr/bin/python3 " + dir + "/verify.py " + dir + "/sink/" +
                              files.front() + " " + dir + "/pub.der");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("verified True False"), std::string::npos) << out;
  Poco::File(dir).remove(true);
}

// STARTTLS both ways: swaks upgrades a session to svcd B's listener, and svcd A's relay reaches
// B over STARTTLS, checking B's certificate against the configured CA file.
TEST_F(Email, StartTlsOnTheListenerAndToTheRelay) {
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-tls";
  Poco::File(dir).createDirectories();
  ASSERT_EQ(runCommand("openssl req -x509 -newkey rsa:2048 -nodes -keyout " + dir +
                       "/key.pem -out " + dir +
                       "/cert.pem -days 2 -subj /CN=localhost "
                       "-addext subjectAltName=DNS:localhost,IP:127.0.0.1")
                .first,
            0);
  Svcd::Options ob;
  ob.plugins = {"auth", "identities", "email"};
  ob.args = {"--set", "email.domains=remote.test",
             "--set", "email.smtp.tls_cert_file=" + dir + "/cert.pem",
             "--set", "email.smtp.tls_key_file=" + dir + "/key.pem"};
  Svcd b(ob);
  ASSERT_TRUE(b.start()) << b.log();
  const int b_smtp = smtpPortOf(b);
  const std::string b_key = signInAt(b, "b@example.com");
  auto x = http(b.port(), "POST", "/api/identities/", R"({"name":"X","email_identifier":"x"})",
                bearer(b_key));
  ASSERT_EQ(x.status, 201) << x.body;
  const std::string x_uuid = x.json()->getValue<std::string>("uuid");

  auto [rc, out] = runCommand("swaks --server 127.0.0.1:" + std::to_string(b_smtp) +
                              " --tls --to x@remote.test --from q@a.example --body via-tls");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("250-STARTTLS"), std::string::npos) << out;
  EXPECT_NE(out.find("TLS started"), std::string::npos) << out;
  EXPECT_NE(out.find("250 2.0.0 Ok: stored"), std::string::npos) << out;

  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.relay.host=localhost", "--set",
             "email.relay.port=" + std::to_string(b_smtp), "--set", "email.relay.starttls=true",
             "--set", "email.relay.tls_ca_file=" + dir + "/cert.pem"});
  Ident a = identity("Alice", "alice");
  auto r = call("POST", "/api/email-messages/compose/?identity=" + a.uuid,
                R"({"to_email":"x@remote.test","subject":"over tls","content":"hello B"})");
  ASSERT_EQ(r.status, 201) << r.body;
  std::string status;
  for (int i = 0; i < 300 && status != "sent"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = message(r.json()->getValue<std::string>("id"))->getValue<std::string>("status");
  }
  EXPECT_EQ(status, "sent") << svcd_->log();
  auto at_b = http(b.port(), "GET", "/api/email-messages/?identity=" + x_uuid, "", bearer(b_key));
  auto results = at_b.json()->getArray("results");
  ASSERT_EQ(results->size(), 2u) << at_b.body;
  EXPECT_EQ(results->getObject(1)->getValue<std::string>("subject"), "over tls");
  EXPECT_EQ(results->getObject(1)->getValue<std::string>("from_email"), "alice@agents.test");
  Poco::File(dir).remove(true);
}

TEST_F(Email, SvcctlCreatesIdentitiesSendsListsAndReads) {
  const std::string ctl = binDir() +
                          "/svcctl --url http://127.0.0.1:" + std::to_string(svcd_->port()) +
                          " --key " + key_ + " ";
  auto [rc, created] = runCommand(ctl + "identities create 'Ops Bot' --email ops");
  ASSERT_EQ(rc, 0) << created;
  EXPECT_NE(created.find("ops@agents.test"), std::string::npos) << created;
  const std::string ops = created.substr(0, 36);
  auto [rc2, peer] = runCommand(ctl + "identities create Peer --email peer");
  ASSERT_EQ(rc2, 0) << peer;
  const std::string peer_uuid = peer.substr(0, 36);
  auto [rc3, listed] = runCommand(ctl + "identities list");
  EXPECT_EQ(rc3, 0);
  EXPECT_NE(listed.find("ops@agents.test"), std::string::npos) << listed;
  EXPECT_NE(listed.find("Ops Bot"), std::string::npos) << listed;

  const std::string file = Poco::TemporaryFile::tempName("/tmp/") + "-notes.txt";
  std::ofstream(file) << "attached words";
  auto [rc4, sent] =
      runCommand("printf 'Hello from stdin\\n' | " + ctl + "mail send --identity " + ops +
                 " --to peer@agents.test --subject 'CLI hello' --attach " + file);
  Poco::File(file).remove();
  ASSERT_EQ(rc4, 0) << sent;
  EXPECT_NE(sent.find(" sent"), std::string::npos) << sent;

  auto [rc5, inbox] = runCommand(ctl + "mail inbox --identity " + peer_uuid + " --unread");
  ASSERT_EQ(rc5, 0) << inbox;
  EXPECT_NE(inbox.find("CLI hello"), std::string::npos) << inbox;
  EXPECT_NE(inbox.find("ops@agents.test"), std::string::npos) << inbox;
  EXPECT_NE(inbox.find("1/1"), std::string::npos) << inbox;
  const std::string thread = inbox.substr(inbox.find('\n') + 1, 36);

  auto [rc6, read] = runCommand(ctl + "mail read " + thread + " --identity " + peer_uuid);
  ASSERT_EQ(rc6, 0) << read;
  EXPECT_NE(read.find("Hello from stdin"), std::string::npos) << read;
  EXPECT_NE(read.find("Attached: "), std::string::npos) << read;
  EXPECT_NE(read.find("-notes.txt (14 bytes"), std::string::npos) << read;
  auto [rc7, after] = runCommand(ctl + "mail inbox --identity " + peer_uuid + " --unread");
  EXPECT_EQ(rc7, 0);
  EXPECT_EQ(after.find("CLI hello"), std::string::npos) << "read marks the thread read\n" << after;
  auto [rc8, bad] =
      runCommand(ctl + "mail send --identity " + ops + " --to nobody --subject x --body y");
  EXPECT_NE(rc8, 0);
  EXPECT_NE(bad.find("400 invalid"), std::string::npos) << bad;
}

// smtp-sink refuses every RCPT for good (-f rcpt): the message bounces with its answer
// (email_bounces_test.cpp has the rest of bounces).
TEST_F(Email, RelayRefusalsMarkTheMessageBounced) {
  Child sink(
      [](int port) {
        return "smtp-sink -u nobody -f rcpt 127.0.0.1:" + std::to_string(port) + " 10";
      },
      Ready::kTcp);
  const int sink_port = sink.port();
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.relay.host=127.0.0.1", "--set",
             "email.relay.port=" + std::to_string(sink_port), "--set",
             "email.relay.starttls=false"});
  Ident a = identity("Alice", "alice");
  auto r = call("POST", "/api/email-messages/compose/?identity=" + a.uuid,
                R"({"to_email":"x@remote.example","subject":"s","content":"c"})");
  ASSERT_EQ(r.status, 201) << r.body;
  Poco::JSON::Object::Ptr m;
  for (int i = 0; i < 300; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    m = message(r.json()->getValue<std::string>("id"));
    if (m->getValue<std::string>("status") != "queued") break;
  }
  EXPECT_EQ(m->getValue<std::string>("status"), "bounced");
  ASSERT_FALSE(m->isNull("bounce"));
  auto b = m->getObject("bounce")->getArray("recipients")->getObject(0);
  EXPECT_EQ(b->getValue<std::string>("recipient"), "x@remote.example");
  EXPECT_EQ(b->getValue<std::string>("source"), "relay");
  EXPECT_EQ(b->getValue<std::string>("reason").rfind("RCPT answered 5", 0), 0u)
      << b->getValue<std::string>("reason");
}

TEST_F(Email, CustomDomainVerifiedAgainstDnsmasq) {
  const int dns_port = freePort();
  svcd_.reset();
  key_.clear();
  startSvcd({"--set", "email.dns.server=127.0.0.1:" + std::to_string(dns_port)});
  auto added = call("POST", "/api/domains/", R"({"name":"Example.ORG"})");
  ASSERT_EQ(added.status, 201) << added.body;
  auto d = added.json();
  EXPECT_EQ(d->getValue<std::string>("name"), "example.org");
  EXPECT_EQ(d->getValue<std::string>("status"), "pending");
  auto record = d->getObject("dns_record");
  EXPECT_EQ(record->getValue<std::string>("name"), "_svc-verification.example.org");
  const std::string value = record->getValue<std::string>("value");
  EXPECT_EQ(call("POST", "/api/domains/", R"({"name":"example.org"})").status, 409);
  EXPECT_EQ(call("POST", "/api/domains/", R"({"name":"not a domain"})").status, 400);
  EXPECT_EQ(call("POST", "/api/domains/", R"({"name":"agents.test"})").status, 409);
  auto listed = call("GET", "/api/domains/").json();
  EXPECT_EQ(listed->getValue<int>("count"), 3);
  // Not verified yet: the domain cannot carry an inbox.
  EXPECT_EQ(call("POST", "/api/identities/",
                 R"({"name":"X","email_identifier":"hi","domain":"example.org"})")
                .status,
            400);
  {
    // On the port svcd was told of: a port taken meanwhile is waited for (60 s at most).
    Child dns(
        [](int port) {
          return "dnsmasq --keep-in-foreground --no-resolv --no-hosts --bind-interfaces "
                 "--listen-address=127.0.0.1 --port=" +
                 std::to_string(port) +
                 " --user=root --pid-file= --txt-record=_svc-verification.example.org,wrong-value";
        },
        Ready::kDns, dns_port);
    auto wrong = call("POST", "/api/domains/example.org/verify/");
    EXPECT_EQ(wrong.status, 400) << wrong.body;
    EXPECT_TRUE(wrong.json()->getObject("errors")->has("dns_record"));
  }
  {
    Child dns(
        [&](int port) {
          return "dnsmasq --keep-in-foreground --no-resolv --no-hosts --bind-interfaces "
                 "--listen-address=127.0.0.1 --port=" +
                 std::to_string(port) +
                 " --user=root --pid-file= --txt-record=_svc-verification.example.org," + value;
        },
        Ready::kDns, dns_port);
    auto ok = call("POST", "/api/domains/example.org/verify/");
    ASSERT_EQ(ok.status, 200) << ok.body;
    EXPECT_EQ(ok.json()->getValue<std::string>("status"), "verified");
    // A second account proving the same domain is refused.
    std::string other = signIn("other@example.com");
    auto claim = call("POST", "/api/domains/", R"({"name":"example.org"})", other);
    ASSERT_EQ(claim.status, 201);
    EXPECT_EQ(call("POST", "/api/domains/example.org/verify/", "", other).status, 400)
        << "its token differs from the published one";
  }
  auto id = call("POST", "/api/identities/",
                 R"({"name":"X","email_identifier":"hi","domain":"example.org"})");
  ASSERT_EQ(id.status, 201) << id.body;
  EXPECT_EQ(id.json()->getObject("email")->getValue<std::string>("address"), "hi@example.org");
  EXPECT_NE(
      smtp(envelope("a@b.example", "hi@example.org", "Subject: x\r\n\r\ny")).find("250 2.0.0"),
      std::string::npos);
  EXPECT_EQ(call("DELETE", "/api/domains/example.org/").status, 409) << "an inbox still uses it";
}

TEST_F(Email, EveryAcknowledgedMessageSurvivesKill9) {
  identity("Sink", "sink");
  db_url_ = svcd_->dbUrl();
  SmtpBurst burst(smtp_port_, 4, "burst-", [](const std::string& subject) {
    return "EHLO c\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<sink@agents.test>\r\nDATA\r\nSubject: " +
           subject + "\r\n\r\nbody\r\n.\r\nQUIT\r\n";
  });
  burst.waitForSome();
  svcd_->kill9();
  const std::set<std::string> acknowledged = burst.stop();
  ASSERT_GT(acknowledged.size(), 10u);
  // The same data directory (its spool holds what was acknowledged and not yet filed) and
  // database; the files stay until the test ends.
  auto crashed = std::move(svcd_);
  startSvcd({"--set", "data.dir=" + crashed->dataDir()});
  ASSERT_NE(svcd_->log().find("SMTP spool " + crashed->dataDir()), std::string::npos)
      << svcd_->log();
  // The spool is filed in the background after the restart, a batch of up to 256 messages a
  // transaction: wait for it as long as it makes progress (under the sanitizers on a loaded
  // machine one batch on MariaDB took over a minute).
  waitForSubjects(acknowledged, "", std::chrono::seconds(300));
  EXPECT_TRUE(allFiled());  // the rest of the spool too: nothing is filed twice afterwards
  auto stored = storedSubjects("");
  for (const auto& s : acknowledged) {
    EXPECT_EQ(stored[s], 1) << s << " was acknowledged with 250";
  }
}

}  // namespace
}  // namespace svc::testing
