// Ingest's pure pieces: the spool's record of a message, and a received message as it is filed.
#include "ingest.h"

#include <gtest/gtest.h>

namespace svc::plugins::email {
namespace {

TEST(Ingest, ASpooledMessageReadsBackAsItWasWritten) {
  const std::string payload = spoolPayload("from@x.example", {"a@here.example", "b@here.example"},
                                           "Subject: hi\r\n\r\nbody\n");
  EXPECT_EQ(payload, "from@x.example\na@here.example,b@here.example\nSubject: hi\r\n\r\nbody\n");
  auto m = readSpoolPayload(payload);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mail_from, "from@x.example");
  EXPECT_EQ(m->recipients, (std::vector<std::string>{"a@here.example", "b@here.example"}));
  EXPECT_EQ(m->data, "Subject: hi\r\n\r\nbody\n");
  // The null sender of a bounce.
  m = readSpoolPayload(spoolPayload("", {"a@here.example"}, ""));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mail_from, "");
  EXPECT_EQ(m->data, "");
}

TEST(Ingest, APayloadWithoutAnEnvelopeIsNotFiled) {
  EXPECT_FALSE(readSpoolPayload(""));
  EXPECT_FALSE(readSpoolPayload("from@x.example"));
  EXPECT_FALSE(readSpoolPayload("from@x.example\na@here.example"));
  auto m = readSpoolPayload("from@x.example\n,,\n");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->recipients.empty());
}

TEST(Ingest, AReceivedMessageIsFiledWithItsHeadersOrTheEnvelope) {
  ParsedMessage p = parseMessage(
      "From: Alice <alice@x.example>\r\nTo: a@here.example\r\nCc: c@here.example\r\n"
      "Reply-To: r@x.example\r\nSubject: Hi\r\nMessage-ID: <1@x.example>\r\n"
      "In-Reply-To: <0@x.example>\r\nReferences: <0@x.example>\r\n\r\nHello\r\n");
  NewMessage m = incomingMessage(p, "bounce@x.example", "mx.here.example");
  EXPECT_EQ(m.direction, "incoming");
  EXPECT_EQ(m.from.address, "alice@x.example");
  EXPECT_EQ(m.from.name, "Alice");
  EXPECT_EQ(m.to, std::vector<std::string>{"a@here.example"});
  EXPECT_EQ(m.cc, std::vector<std::string>{"c@here.example"});
  EXPECT_EQ(m.reply_to, std::vector<std::string>{"r@x.example"});
  EXPECT_EQ(m.subject, "Hi");
  EXPECT_EQ(m.content, "Hello\r\n");
  EXPECT_EQ(m.message_id, "<1@x.example>");
  EXPECT_EQ(m.in_reply_to, "<0@x.example>");
  EXPECT_EQ(m.references, std::vector<std::string>{"<0@x.example>"});

  m = incomingMessage(parseMessage("Subject: no from\r\n\r\nx"), "bounce@x.example",
                      "mx.here.example");
  EXPECT_EQ(m.from.address, "bounce@x.example");
  EXPECT_EQ(m.message_id.front(), '<');
  EXPECT_NE(m.message_id.find("@mx.here.example>"), std::string::npos);
}

}  // namespace
}  // namespace svc::plugins::email
