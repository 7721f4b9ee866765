// Sending's pure rules: recipients as clients write them, reply and forward subjects and bodies,
// deduplication across to/cc/bcc, and the per-identity sending limit.
#include "outgoing.h"

#include <gtest/gtest.h>

namespace svc::plugins::email {
namespace {

std::string refusal(const std::string& raw) {
  try {
    parseRecipient("to_email", raw);
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.errors().count("to_email"), 1u);
    return e.errors().at("to_email").front();
  }
  return "";
}

TEST(Outgoing, ReadsARecipientWithOrWithoutAName) {
  Mailbox m = parseRecipient("to_email", "bob@Example.COM");
  EXPECT_EQ(m.address, "bob@example.com");
  EXPECT_EQ(m.name, "");
  m = parseRecipient("cc", "Bob Smith <bob@example.com>");
  EXPECT_EQ(m.address, "bob@example.com");
  EXPECT_EQ(m.name, "Bob Smith");
}

TEST(Outgoing, RefusesRecipientsThatAreNotOneValidAddress) {
  EXPECT_NE(refusal("bob@example.com\r\nBcc: eve@example.com").find("control characters"),
            std::string::npos);
  EXPECT_NE(refusal("bob").find("not a valid email address"), std::string::npos);
  EXPECT_NE(refusal("a@example.com, b@example.com").find("not a valid"), std::string::npos);
  EXPECT_NE(refusal("bob@localhost").find("not a valid"), std::string::npos);
}

TEST(Outgoing, ReplyAndForwardSubjectsCarryOnePrefix) {
  EXPECT_EQ(replySubject("  Hello ", "Re:"), "Re: Hello");
  EXPECT_EQ(replySubject("RE: Hello", "Re:"), "RE: Hello");
  EXPECT_EQ(replySubject("Hello", "Fwd:"), "Fwd: Hello");
  EXPECT_EQ(replySubject("fwd: Hello", "Fwd:"), "fwd: Hello");
  EXPECT_EQ(replySubject("FW: Hello", "Fwd:"), "FW: Hello");
  EXPECT_EQ(replySubject("FW: Hello", "Re:"), "Re: FW: Hello");
}

TEST(Outgoing, RecipientsAreDeduplicatedAcrossToCcAndBccFirstMentionWins) {
  Draft d;
  d.to = {{"", "a@x.example"}, {"", "A@X.example"}, {"", "b@x.example"}};
  d.cc = {{"", "b@x.example"}, {"", "c@x.example"}};
  d.bcc = {{"", "C@x.example"}, {"", "d@x.example"}};
  EXPECT_EQ(dedupeRecipients(d), 4u);
  ASSERT_EQ(d.to.size(), 2u);
  EXPECT_EQ(d.to[0].address, "a@x.example");
  EXPECT_EQ(d.to[1].address, "b@x.example");
  ASSERT_EQ(d.cc.size(), 1u);
  EXPECT_EQ(d.cc[0].address, "c@x.example");
  ASSERT_EQ(d.bcc.size(), 1u);
  EXPECT_EQ(d.bcc[0].address, "d@x.example");
}

TEST(Outgoing, AForwardQuotesTheParentsHeadersAndText) {
  MessageRow parent;
  parent.from_email = "alice@example.com";
  parent.created_us = 0;
  parent.subject = "Plans";
  parent.to = {"bob@example.com", "carol@example.com"};
  parent.content = "See you at noon.";
  EXPECT_EQ(forwardedContent("FYI", parent),
            "FYI\n\n---------- Forwarded message ---------\nFrom: alice@example.com\nDate: "
            "1970-01-01T00:00:00.000000Z\nSubject: Plans\nTo: bob@example.com, "
            "carol@example.com\n\nSee you at noon.");
}

}  // namespace
}  // namespace svc::plugins::email
