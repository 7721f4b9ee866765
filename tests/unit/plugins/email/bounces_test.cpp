// Bounces: reading delivery reports (RFC 3464) as Postfix, Exim and Gmail write them, the
// enhanced status codes of relay answers, VERP addresses, and which recipients of a message a
// report bounces.
#include "bounces/bounce_intake.h"
#include "bounces/dsn.h"
#include "bounces/verp.h"
#include "relay_client.h"

#include <svc/sdk/util.h>

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace svc::plugins::email {
namespace {

std::string sample(const std::string& name) {
  std::ifstream in(std::string(SVC_UNIT_TEST_DATA_DIR) + "/plugins/email/dsn/" + name,
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

std::optional<DeliveryReport> report(const std::string& raw) {
  return parseDeliveryReport(parseMessage(raw));
}

TEST(Dsn, PostfixReportWithReturnedHeaders) {
  auto r = report(sample("postfix.eml"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reporting_mta, "mail.example.org");
  EXPECT_EQ(r->original_message_id, "<orig-1@agents.test>");
  ASSERT_EQ(r->recipients.size(), 1u);
  const auto& n = r->recipients[0];
  EXPECT_EQ(n.final_recipient, "nobody@example.com");
  EXPECT_EQ(n.original_recipient, "nobody@example.com");
  EXPECT_EQ(n.action, "failed");
  EXPECT_TRUE(n.failed());
  EXPECT_EQ(n.status, "5.1.1");
  EXPECT_EQ(n.remote_mta, "mx.example.com");
  // Folded lines come back as one.
  EXPECT_EQ(n.diagnostic,
            "550 5.1.1 <nobody@example.com>: Recipient address rejected: User unknown in "
            "virtual mailbox table");
}

TEST(Dsn, EximReportWithTheReturnedMessageAndADeliveredRecipient) {
  auto r = report(sample("exim.eml"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->original_message_id, "<orig-2@agents.test>");
  ASSERT_EQ(r->recipients.size(), 2u);
  EXPECT_EQ(r->recipients[0].final_recipient, "gone@exim.example");
  EXPECT_TRUE(r->recipients[0].failed());
  EXPECT_EQ(r->recipients[0].diagnostic, "");
  EXPECT_EQ(r->recipients[1].action, "delivered");
  EXPECT_FALSE(r->recipients[1].failed());
  // Only the failed one bounces; with no Diagnostic-Code, the status says why.
  auto b = reportedBounces(*r, {"gone@exim.example", "ok@exim.example"}, 7, true);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].recipient, "gone@exim.example");
  EXPECT_EQ(b[0].status, "5.0.0");
  EXPECT_EQ(b[0].reason, "permanent failure");
  EXPECT_EQ(b[0].source, "dsn");
  EXPECT_EQ(b[0].bounced_us, 7);
}

TEST(Dsn, GmailReportNestedPartsAndTheMessageIdInItsFields) {
  auto raw = sample("gmail.eml");
  auto parsed = parseMessage(raw);
  auto r = parseDeliveryReport(parsed);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reporting_mta, "googlemail.com");
  EXPECT_EQ(r->original_message_id, "<orig-3@agents.test>") << "X-Original-Message-ID";
  ASSERT_EQ(r->recipients.size(), 1u);
  EXPECT_EQ(r->recipients[0].final_recipient, "no.such.user@gmail.com") << "lower case";
  EXPECT_EQ(r->recipients[0].status, "5.1.1");
  EXPECT_EQ(r->recipients[0].diagnostic.rfind("550-5.1.1 The email account that you tried", 0), 0u)
      << r->recipients[0].diagnostic;
  EXPECT_NE(r->recipients[0].diagnostic.find("unnecessary spaces."), std::string::npos);
  // Recipients compare in any case.
  auto b = reportedBounces(*r, {"No.Such.User@gmail.com", "other@gmail.com"}, 1, true);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].recipient, "no.such.user@gmail.com");
}

TEST(Dsn, ADelayedReportBouncesNoOne) {
  auto r = report(sample("delayed.eml"));
  ASSERT_TRUE(r) << "a base64 delivery-status part";
  EXPECT_EQ(r->original_message_id, "<orig-4@agents.test>");
  ASSERT_EQ(r->recipients.size(), 1u);
  EXPECT_EQ(r->recipients[0].action, "delayed");
  EXPECT_EQ(r->recipients[0].status, "4.4.1");
  EXPECT_FALSE(r->recipients[0].failed());
  EXPECT_TRUE(reportedBounces(*r, {"slow@example.com"}, 1, true).empty());
}

TEST(Dsn, OtherMessagesAreNotReports) {
  EXPECT_FALSE(report("Subject: hi\r\n\r\nUndelivered Mail Returned to Sender\r\n"));
  // A report of another kind (a read receipt) and a multipart/report without its status part.
  EXPECT_FALSE(
      report("Content-Type: multipart/report; report-type=disposition-notification; "
             "boundary=b\r\n\r\n--b\r\nContent-Type: message/disposition-notification"
             "\r\n\r\nFinal-Recipient: rfc822; a@b.example\r\n--b--\r\n"));
  auto empty = report(
      "Content-Type: multipart/report; report-type=delivery-status; "
      "boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b--\r\n");
  EXPECT_FALSE(empty);
}

TEST(Dsn, MalformedReportsReadWhatTheyCan) {
  // No Action: a 5.x.x status is a failure; a malformed status is none; an address that is not
  // one is left out; angle brackets are dropped.
  auto r = parseDeliveryStatus(
      "Reporting-MTA: dns; x\n\n"
      "Final-Recipient: rfc822; <A@B.example>\nStatus: 5.2.2 (mailbox full)\n\n"
      "Final-Recipient: rfc822; not an address\nAction: FAILED\nStatus: 5.x.1\n\n"
      "Final-Recipient\nAction: failed\n");
  ASSERT_EQ(r.recipients.size(), 2u);
  EXPECT_EQ(r.recipients[0].final_recipient, "a@b.example");
  EXPECT_EQ(r.recipients[0].status, "5.2.2");
  EXPECT_TRUE(r.recipients[0].failed());
  EXPECT_EQ(r.recipients[1].final_recipient, "");
  EXPECT_EQ(r.recipients[1].status, "");
  EXPECT_TRUE(r.recipients[1].failed());
  // Control characters and invalid UTF-8 in a diagnostic become one clean line.
  auto d =
      parseDeliveryStatus(std::string("Final-Recipient: rfc822; a@b.example\n"
                                      "Diagnostic-Code: smtp; 550 \x01no\xff way\n"));
  ASSERT_EQ(d.recipients.size(), 1u);
  EXPECT_EQ(d.recipients[0].diagnostic, "550 no\xEF\xBF\xBD way");
  // A report of thousands of recipients keeps the first hundred.
  std::string many;
  for (int i = 0; i < 5000; ++i)
    many += "Final-Recipient: rfc822; r" + std::to_string(i) + "@x\n\n";
  EXPECT_EQ(parseDeliveryStatus(many).recipients.size(), kMaxReportedRecipients);
  EXPECT_TRUE(parseDeliveryStatus("").recipients.empty());
  EXPECT_TRUE(parseDeliveryStatus("\n\n\n:\n  folded\n").recipients.empty());
}

TEST(Dsn, EnhancedStatusOfRelayAnswers) {
  EXPECT_EQ(enhancedStatus("550 5.1.1 <x@y>: Recipient address rejected"), "5.1.1");
  EXPECT_EQ(enhancedStatus("550-5.7.1 Rejected\n550 5.7.1 by policy"), "5.7.1");
  EXPECT_EQ(enhancedStatus("554 Transaction failed"), "5.0.0");
  EXPECT_EQ(enhancedStatus("451 4.3.0 try later"), "4.3.0");
  EXPECT_EQ(enhancedStatus("550 4.1.1 mismatched class"), "5.0.0");
  EXPECT_EQ(enhancedStatus("250 ok"), "");
  EXPECT_EQ(enhancedStatus(""), "");
  EXPECT_EQ(statusMeaning("5.1.1"), "bad destination mailbox address");
  EXPECT_EQ(statusMeaning("5.9.9"), "permanent failure");
  EXPECT_EQ(statusMeaning("nonsense"), "");
}

TEST(Verp, TokensAreRandomHexAndAddressesReadBack) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto t = newBounceToken();
    EXPECT_EQ(t.size(), 32u);
    EXPECT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos) << t;
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 100u);
  const std::string token = *seen.begin();
  const std::string address = verpAddress(token, "agents.test");
  EXPECT_EQ(address, "bounces+" + token + "@agents.test");
  EXPECT_EQ(verpToken(address), token);
  // A server that upper-cases the local part still names the same message.
  std::string upper = address;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(verpToken(upper), token);
  EXPECT_FALSE(verpToken("bounces@agents.test"));
  EXPECT_FALSE(verpToken("bounces+" + token.substr(1) + "@agents.test"));
  EXPECT_FALSE(verpToken("bounces+" + token.substr(1) + "g@agents.test"));
  EXPECT_FALSE(verpToken("other+" + token + "@agents.test"));
  EXPECT_FALSE(verpToken("bounces+" + token));
}

