#include <svc/sdk/verification_code.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

namespace svc::sdk {
namespace {

struct Case {
  std::string name, expect, subject, body;
};

// Reads the corpus (its format is described at its top).
std::vector<Case> readCorpus() {
  std::ifstream in(SVC_UNIT_TEST_DATA_DIR "/sdk/verification_codes.txt");
  EXPECT_TRUE(in.good());
  std::vector<Case> cases;
  std::string line;
  bool in_body = false;
  while (std::getline(in, line)) {
    if (line.rfind("=== ", 0) == 0) {
      cases.push_back({line.substr(4), "", "", ""});
      in_body = false;
    } else if (cases.empty()) {
      continue;  // the comments at the top
    } else if (in_body) {
      cases.back().body += line + "\n";
    } else if (line.rfind("expect: ", 0) == 0) {
      cases.back().expect = line.substr(8);
    } else if (line.rfind("subject: ", 0) == 0) {
      cases.back().subject = line.substr(9);
    } else if (line.empty()) {
      in_body = true;
    }
  }
  for (auto& c : cases) {
    while (!c.body.empty() && c.body.back() == '\n') c.body.pop_back();
  }
  return cases;
}

TEST(VerificationCode, CorpusPrecisionAndRecallAreAtLeast95Percent) {
  const auto cases = readCorpus();
  int with_code = 0, decoys = 0, sms = 0, found = 0, right = 0;
  std::ostringstream misses;
  for (const auto& c : cases) {
    ASSERT_FALSE(c.expect.empty()) << c.name;
    ASSERT_FALSE(c.body.empty()) << c.name;
    const bool none = c.expect == "none";
    with_code += !none;
    decoys += none;
    sms += c.subject.empty();
    auto got = extractVerificationCode(c.subject, c.body);
    found += got.has_value();
    right += got && *got == c.expect;
    if (got.value_or("none") != c.expect) {
      misses << "  " << c.name << ": expected " << c.expect << ", got " << got.value_or("none")
             << "\n";
    }
  }
  // Precision: of the codes taken, how many were right; recall: of the codes there, how many were
  // taken (a wrong code counts against both).
  const double precision = found ? static_cast<double>(right) / found : 1.0;
  const double recall = with_code ? static_cast<double>(right) / with_code : 1.0;
  std::cout << "verification codes: " << cases.size() << " messages (" << with_code
            << " with a code, " << decoys << " without; " << sms << " SMS), precision " << precision
            << ", recall " << recall << "\n"
            << misses.str();
  EXPECT_GE(cases.size(), 60u);
  EXPECT_GE(decoys * 3, static_cast<int>(cases.size()));
  EXPECT_GE(precision, 0.95) << misses.str();
  EXPECT_GE(recall, 0.95) << misses.str();
}

std::optional<std::string> sms(const std::string& body) {
  return extractVerificationCode("", body);
}

TEST(VerificationCode, GroupedCodesAreReturnedAsTyped) {
  EXPECT_EQ(sms("Your code: 123 456"), "123456");
  EXPECT_EQ(sms("Your code: 123-456"), "123456");
  EXPECT_EQ(sms("Your code: 1234 5678"), "12345678");
  EXPECT_EQ(sms("Your code: 12-34-56"), "123456");
  EXPECT_EQ(sms("Your code: K7Q-2XF"), "K7Q2XF");
  EXPECT_EQ(sms("Your code:\n4 8 2 9 1 3\n"), "482913");  // a box around each digit, as text
  // Groups of unequal size are a phone number or a date, never a code.
  EXPECT_EQ(sms("Your code: 555-0199"), std::nullopt);
  EXPECT_EQ(sms("Your code: 2026-11-25"), std::nullopt);
}

TEST(VerificationCode, NeedsAWordThatNamesACode) {
  EXPECT_EQ(sms("Your order 482913 has shipped."), std::nullopt);
  EXPECT_EQ(sms("Your verification code is below.\n\nThanks for joining!\n\n482913"), "482913");
  EXPECT_EQ(sms("482913"), std::nullopt);
  EXPECT_EQ(extractVerificationCode("Your login code", "482913"), "482913");
  // Other kinds of code do not count.
  EXPECT_EQ(sms("Enter your zip code 94107 to see offers"), std::nullopt);
  EXPECT_EQ(sms("Use promo code 4829 for 10% off"), std::nullopt);
  EXPECT_EQ(sms("Tracking code: 48291374"), std::nullopt);
  EXPECT_EQ(sms("Votre code postal : 75015"), std::nullopt);
}

TEST(VerificationCode, PricesDatesTimesAndPhoneNumbersAreNotCodes) {
  for (const char* decoy : {"Your code was used for a payment of $12.99",
                            "Code: 1.234,56 €",
                            "Code valid until 2026",
                            "Code valid until 2026-11-25",
                            "Code valid until 25/11/2026",
                            "Code valid until 10:30",
                            "Code questions? Call +1 555 010 0199",
                            "Code questions? Call (555) 010-0199",
                            "Code for order #123456",
                            "Code expires in 10 minutes",
                            "Code sent to card ending 4821",
                            "Code: EUR 4829",
                            "Code: 4829 EUR",
                            "Code: 1299€",
                            "Code: 75%",
                            "Code at 1600 Amphitheatre Parkway",
                            "Code at ****4821",
                            "Code at XX4821",
                            "Code: SAVE20",
                            "Code: 1080p",
                            "Code changes: 3456 customers use it",
                            "Verify your account: reply YES to 72345"}) {
    EXPECT_EQ(sms(decoy), std::nullopt) << decoy;
  }
}

TEST(VerificationCode, LinksAndAddressesAreNotRead) {
  EXPECT_EQ(sms("Verify: https://example.com/verify?code=482913"), std::nullopt);
  EXPECT_EQ(sms("Your code: see www.example.com/482913"), std::nullopt);
  EXPECT_EQ(sms("Your code was sent to user482913@example.com"), std::nullopt);
  // ... but a keyword-looking word in a link does not make the rest of the text a code either.
  EXPECT_EQ(sms("Order 482913: https://shop.example/verify-code"), std::nullopt);
}

TEST(VerificationCode, PrefersTheCandidateNextToTheKeyword) {
  EXPECT_EQ(sms("Order 4829 is ready. Your pickup code is 615209."), "615209");
  EXPECT_EQ(sms("Ref 48291374. Your OTP is 739204."), "739204");
  EXPECT_EQ(sms("G-482913 is your Google verification code."), "482913");
  EXPECT_EQ(sms("Your code is 4829. Call 1-800-555-0199 with questions."), "4829");
}

TEST(VerificationCode, ReadsOtherScripts) {
  EXPECT_EQ(sms("\xe3\x80\x90\xe6\x9f\x90\xe5\xba\x94\xe7\x94\xa8\xe3\x80\x91"
                "\xe9\xaa\x8c\xe8\xaf\x81\xe7\xa0\x81\xef\xbc\x9a"
                "482913\xef\xbc\x8c"
                "5\xe5\x88\x86\xe9\x92\x9f\xe5\x86\x85\xe6\x9c\x89\xe6\x95\x88"),
            "482913");  // 【某应用】验证码：482913，5分钟内有效
  EXPECT_EQ(sms("\xd0\x92\xd0\xb0\xd1\x88 \xd0\x9a\xd0\x9e\xd0\x94: 482913"),
            "482913");  // Ваш КОД: 482913
  EXPECT_EQ(sms("C\xc3\x93"
                "DIGO: 4829"),
            "4829");
}

TEST(VerificationCode, ReadsOnlyTheStartOfAHugeBody) {
  const std::string filler(kVerificationCodeScanBytes, 'x');
  EXPECT_EQ(extractVerificationCode("Your code", "482913\n" + filler), "482913");
  EXPECT_EQ(extractVerificationCode("Your code", filler + "\n482913"), std::nullopt);
  // A megabyte of text with numbers everywhere is no slower than its first 20 KB.
  std::string noisy;
  while (noisy.size() < 1024 * 1024) noisy += "code 12.99 2026-11-25 +1 555 010 0199 order #42 ";
  EXPECT_EQ(extractVerificationCode("", noisy), std::nullopt);
}

TEST(VerificationCode, MalformedUtf8IsHarmless) {
  EXPECT_EQ(sms("Your code: \xff\xfe 482913 \xc3"), "482913");
  EXPECT_EQ(sms(std::string("Code\0 482913", 12)), "482913");
}

}  // namespace
}  // namespace svc::sdk
