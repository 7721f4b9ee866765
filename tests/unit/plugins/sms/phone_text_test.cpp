// Numbers, segments and conversation ids: what carriers count and what the routes accept.
#include "phone_text.h"
#include "sms_config.h"
#include "sms_messages.h"

#include <svc/sdk/addresses.h>

#include <gtest/gtest.h>

namespace svc::plugins::sms {
namespace {

TEST(E164, NormalizesSeparatorsAndRefusesTheRest) {
  EXPECT_EQ(sdk::normalizeE164("+1 (202) 555-0100"), "+12025550100");
  EXPECT_EQ(sdk::normalizeE164("+44.7700.900000"), "+447700900000");
  EXPECT_FALSE(sdk::normalizeE164("12025550100"));        // no +
  EXPECT_FALSE(sdk::normalizeE164("+1202555"));           // 7 digits
  EXPECT_FALSE(sdk::normalizeE164("+1234567890123456"));  // 16 digits
  EXPECT_FALSE(sdk::normalizeE164("+0123456789"));        // no country code starts with 0
  EXPECT_FALSE(sdk::normalizeE164("+1202555010a"));
  EXPECT_FALSE(sdk::normalizeE164("+12025+550100"));
  EXPECT_TRUE(isCountryCode("US"));
  EXPECT_TRUE(isCountryCode("gb"));
  EXPECT_FALSE(isCountryCode("USA"));
  EXPECT_FALSE(isCountryCode("\xc3\xa9"));  // not ASCII letters
  EXPECT_FALSE(isCountryCode("1x"));
}

TEST(Segments, Gsm7CountsSeptetsAndSplitsAt153) {
  EXPECT_EQ(countSegments("").count, 1);
  EXPECT_EQ(countSegments(std::string(160, 'a')).count, 1);
  EXPECT_EQ(countSegments(std::string(161, 'a')).count, 2);
  EXPECT_EQ(countSegments(std::string(306, 'a')).count, 2);
  EXPECT_EQ(countSegments(std::string(307, 'a')).count, 3);
  EXPECT_EQ(countSegments("caf\xc3\xa9 \xc2\xa3").encoding, "GSM-7");  // é and £ are GSM
  // An extension character costs two septets: 80 carets are 160 septets, 81 are two segments.
  std::string carets(80, '^');
  EXPECT_EQ(countSegments(carets).count, 1);
  EXPECT_EQ(countSegments(carets + "^").count, 2);
  // A split never separates the escape from its character: 152 plain then a caret.
  EXPECT_EQ(countSegments(std::string(152, 'a') + "^" + std::string(8, 'a')).count, 2);
  EXPECT_EQ(countSegments(std::string(152, 'a') + "^" + std::string(153, 'a')).count, 3);
  EXPECT_EQ(countSegments("\xe2\x82\xac").encoding, "GSM-7");  // the euro sign is in the extension
}

TEST(Segments, Ucs2CountsUnitsAndKeepsSurrogatePairsWhole) {
  const std::string smile = "\xf0\x9f\x98\x80";  // one character, two UTF-16 units
  EXPECT_EQ(countSegments(smile).encoding, "UCS-2");
  std::string many;
  for (int i = 0; i < 35; ++i) many += smile;
  EXPECT_EQ(countSegments(many).count, 1);  // 70 units
  EXPECT_EQ(countSegments(many + smile).count, 2);
  // 66 units then a pair: the pair goes whole to the second segment, so 134 units take three
  // segments (66, 67, 1), not two.
  EXPECT_EQ(countSegments(std::string(66, 'a') + smile + std::string(66, 'a')).count, 3);
  EXPECT_EQ(countSegments(std::string(67, 'a') + smile + std::string(65, 'a')).count, 2);
  EXPECT_EQ(countSegments("\xe4\xb8\xad").encoding, "UCS-2");  // Chinese
  EXPECT_EQ(characterCount("a\xc3\xa9" + smile), 3u);
}

TEST(NumberRanges, ParseCountryRangesAndRefuseNonsense) {
  auto ranges = parseNumberRanges("US:+12025550100-+12025550199, gb:+447700900000-+447700900001");
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].country, "US");
  EXPECT_EQ(ranges[0].size, 100u);
  EXPECT_EQ(ranges[0].at(99), "+12025550199");
  EXPECT_EQ(ranges[1].country, "GB");
  EXPECT_EQ(ranges[1].at(1), "+447700900001");
  for (const char* bad :
       {"+12025550100-+12025550199", "US:+12025550199-+12025550100", "US:+1202555010-+12025550199",
        "USA:+12025550100-+12025550199", "US:12025550100-12025550199", "US:+12025550100"}) {
    EXPECT_THROW(parseNumberRanges(bad), std::runtime_error) << bad;
  }
}

TEST(ConversationIds, ArePhoneIdUnderscoreNumber) {
  auto id = parseConversationId("0B5D1E8E-8F0C-4A8E-9D53-0D7E0E4F3A11_+12025550100");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->first, "0b5d1e8e-8f0c-4a8e-9d53-0d7e0e4f3a11");
  EXPECT_EQ(id->second, "+12025550100");
  EXPECT_FALSE(parseConversationId("nonsense"));
  EXPECT_FALSE(parseConversationId("not-a-uuid_+12025550100"));
  EXPECT_FALSE(parseConversationId("0b5d1e8e-8f0c-4a8e-9d53-0d7e0e4f3a11_"));
  EXPECT_FALSE(parseConversationId("0b5d1e8e-8f0c-4a8e-9d53-0d7e0e4f3a11_a\nb"));
}

}  // namespace
}  // namespace svc::plugins::sms