TEST(Bounces, OnlyTheMessagesRecipientsBounce) {
  DeliveryReport r;
  RecipientReport a;
  a.final_recipient = "a@x.example";
  a.action = "failed";
  a.status = "5.1.1";
  a.diagnostic = "550 no such user";
  RecipientReport stranger = a;
  stranger.final_recipient = "stranger@x.example";
  RecipientReport again = a;  // the same recipient twice: one bounce
  r.recipients = {a, stranger, again};
  auto b = reportedBounces(r, {"a@x.example", "b@x.example"}, 1, true);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].recipient, "a@x.example");
  EXPECT_EQ(b[0].reason, "550 no such user");

  // The Original-Recipient names ours when the Final-Recipient is where it was forwarded; with
  // neither ours, a message to one recipient is bounced for that one.
  RecipientReport forwarded = a;
  forwarded.final_recipient = "a@forward.example";
  forwarded.original_recipient = "a@x.example";
  r.recipients = {forwarded};
  b = reportedBounces(r, {"a@x.example", "b@x.example"}, 1, true);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].recipient, "a@x.example");
  EXPECT_EQ(b[0].reason, "550 no such user (as a@forward.example)");
  forwarded.original_recipient.clear();
  r.recipients = {forwarded};
  EXPECT_TRUE(reportedBounces(r, {"a@x.example", "b@x.example"}, 1, true).empty());
  b = reportedBounces(r, {"a@x.example"}, 1, true);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].recipient, "a@x.example");
  // Without the fallback (a report at the sender's own address, which anyone can write to) an
  // address the message was not relayed to changes nothing, and the report names none of ours.
  EXPECT_TRUE(reportedBounces(r, {"a@x.example"}, 1, false).empty());
  // Nor with it, when the address is one the message was delivered to here.
  EXPECT_TRUE(reportedBounces(r, {"a@x.example"}, 1, true, {"A@forward.example"}).empty());
  EXPECT_FALSE(namesRelayedRecipient(r, {"a@x.example"}));
  r.recipients = {a};
  EXPECT_TRUE(namesRelayedRecipient(r, {"A@x.example"}));
}

