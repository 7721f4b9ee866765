// The MIME parser against mutated mail: well-formed seed messages (nested multiparts, base64 and
// quoted-printable, RFC 2047 and RFC 2231 names, 8-bit headers) are cut, spliced, duplicated and
// sprinkled with the bytes that matter to MIME (CR, LF, boundaries, '=', '?'). Whatever arrives,
// parsing must not throw, everything it hands on must be valid UTF-8, attachment names must not
// carry paths, and the part limits must hold. A fixed seed keeps every run the same; run it under
// the sanitizer build (tools/test.sh --sanitize) to catch memory errors too.
#include "mime.h"

#include <svc/sdk/util.h>

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace svc::plugins::email {
namespace {

std::vector<std::string> seedMessages() {
  std::vector<std::string> seeds;
  seeds.push_back(
      "From: =?utf-8?B?SsO8cmdlbg==?= <j@example.com>\r\nTo: a@agents.test, \"B, C\" "
      "<b@agents.test>\r\nSubject: =?iso-8859-1?Q?caf=E9?= =?utf-8?Q?_na=C3=AFve?=\r\n"
      "Message-ID: <1@example.com>\r\nReferences: <0@example.com> <00@example.com>\r\n"
      "Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n"
      "--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n"
      "--inner\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: "
      "quoted-printable\r\n\r\nH=C3=A9llo, a long line that is soft=\r\n broken.\r\n"
      "--inner\r\nContent-Type: text/html; charset=windows-1252\r\n\r\n<p>caf\xe9 &amp; "
      "<b>bold</b></p>\r\n--inner--\r\n"
      "--outer\r\nContent-Type: application/pdf; name=\"r.pdf\"\r\nContent-Disposition: "
      "attachment; filename*=utf-8''%E2%82%AC%20report.pdf\r\nContent-Transfer-Encoding: "
      "base64\r\n\r\nJVBERi0xLjQKJcfsj6IKNSAwIG9iago8PC9MZW5ndGggNiAwIFI+PgpzdHJlYW0K\r\n"
      "--outer\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\n\r\nforwarded body\r\n"
      "--outer--\r\n");
  seeds.push_back(
      "From: x@example.com\r\nSubject: plain\xff\xfe 8-bit\r\nContent-Type: text/plain; "
      "charset=koi8-r\r\nContent-Transfer-Encoding: 8bit\r\n\r\n\xf0\xd2\xc9\xd7\xc5\xd4\r\n");
  OutgoingMail mail;
  mail.from = {"Agent Ünïcode", "agent@agents.test"};
  mail.to = {{"Bob", "bob@example.com"}};
  mail.cc = {{"", "carol@example.com"}};
  mail.subject = "Re: résumé ✓";
  mail.content = std::string(300, 'x') + "\nÉté\n.\n..leading dots\n";
  mail.message_id = "<2@agents.test>";
  mail.in_reply_to = "<1@example.com>";
  mail.references = {"<0@example.com>", "<1@example.com>"};
  mail.date_us = 1700000000000000;
  mail.attachments = {{"naïve file.bin", "application/octet-stream", std::string("\0\1\2\xff", 4)}};
  seeds.push_back(buildMessage(mail));
  return seeds;
}

// Bytes that steer a MIME parser: line ends, boundary dashes, encoded-word and QP markers.
const std::vector<std::string> kTokens = {"\r\n",
                                          "\n",
                                          "\r",
                                          "--",
                                          "--outer",
                                          "--inner--",
                                          "=",
                                          "=?",
                                          "?=",
                                          "?B?",
                                          "?Q?",
                                          "=\r\n",
                                          "\r\n\r\n",
                                          "Content-Type: multipart/mixed; boundary=z\r\n",
                                          "\"",
                                          ";",
                                          "\t",
                                          "\x80",
                                          "\xc3",
                                          "\xff",
                                          std::string(1, '\0'),
                                          "filename=\"../../x\"",
                                          "charset=utf-7"};

std::string mutate(const std::vector<std::string>& seeds, std::mt19937& rng) {
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n)(rng); };
  std::string m = seeds[pick(seeds.size() - 1)];
  const int edits = 1 + static_cast<int>(pick(7));
  for (int e = 0; e < edits && !m.empty(); ++e) {
    const std::size_t at = pick(m.size() - 1);
    switch (pick(5)) {
      case 0:  // flip a byte
        m[at] = static_cast<char>(m[at] ^ (1 << pick(7)));
        break;
      case 1:  // insert a steering token
        m.insert(at, kTokens[pick(kTokens.size() - 1)]);
        break;
      case 2:  // delete a run
        m.erase(at, pick(64));
        break;
      case 3:  // duplicate a run (repeated boundaries and headers)
        m.insert(at, m.substr(at, pick(200)));
        break;
      case 4:  // truncate
        m.resize(at);
        break;
      default: {  // splice in part of another seed
        const std::string& other = seeds[pick(seeds.size() - 1)];
        const std::size_t from = pick(other.size() - 1);
        m.insert(at, other.substr(from, pick(400)));
      }
    }
  }
  return m;
}

