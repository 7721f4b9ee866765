// Bounces of outbound mail over real sockets: the relay takes the message from each recipient's
// VERP envelope sender, and delivery reports come back by SMTP (swaks) to that address or to the
// sender's own. Forged and delayed reports change nothing (a recipient cannot bounce another);
// mail at a VERP address that is no report of ours obeys the sender's rules; svcctl shows the
// status.
#include "email_bounces_fixture.h"

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <regex>

namespace svc::testing {
namespace {

TEST_F(EmailBounces, AReportToTheVerpAddressBouncesTheMessageAndIsNotFiled) {
  std::string dump;
  auto sink = startWithSink(dump);
  Ident a = identity("Alice", "alice");
  auto sent = sendAndWait(a, R"(["nobody@remote.example","zed@remote.example"])");
  ASSERT_EQ(sent->getValue<std::string>("status"), "sent");
  EXPECT_TRUE(sent->isNull("bounce"));
  const std::string id = sent->getValue<std::string>("id");
  const std::string message_id = sent->getValue<std::string>("message_id");
  // One transaction per recipient, each from its own VERP address.
  auto senders = envelopeSenders(dump, 2);
  Poco::File(dump).remove(true);
  const std::string verp = senders["nobody@remote.example"];
  ASSERT_TRUE(std::regex_match(verp, std::regex("bounces\\+[0-9a-f]{32}@agents\\.test"))) << verp;
  ASSERT_TRUE(std::regex_match(senders["zed@remote.example"],
                               std::regex("bounces\\+[0-9a-f]{32}@agents\\.test")));
  EXPECT_NE(senders["zed@remote.example"], verp);

  // A token no message has is refused at RCPT: the real one with its last digit changed, so
  // the same shape of address (which no inbox rule refuses by itself) is taken only with a
  // token this server made.
  std::string forged = verp;
  forged[39] = forged[39] == '0' ? '1' : '0';
  auto [bad_rc, bad] =
      deliver(forged, report(forged, "nobody@remote.example", message_id, "failed", "5.1.1"));
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
  const std::string stream = events("email.bounced,email.received",
                                    {"event: email.bounced", "User unknown in virtual mailbox"});
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
  const std::string stream = events("email.bounced", {"RCPT answered 550 5.1.1"});
  EXPECT_NE(stream.find("event: email.bounced"), std::string::npos) << stream;
  EXPECT_NE(stream.find("RCPT answered 550 5.1.1"), std::string::npos) << stream;

  // Every recipient refused: bounced for each, and nothing sent. One transaction per recipient:
  // the message is bounced from the first refusal, the second follows (a slow run shows both).
  m = sendAndWait(a, R"(["gone1@remote.example","gone2@remote.example"])");
  EXPECT_EQ(m->getValue<std::string>("status"), "bounced");
  const std::string id = m->getValue<std::string>("id");
  for (int i = 0; i < 100 && m->getObject("bounce")->getArray("recipients")->size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    m = call("GET", "/api/email-messages/" + id + "/").json();
  }
  EXPECT_EQ(m->getObject("bounce")->getArray("recipients")->size(), 2u) << text(m);
  EXPECT_EQ(relay.taken().size(), 1u);
}

// Without VERP (relays that require the logged-in mailbox as the sender), reports come to the
// sender's own address and are matched by Message-ID.
TEST_F(EmailBounces, ReportsAtTheSendersOwnAddressAndForgedOnes) {
  std::string dump;
  auto sink = startWithSink(dump, {"--set", "email.relay.verp=false"});
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
  EXPECT_EQ(events("email.bounced", {}).find("event: email.bounced"), std::string::npos);
  EXPECT_NE(events("email.bounced", {"event: email.bounced"}, b_key).find("event: email.bounced"),
            std::string::npos);
}

TEST_F(EmailBounces, OnlyRecipientsTheMessageWasRelayedToBounceAndOldTokensExpire) {
  std::string dump;
  auto sink = startWithSink(dump);
  Ident a = identity("Alice", "alice");
  const std::string b_key = signIn("other@example.com");
  Ident b = identity("Bob", "bob", b_key);
  // To Bob (here, another account) and to a remote recipient.
  auto sent = sendAndWait(a, R"(["bob@agents.test","x@remote.example"])");
  ASSERT_EQ(sent->getValue<std::string>("status"), "sent") << text(sent);
  const std::string id = sent->getValue<std::string>("id");
  const std::string message_id = sent->getValue<std::string>("message_id");
  const std::string verp = envelopeSender(dump);
  Poco::File(dump).remove(true);
  ASSERT_FALSE(verp.empty());
  auto unchanged = [&](const char* why) {
    auto m = message(id);
    EXPECT_EQ(m->getValue<std::string>("status"), "sent") << why << ": " << text(m);
    EXPECT_TRUE(m->isNull("bounce")) << why;
  };
  std::size_t filed = 1;  // Alice's list: the sent message, then each report filed as mail
  auto filedAtAlice = [&](const char* why) {
    EXPECT_EQ(messages("identity=" + a.uuid)->size(), ++filed) << why;
  };

  // Bob got the message (so knows its Message-ID) and forges a report from the null sender to
  // Alice's address, naming himself: local delivery cannot bounce.
  ASSERT_EQ(deliver("alice@agents.test",
                    report("alice@agents.test", "bob@agents.test", message_id, "failed", "5.1.1"))
                .first,
            0);
  unchanged("a local recipient named");
  filedAtAlice("a report naming a local recipient is ordinary mail");
  // From a mailbox (not the null reverse-path), even naming the remote recipient.
  ASSERT_EQ(deliver("alice@agents.test",
                    report("alice@agents.test", "x@remote.example", message_id, "failed", "5.1.1"),
                    "bob@agents.test")
                .first,
            0);
  unchanged("a report from a mailbox");
  filedAtAlice("a report from a mailbox is ordinary mail");
  // The remote recipient knows the VERP address (its Return-Path) and names Bob there.
  ASSERT_EQ(deliver(verp, report(verp, "bob@agents.test", message_id, "failed", "5.1.1")).first, 0);
  unchanged("the remote recipient named a local one");
  filedAtAlice("a VERP report naming a local recipient is ordinary mail");
  // A report at the VERP address about another message.
  ASSERT_EQ(
      deliver(verp, report(verp, "x@remote.example", "<other@agents.test>", "failed", "5.1.1"))
          .first,
      0);
  unchanged("another Message-ID");
  filedAtAlice("a VERP report about another message is ordinary mail");

  // A report older than 30 days: the token is no longer honoured (and is pruned at start), so
  // the VERP address is refused and a report at Alice's address is ordinary mail.
  restartWith(sink->port(),
              {"UPDATE email_bounce_tokens SET created_us = created_us - 2678400000000"});
  EXPECT_NE(deliver(verp, report(verp, "x@remote.example", message_id, "failed", "5.1.1")).first,
            0);
  ASSERT_EQ(deliver("alice@agents.test",
                    report("alice@agents.test", "x@remote.example", message_id, "failed", "5.1.1"))
                .first,
            0);
  unchanged("an expired token");
  filedAtAlice("a report about mail older than 30 days is ordinary mail");
  (void)b;
}

// Recipient B got the message, so knows its Return-Path; it is B's own VERP address, so B can
// report on B only: a report there naming co-recipient C changes nothing and is ordinary mail.
TEST_F(EmailBounces, ARecipientCannotBounceAnotherRecipientOfTheSameMessage) {
  std::string dump;
  auto sink = startWithSink(dump);
  Ident a = identity("Alice", "alice");
  auto sent = sendAndWait(a, R"(["b@remote.example","c@remote.example"])");
  ASSERT_EQ(sent->getValue<std::string>("status"), "sent") << text(sent);
  const std::string id = sent->getValue<std::string>("id");
  const std::string message_id = sent->getValue<std::string>("message_id");
  auto senders = envelopeSenders(dump, 2);
  Poco::File(dump).remove(true);
  const std::string b_verp = senders["b@remote.example"], c_verp = senders["c@remote.example"];
  ASSERT_FALSE(b_verp.empty());
  ASSERT_FALSE(c_verp.empty());
  ASSERT_NE(b_verp, c_verp);

  // B forges a report at its own VERP address naming C: C does not bounce.
  ASSERT_EQ(
      deliver(b_verp, report(b_verp, "c@remote.example", message_id, "failed", "5.1.1")).first, 0);
  auto m = message(id);
  EXPECT_EQ(m->getValue<std::string>("status"), "sent") << text(m);
  EXPECT_TRUE(m->isNull("bounce"));
  EXPECT_EQ(messages("identity=" + a.uuid)->size(), 2u) << "the forged report is ordinary mail";

  // A report naming both at B's address bounces B alone.
  std::string both = report(b_verp, "b@remote.example", message_id, "failed", "5.1.1");
  const std::string c_group =
      "Final-Recipient: rfc822; c@remote.example\nAction: failed\nStatus: 5.1.1\n\n";
  both.insert(both.find("--R1/mx.remote.example\nContent-Type: text/rfc822-headers"), c_group);
  ASSERT_EQ(deliver(b_verp, both).first, 0);
  m = message(id);
  EXPECT_EQ(m->getValue<std::string>("status"), "bounced") << text(m);
  auto bounced = m->getObject("bounce")->getArray("recipients");
  ASSERT_EQ(bounced->size(), 1u) << text(m);
  EXPECT_EQ(bounced->getObject(0)->getValue<std::string>("recipient"), "b@remote.example");

  // C's own report at C's address bounces C.
  ASSERT_EQ(
      deliver(c_verp, report(c_verp, "c@remote.example", message_id, "failed", "5.1.1")).first, 0);
  EXPECT_EQ(message(id)->getObject("bounce")->getArray("recipients")->size(), 2u);
  EXPECT_EQ(messages("identity=" + a.uuid)->size(), 2u) << "reports of ours are not filed";
}

// Mail at a VERP address that is not a report consumed as a bounce is the sending inbox's mail,
// so that inbox's sender rules judge it (envelope sender at RCPT, From at the end of DATA); a
// report consumed as a bounce is never judged.
TEST_F(EmailBounces, MailAtAVerpAddressObeysTheSendersRulesUnlessItIsOurBounce) {
  std::string dump;
  auto sink = startWithSink(dump);
  Ident a = identity("Alice", "alice");
  auto sent = sendAndWait(a, R"(["x@remote.example","y@remote.example"])");
  ASSERT_EQ(sent->getValue<std::string>("status"), "sent") << text(sent);
  const std::string id = sent->getValue<std::string>("id");
  const std::string message_id = sent->getValue<std::string>("message_id");
  auto senders = envelopeSenders(dump, 2);
  Poco::File(dump).remove(true);
  const std::string verp = senders["x@remote.example"];
  ASSERT_FALSE(verp.empty());
  // Alice accepts mail only from friend.example.
  auto rule = call("POST", "/api/email-rules/?identity=" + a.uuid,
                   R"({"kind":"allow","pattern":"friend.example"})");
  ASSERT_EQ(rule.status, 201) << rule.body;

  // A stranger's envelope sender: refused at RCPT, as at Alice's own address.
  auto [rc1, out1] =
      deliver(verp, "From: s@stranger.example\nSubject: hi\n\nhi\n", "s@stranger.example");
  EXPECT_NE(rc1, 0);
  EXPECT_NE(out1.find("550 5.7.1"), std::string::npos) << out1;
  // The null sender with a stranger's From (an auto-reply that is no report): refused at DATA.
  auto [rc2, out2] =
      deliver(verp,
              "From: zed@stranger.example\nSubject: Out of office\nAuto-Submitted: auto-replied\n\n"
              "Back Monday.\n");
  EXPECT_NE(rc2, 0);
  EXPECT_NE(out2.find("550 5.7.1"), std::string::npos) << out2;
  // A friend's auto-reply is filed.
  ASSERT_EQ(deliver(verp, "From: pal@friend.example\nSubject: Away\n\nBack soon.\n").first, 0);
  auto list = messages("identity=" + a.uuid);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ(list->getObject(1)->getValue<std::string>("subject"), "Away");
  // A report at x's address naming y is no bounce of ours, and its From is a stranger: not
  // filed.
  ASSERT_EQ(deliver(verp, report(verp, "y@remote.example", message_id, "failed", "5.1.1")).first,
            0);
  EXPECT_EQ(messages("identity=" + a.uuid)->size(), 2u);
  EXPECT_EQ(message(id)->getValue<std::string>("status"), "sent");

  // With VERP, a report at Alice's own address is no bounce of ours (x, who has the message and
  // its Message-ID, could write it about y): it is mail, and its stranger's From is refused.
  ASSERT_EQ(deliver("alice@agents.test",
                    report("alice@agents.test", "y@remote.example", message_id, "failed", "5.1.1"))
                .first,
            0);
  EXPECT_EQ(message(id)->getValue<std::string>("status"), "sent");
  EXPECT_EQ(messages("identity=" + a.uuid)->size(), 2u);
  // Our bounce gets through the allow list at the VERP address.
  ASSERT_EQ(deliver(verp, report(verp, "x@remote.example", message_id, "failed", "5.1.1")).first,
            0);
  auto m = message(id);
  EXPECT_EQ(m->getValue<std::string>("status"), "bounced");
  EXPECT_EQ(m->getObject("bounce")->getArray("recipients")->size(), 1u) << text(m);
  EXPECT_EQ(messages("identity=" + a.uuid)->size(), 2u);
}

}  // namespace
}  // namespace svc::testing
