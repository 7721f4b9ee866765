// The email plugin's pure pieces: MIME parsing and building, address checks, subject
// normalization, DKIM canonicalization (RFC 6376's own examples).
#include "mime.h"
#include "dkim.h"
#include "inboxes.h"
#include "mail_store.h"

#include <svc/sdk/addresses.h>

#include <gtest/gtest.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace svc::plugins::email {
namespace {

TEST(Mime, DecodesEncodedWordsAcrossCharsets) {
  EXPECT_EQ(decodeHeaderWords("=?UTF-8?B?w5xuaWPDtmRl?="), "Ünicöde");
  EXPECT_EQ(decodeHeaderWords("=?iso-8859-1?q?caf=E9_noir?="), "café noir");
  // Whitespace between two encoded words vanishes; between a word and text it stays.
  EXPECT_EQ(decodeHeaderWords("=?UTF-8?Q?a?= =?UTF-8?Q?b?= c"), "ab c");
  EXPECT_EQ(decodeHeaderWords("=?windows-1252?Q?=80?="), "€");
  EXPECT_EQ(decodeHeaderWords("=?x-unknown?Q?plain?="), "plain");
  // An encoded CR LF cannot make a second header line.
  EXPECT_EQ(decodeHeaderWords("=?UTF-8?Q?a=0D=0AB?="), "a  B");
  EXPECT_EQ(decodeHeaderWords("not =?encoded"), "not =?encoded");
  // Raw 8-bit Latin-1 becomes UTF-8; invalid UTF-8 in a declared charset becomes U+FFFD.
  EXPECT_EQ(decodeHeaderWords("\xe9t\xe9"), "été");
  EXPECT_EQ(toUtf8("a\xff"
                   "b",
                   "utf-8"),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(Mime, ParsesAddressListsWithNamesGroupsAndComments) {
  auto list = parseAddressList(
      "\"Doe, Jane\" <Jane@Example.COM>, bob@b.example (Bob), team: c@c.example, d@d.example;");
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[0].name, "Doe, Jane");
  EXPECT_EQ(list[0].address, "Jane@example.com");
  EXPECT_EQ(list[1].address, "bob@b.example");
  EXPECT_EQ(list[2].address, "c@c.example");
  EXPECT_EQ(list[3].address, "d@d.example");
  EXPECT_EQ(parseAddressList("=?UTF-8?B?SsO8cmdlbg==?= <j@x.example>")[0].name, "Jürgen");
  EXPECT_TRUE(parseAddressList("undisclosed-recipients:;").empty());
}

TEST(Mime, ValidatesAddressesAndDomains) {
  EXPECT_TRUE(sdk::isValidEmailAddress("a.b+tag@sub.example.org"));
  for (const char* bad : {"a@b", "a@-b.example", "a..b@x.example", ".a@x.example", "a@x.123",
                          "a b@x.example", "@x.example", "a@", "a@x_y.example"}) {
    EXPECT_FALSE(sdk::isValidEmailAddress(bad)) << bad;
  }
  EXPECT_TRUE(sdk::isValidDomain("xn--bcher-kva.example"));
  EXPECT_FALSE(sdk::isValidDomain(std::string(300, 'a') + ".example"));
}

// Inboxes follow a stricter rule than the addresses SMTP and compose accept; an inbox the
// stricter rule allowed but SMTP refused (a..b) would be one no mail could ever reach.
TEST(Mime, EveryLocalPartAnInboxMayHaveIsOneMailCanReach) {
  // Every string of one to four characters from an alphabet holding each kind of character the
  // two rules treat differently.
  const std::string alphabet = "a0._-+A";
  std::vector<std::string> level{""};
  int inboxes = 0;
  for (int length = 1; length <= 4; ++length) {
    std::vector<std::string> next;
    for (const auto& prefix : level) {
      for (char c : alphabet) next.push_back(prefix + c);
    }
    for (const auto& local : next) {
      if (!isValidInboxLocalPart(local)) continue;
      ++inboxes;
      EXPECT_TRUE(sdk::isDotAtomLocalPart(local)) << local;
      EXPECT_TRUE(sdk::isValidEmailAddress(local + "@agents.test")) << local;
    }
    level = std::move(next);
  }
  EXPECT_GT(inboxes, 100);
  for (const char* bad : {"a..b", ".a", "a.", "-a", "a_", "A", "a+b", ""}) {
    EXPECT_FALSE(isValidInboxLocalPart(bad)) << bad;
  }
  EXPECT_TRUE(isValidInboxLocalPart("a.b_c-d9"));
  EXPECT_TRUE(isValidInboxLocalPart(std::string(64, 'x')));
  EXPECT_FALSE(isValidInboxLocalPart(std::string(65, 'x')));
  // Other servers' addresses: any RFC 5321 dot-atom, dots never leading, trailing or doubled.
  EXPECT_TRUE(sdk::isDotAtomLocalPart("A+b.c!d"));
  for (const char* bad : {"a..b", ".a", "a.", "a b", ""})
    EXPECT_FALSE(sdk::isDotAtomLocalPart(bad));
}

TEST(Mime, ReadsNestedMultipartsAndKeepsAttachments) {
  const std::string raw =
      "Subject: t\r\nContent-Type: multipart/mixed; boundary=\"o\"\r\n\r\n"
      "--o\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n"
      "--i\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
      "aMOpbGxv\r\n--i\r\nContent-Type: text/html\r\n\r\n<b>h&amp;i</b>\r\n--i--\r\n"
      "--o\r\nContent-Type: image/png\r\nContent-Disposition: attachment; "
      "filename*=utf-8''%E2%82%AC.png\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw==\r\n"
      "--o--\r\n";
  ParsedMessage m = parseMessage(raw);
  EXPECT_EQ(m.text, "héllo");
  EXPECT_EQ(m.html, "<b>h&amp;i</b>");
  ASSERT_EQ(m.attachments.size(), 1u);
  EXPECT_EQ(m.attachments[0].filename, "€.png");
  EXPECT_EQ(m.attachments[0].content_type, "image/png");
  EXPECT_EQ(m.attachments[0].data, "\x89PNG");
  EXPECT_TRUE(m.problems.empty());
}

TEST(Mime, SurvivesMalformedInput) {
  // Depth bomb, unclosed multipart, binary junk: each parses without throwing.
  std::string deep = "Content-Type: multipart/mixed; boundary=b0\r\n\r\n";
  for (int i = 1; i < 200; ++i) {
    deep += "--b" + std::to_string(i - 1) + "\r\nContent-Type: multipart/mixed; boundary=b" +
            std::to_string(i) + "\r\n\r\n";
  }
  ParsedMessage m = parseMessage(deep);
  EXPECT_FALSE(m.problems.empty());
  ParsedMessage unclosed = parseMessage(
      "Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nhi");
  EXPECT_EQ(unclosed.text, "hi");
  std::string junk;
  for (int i = 0; i < 5000; ++i) junk += static_cast<char>((i * 7919) % 256);
  EXPECT_NO_THROW(parseMessage(junk));
  ParsedMessage attachment_name = parseMessage(
      "Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Disposition: attachment; "
      "filename=\"../../etc/passwd\"\r\n\r\nroot\r\n--x--\r\n");
  ASSERT_EQ(attachment_name.attachments.size(), 1u);
  EXPECT_EQ(attachment_name.attachments[0].filename.find('/'), std::string::npos);
  // A long name is cut to 255 bytes before a character, never inside one.
  ParsedMessage long_name = parseMessage(
      "Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Disposition: attachment; "
      "filename*=utf-8''" +
      std::string(254, 'a') + "%C3%A9.txt\r\n\r\nbody\r\n--x--\r\n");
  ASSERT_EQ(long_name.attachments.size(), 1u);
  EXPECT_EQ(long_name.attachments[0].filename, std::string(254, 'a'));
  // ...and not left ending in spaces by the cut (they would be trimmed on the next read).
  ParsedMessage spaced = parseMessage(
      "Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Disposition: attachment; "
      "filename=\"" +
      std::string(250, 'b') + std::string(10, ' ') + "z\"\r\n\r\nbody\r\n--x--\r\n");
  ASSERT_EQ(spaced.attachments.size(), 1u);
  EXPECT_EQ(spaced.attachments[0].filename, std::string(250, 'b'));
}

std::string manyParts(int parts) {
  std::string raw = "Subject: many\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n";
  for (int i = 1; i <= parts; ++i) {
    raw += "--b\r\nContent-Type: application/octet-stream; name=\"p" + std::to_string(i) +
           ".bin\"\r\n\r\npart " + std::to_string(i) + "\r\n";
  }
  return raw + "--b--\r\n";
}

TEST(Mime, PartsBeyondTheLimitAreKeptRawAsOneTruncatedPartsAttachment) {
  MimeLimits limits;
  limits.max_parts = 4;  // the multipart itself and its first three parts
  const std::string raw = manyParts(6);
  ParsedMessage m = parseMessage(raw, limits);
  ASSERT_EQ(m.attachments.size(), 4u);
  EXPECT_EQ(m.attachments[2].filename, "p3.bin");
  const ParsedAttachment& rest = m.attachments[3];
  EXPECT_EQ(rest.filename, "truncated-parts");
  EXPECT_EQ(rest.content_type, "application/octet-stream");
  // Byte for byte what was received, from the first part not read to the end.
  EXPECT_EQ(rest.data, raw.substr(raw.find("Content-Type: application/octet-stream; name=\"p4")));
  EXPECT_FALSE(m.problems.empty());

  // At the default limit: a message of 600 parts keeps 499 and the raw rest.
  ParsedMessage big = parseMessage(manyParts(600));
  ASSERT_EQ(big.attachments.size(), 500u);
  EXPECT_EQ(big.attachments[498].filename, "p499.bin");
  EXPECT_EQ(big.attachments[499].filename, "truncated-parts");
  EXPECT_EQ(big.attachments[499].data.rfind("Content-Type: application/octet-stream; "
                                            "name=\"p500.bin\"",
                                            0),
            0u);
  EXPECT_NE(big.attachments[499].data.find("part 600\r\n--b--"), std::string::npos);
}

TEST(Mime, TruncatedPartsReachingIntoANestedMultipartCarryItsOuterSiblingsToo) {
  const std::string raw =
      "Content-Type: multipart/mixed; boundary=o\r\n\r\n"
      "--o\r\nContent-Type: multipart/mixed; boundary=i\r\n\r\n"
      "--i\r\nContent-Type: image/png; name=x1.png\r\n\r\n1\r\n"
      "--i\r\nContent-Type: image/png; name=x2.png\r\n\r\n2\r\n--i--\r\n"
      "--o\r\nContent-Type: image/png; name=y.png\r\n\r\n3\r\n--o--\r\n";
  MimeLimits limits;
  limits.max_parts = 3;  // both multiparts and x1
  ParsedMessage m = parseMessage(raw, limits);
  ASSERT_EQ(m.attachments.size(), 2u);
  EXPECT_EQ(m.attachments[0].filename, "x1.png");
  EXPECT_EQ(m.attachments[1].filename, "truncated-parts");
  EXPECT_EQ(m.attachments[1].data, raw.substr(raw.find("Content-Type: image/png; name=x2")));
}

// Script and style blocks are skipped in linear time: a page of a megabyte of empty script
// blocks (an HTML-only message anyone can send) took minutes when each one copied the rest.
TEST(Mime, HtmlToTextSkipsScriptBlocksInLinearTime) {
  EXPECT_EQ(htmlToText("a<SCRIPT>x</Script>b<style>y</STYLE>c"), "abc");
  std::string page;
  for (int i = 0; i < 60000; ++i) page += "<script></script>";
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(htmlToText(page + "end"), "end");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(Mime, BuildsMessagesThatParseBack) {
  OutgoingMail out;
  out.from = {"", "a@agents.test"};
  out.to = {{"Zoë", "z@x.example"}, {"", "y@x.example"}};
  out.subject = "Grüße, " + std::string(80, 'x');
  out.content = ".leading dot\nline with trailing space \n" + std::string(200, 'w');
  out.message_id = "<m1@agents.test>";
  out.in_reply_to = "<p@x.example>";
  out.references = {"<o@x.example>", "<p@x.example>"};
  out.date_us = 1700000000000000;
  out.attachments = {{"r.bin", "application/octet-stream", std::string("\0\1\2", 3)}};
  const std::string raw = buildMessage(out);
  for (std::size_t pos = 0, eol; (eol = raw.find("\r\n", pos)) != std::string::npos;
       pos = eol + 2) {
    EXPECT_LE(eol - pos, 998u);
    EXPECT_NE(raw.substr(pos, 2), ".\r") << "no line is a lone dot";
  }
  EXPECT_EQ(raw.find('\n'), raw.find("\r\n") + 1) << "CRLF line ends";
  ParsedMessage back = parseMessage(raw);
  EXPECT_EQ(back.subject, out.subject);
  ASSERT_EQ(back.to.size(), 2u);
  EXPECT_EQ(back.to[0].name, "Zoë");
  EXPECT_EQ(back.references, out.references);
  EXPECT_EQ(back.in_reply_to, "<p@x.example>");
  EXPECT_NE(back.text.find(".leading dot\r\nline with trailing space \r\n"), std::string::npos);
  ASSERT_EQ(back.attachments.size(), 1u);
  EXPECT_EQ(back.attachments[0].data, std::string("\0\1\2", 3));
}

TEST(Mime, NormalizesSubjectsForThreading) {
  EXPECT_EQ(normalizedSubject("Re: RE: Fwd:  Hello   World"), "hello world");
  EXPECT_EQ(normalizedSubject("Re[2]: x"), "x");
  EXPECT_EQ(normalizedSubject("Aw: Sv: x"), "x");
  EXPECT_EQ(normalizedSubject("Remember this"), "remember this");
}

// RFC 6376 section 3.4.5's example.
TEST(Dkim, RelaxedCanonicalizationMatchesTheRfc) {
  EXPECT_EQ(relaxedHeader("A", " X"), "a:X");
  EXPECT_EQ(relaxedHeader("B ", " Y\t\r\n\tZ  "), "b:Y Z");
  EXPECT_EQ(relaxedBody(" C \r\nD \t E\r\n\r\n\r\n"), " C\r\nD E\r\n");
  EXPECT_EQ(relaxedBody(""), "");
  EXPECT_EQ(relaxedBody("no newline"), "no newline\r\n");
}

// A field that appears twice is signed twice, bottom-up as verifiers read it: an independent
// verifier (dkimpy) accepts the signature, and rejects it once either To: line changes.
TEST(Dkim, RepeatedFieldsAreSignedTheWayVerifiersReadThem) {
  const std::string dir = "/tmp/svc-dkim-unit-" + std::to_string(::getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir + " && openssl genrsa -out " + dir +
                         "/key.pem 2048 2>/dev/null && openssl rsa -in " + dir +
                         "/key.pem -pubout -outform DER -out " + dir + "/pub.der 2>/dev/null")
                            .c_str()),
            0);
  DkimSigner signer("s1", dir + "/key.pem");
  std::ofstream(dir + "/signed.eml", std::ios::binary) << signer.sign(
      "From: a@agents.test\r\nTo: one@example.com\r\nTo: two@example.com\r\n"
      "Subject: twice\r\n\r\nbody\r\n",
      "agents.test", 1700000000);
  std::ofstream(dir + "/verify.py")
      << "import sys, base64, dkim\n"
         "raw = open(sys.argv[1], 'rb').read()\n"
         "pub = base64.b64encode(open(sys.argv[2], 'rb').read())\n"
         "dns = lambda name, timeout=5: b'v=DKIM1; k=rsa; p=' + pub\n"
         "ok = dkim.verify(raw, dnsfunc=dns)\n"
         "first = dkim.verify(raw.replace(b'one@', b'eve@'), dnsfunc=dns)\n"
         "second = dkim.verify(raw.replace(b'two@', b'eve@'), dnsfunc=dns)\n"
         "sys.exit(0 if ok and not first and not second else 1)\n";
  EXPECT_EQ(std::system(("/usr/bin/python3 " + dir + "/verify.py " + dir + "/signed.eml " + dir +
                         "/pub.der")
                            .c_str()),
            0);
  std::system(("rm -rf " + dir).c_str());
}

// The author DMARC and the sender rules judge: one From field of one mailbox, else none.
TEST(Mime, TheAuthorIsTheOneMailboxOfTheOneFrom) {
  EXPECT_EQ(authorAddress(topHeaders("From: \"Ann\" <Ann@Example.COM>\r\n\r\nx")),
            "Ann@example.com");
  EXPECT_EQ(authorAddress(topHeaders("To: b@x.example\r\n\r\nFrom: a@body.example\r\n")), "");
  EXPECT_EQ(authorAddress(topHeaders("From: a@one.example, b@two.example\r\n\r\n")), "");
  EXPECT_EQ(authorAddress(topHeaders("From: a@one.example\r\nfrom: b@two.example\r\n\r\n")), "");
  EXPECT_EQ(authorAddress(topHeaders("From: undisclosed:;\r\n\r\n")), "");
}

}  // namespace
}  // namespace svc::plugins::email