void expectSafe(const ParsedMessage& p, const std::string& input) {
  const std::string shown = input.substr(0, 200);
  EXPECT_TRUE(sdk::isValidUtf8(p.subject)) << shown;
  EXPECT_TRUE(sdk::isValidUtf8(p.text)) << shown;
  EXPECT_TRUE(sdk::isValidUtf8(p.html)) << shown;
  for (const auto* list : {&p.from, &p.to, &p.cc, &p.reply_to}) {
    for (const Mailbox& mb : *list) EXPECT_TRUE(sdk::isValidUtf8(mb.name)) << shown;
  }
  EXPECT_LE(p.attachments.size(), 500u);
  for (const ParsedAttachment& a : p.attachments) {
    EXPECT_TRUE(sdk::isValidUtf8(a.filename)) << shown;
    EXPECT_EQ(a.filename.find('/'), std::string::npos) << a.filename;
    EXPECT_EQ(a.filename.find('\\'), std::string::npos) << a.filename;
    EXPECT_FALSE(a.filename.empty());
  }
}

TEST(MimeMutation, TwentyThousandMutatedMessagesParseSafely) {
  const auto seeds = seedMessages();
  for (const std::string& s : seeds) {
    // The seeds themselves are well-formed: they parse without complaint.
    ParsedMessage clean = parseMessage(s);
    EXPECT_TRUE(clean.problems.empty()) << s.substr(0, 200);
    expectSafe(clean, s);
  }
  std::mt19937 rng(20261123);
  int with_problems = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string input = mutate(seeds, rng);
    ParsedMessage p;
    ASSERT_NO_THROW(p = parseMessage(input)) << input.substr(0, 200);
    expectSafe(p, input);
    if (!p.problems.empty()) ++with_problems;
    if (::testing::Test::HasFailure()) break;  // one bad input is enough to read
  }
  // The mutations do reach the parser's error paths.
  EXPECT_GT(with_problems, 1000);
}

TEST(MimeMutation, HeaderHelpersTakeArbitraryBytes) {
  std::mt19937 rng(7);
  const auto seeds = seedMessages();
  for (int i = 0; i < 20000; ++i) {
    std::string value = mutate(seeds, rng).substr(0, 300);
    std::string decoded;
    ASSERT_NO_THROW(decoded = decodeHeaderWords(value));
    EXPECT_TRUE(sdk::isValidUtf8(decoded));
    std::vector<Mailbox> boxes;
    ASSERT_NO_THROW(boxes = parseAddressList(value));
    for (const Mailbox& mb : boxes) EXPECT_TRUE(sdk::isValidUtf8(mb.name));
    ASSERT_NO_THROW(parseMessageIds(value));
    std::string text;
    ASSERT_NO_THROW(text = htmlToText(value));
    ASSERT_NO_THROW(toUtf8(value, i % 2 ? "utf-8" : "iso-2022-jp"));
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace svc::plugins::email
