// What the relay's own answers do to a message: a refused recipient bounces with the relay's
// words (cleaned to one line of UTF-8), a deferred one is retried alone, one still deferred at
// the last attempt bounces, and a refused sender fails the message without bouncing anyone.
#include "email_bounces_fixture.h"

#include <svc/sdk/util.h>

#include <gtest/gtest.h>

namespace svc::testing {
namespace {

TEST_F(EmailBounces, TheRelaysReplyIsKeptAsOneCleanLine) {
  RefusingRelay relay;
  startWithRelay(relay.port());
  Ident a = identity("Alice", "alice");
  // The reply has invalid UTF-8 and 70 KB: as it came, it does not fit the reason column (on
  // MariaDB the insert fails and the message was sent again and again).
  auto m = sendAndWait(a, R"(["junk@remote.example","ok@remote.example"])");
  ASSERT_EQ(m->getValue<std::string>("status"), "bounced") << text(m);
  auto recipients = m->getObject("bounce")->getArray("recipients");
  ASSERT_EQ(recipients->size(), 1u);
  const std::string reason = recipients->getObject(0)->getValue<std::string>("reason");
  EXPECT_LE(reason.size(), 1000u);
  EXPECT_TRUE(sdk::isValidUtf8(reason));
  EXPECT_EQ(reason.rfind("RCPT answered 550 5.1.1 no", 0), 0u) << reason;
  EXPECT_EQ(relay.taken(), std::vector<std::string>{"<ok@remote.example>"});
}

TEST_F(EmailBounces, ADeferredRecipientIsRetriedAloneAndBouncesWhenAttemptsRunOut) {
  RefusingRelay relay;
  startWithRelay(relay.port());
  Ident a = identity("Alice", "alice");
  // later: 451 the first time; ok: taken at once.
  auto r = call("POST", "/api/email-messages/compose/?identity=" + a.uuid,
                R"({"to_email":["later@remote.example","ok@remote.example"],"subject":"Q",)"
                R"("content":"Ten."})");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string first = r.json()->getValue<std::string>("id");
  // gone: refused; slow: deferred at every attempt.
  r = call("POST", "/api/email-messages/compose/?identity=" + a.uuid,
           R"({"to_email":["gone@remote.example","slow@remote.example"],"subject":"Q",)"
           R"("content":"Ten."})");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string second = r.json()->getValue<std::string>("id");
  for (int i = 0; i < 100 && message(second)->isNull("bounce"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(relay.taken(), std::vector<std::string>{"<ok@remote.example>"});
  EXPECT_EQ(message(first)->getValue<std::string>("status"), "queued");
  ASSERT_EQ(message(second)->getValue<std::string>("status"), "bounced");

  // The retry is due now, and the second message's is its last (of 8).
  restartWith(relay.port(),
              {"UPDATE email_outbox SET next_attempt_us = 0",
               "UPDATE email_outbox SET attempts = 7 WHERE message_id = '" + second + "'"});
  EXPECT_EQ(settled(first)->getValue<std::string>("status"), "sent");
  // Only the deferred recipient was sent to again: ok did not get it twice.
  EXPECT_EQ(relay.taken(),
            (std::vector<std::string>{"<ok@remote.example>", "<later@remote.example>"}));

  // slow is still deferred at the last attempt: it bounces, so the sender learns who did not
  // get the message.
  Poco::JSON::Array::Ptr bounced;
  for (int i = 0; i < 100; ++i) {
    bounced = message(second)->getObject("bounce")->getArray("recipients");
    if (bounced->size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(bounced->size(), 2u) << text(message(second));
  auto slow = bounced->getObject(1);
  EXPECT_EQ(slow->getValue<std::string>("recipient"), "slow@remote.example");
  EXPECT_EQ(slow->getValue<std::string>("status"), "4.4.7");
  EXPECT_EQ(slow->getValue<std::string>("source"), "relay");
  EXPECT_EQ(slow->getValue<std::string>("reason"),
            "delivery time expired: RCPT answered 451 4.2.0 mailbox busy, try later");
}

TEST_F(EmailBounces, ARefusedSenderFailsTheMessageAndBouncesNoOne) {
  RefusingRelay relay;
  relay.refuse_mail = true;
  startWithRelay(relay.port());
  Ident a = identity("Alice", "alice");
  auto m = sendAndWait(a, R"(["a@remote.example","b@remote.example"])");
  EXPECT_EQ(m->getValue<std::string>("status"), "failed") << text(m);
  EXPECT_TRUE(m->isNull("bounce")) << "530 at MAIL is the relay's configuration, not the "
                                      "recipients";
  ASSERT_EQ(relay.senders().size(), 1u);
  EXPECT_EQ(relay.senders()[0].rfind("<bounces+", 0), 0u) << relay.senders()[0];
}

TEST_F(EmailBounces, WithoutVerpTheEnvelopeSenderIsTheSender) {
  RefusingRelay relay;
  startWithRelay(relay.port(), {"--set", "email.relay.verp=false"});
  Ident a = identity("Alice", "alice");
  auto m = sendAndWait(a, R"("ok@remote.example")");
  EXPECT_EQ(m->getValue<std::string>("status"), "sent") << text(m);
  EXPECT_EQ(relay.senders(), std::vector<std::string>{"<alice@agents.test>"});
}

}  // namespace
}  // namespace svc::testing