// Each recipient leaves with its own VERP address: one transaction each. A recipient without a
// token, and rows queued when a message had one token for all, keep the row's sender.
TEST(Verp, EachRecipientHasItsOwnEnvelope) {
  const std::string t1(32, '1'), t2(32, '2');
  auto e = envelopesByToken("me@agents.test", {"A@x.example", "b@y.example", "c@z.example"},
                            {{"a@x.example", t1}, {"b@y.example", t2}});
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].sender, "bounces+" + t1 + "@agents.test");
  EXPECT_EQ(e[0].recipients, std::vector<std::string>{"A@x.example"});
  EXPECT_EQ(e[1].sender, "bounces+" + t2 + "@agents.test");
  EXPECT_EQ(e[1].recipients, std::vector<std::string>{"b@y.example"});
  EXPECT_EQ(e[2].sender, "me@agents.test");
  // One token for two recipients (an older row): one transaction from its VERP address.
  const std::string old = "bounces+" + t1 + "@agents.test";
  e = envelopesByToken(old, {"a@x.example", "b@y.example"},
                       {{"a@x.example", t1}, {"b@y.example", t1}});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].sender, old);
  EXPECT_EQ(e[0].recipients.size(), 2u);
}

TEST(Dsn, AReportIsKnownByItsContentType) {
  EXPECT_TRUE(claimsDeliveryReport(
      {{"From", "x@y.example"},
       {"Content-Type", "Multipart/Report; Report-Type=\"delivery-status\"; boundary=b"}}));
  EXPECT_FALSE(claimsDeliveryReport(
      {{"Content-Type", "multipart/report; report-type=disposition-notification"}}));
  EXPECT_FALSE(claimsDeliveryReport({{"Content-Type", "text/plain"}}));
  EXPECT_FALSE(claimsDeliveryReport({}));
}

TEST(Verp, TheEnvelopeIsThePlainSenderWhenTheVerpAddressWouldBeTooLong) {
  const std::string token(32, 'a');
  EXPECT_EQ(envelopeAddress(token, "me@agents.test"), "bounces+" + token + "@agents.test");
  // 254 octets at most: "bounces+" (8) + 32 + "@" leaves 213 for the domain.
  const std::string fits(213, 'd'), over(214, 'd');
  EXPECT_EQ(envelopeAddress(token, "me@" + fits).size(), 254u);
  EXPECT_EQ(envelopeAddress(token, "me@" + over), "me@" + over);
}

TEST(RelayReply, IsOneLineOfValidUtf8WithinItsBound) {
  std::string reply = "550 5.1.1 bad\xff\xfe\r\n550 second line ";
  reply += std::string(70000, 'x');
  const std::string line = replyLine(reply);
  EXPECT_LE(line.size(), kMaxReplyBytes);
  EXPECT_TRUE(sdk::isValidUtf8(line));
  EXPECT_EQ(line.find_first_of("\r\n"), std::string::npos);
  EXPECT_EQ(line.rfind("550 5.1.1 bad", 0), 0u) << line;
  EXPECT_NE(line.find("550 second line"), std::string::npos);
}

}  // namespace
}  // namespace svc::plugins::email
