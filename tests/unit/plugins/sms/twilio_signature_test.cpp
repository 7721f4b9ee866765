// Twilio's webhook signature, against vectors from Twilio's documentation and from the official
// twilio npm package (getExpectedTwilioSignature / validateRequest, twilio 6.2.0).
#include "twilio_signature.h"

#include <gtest/gtest.h>

namespace svc::plugins::sms {
namespace {

const char* kDocUrl = "https://mycompany.com/myapp.php?foo=1&bar=2";

FormParams docParams() {
  return {{"CallSid", "CA1234567890ABCDE"},
          {"Caller", "+14158675310"},
          {"Digits", "1234"},
          {"From", "+14158675310"},
          {"To", "+18005551212"}};
}

TEST(TwilioSignature, MatchesTheVectorOfTwiliosDocumentation) {
  EXPECT_EQ(twilioSignature("12345", kDocUrl, docParams()), "GvWf1cFY/Q7PnoempGyD5oXAezc=");
  EXPECT_TRUE(verifyTwilioSignature("12345", "GvWf1cFY/Q7PnoempGyD5oXAezc=", kDocUrl, docParams()));
}

TEST(TwilioSignature, SortsParametersByNameWhateverTheOrderReceived) {
  const FormParams params = docParams();
  const FormParams reversed(params.rbegin(), params.rend());
  EXPECT_EQ(twilioSignature("12345", kDocUrl, reversed), "GvWf1cFY/Q7PnoempGyD5oXAezc=");
}

TEST(TwilioSignature, ARepeatedNameSignsItsDistinctValuesSorted) {
  // twilio-node: {b: ['2', '1'], a: 'x'} and {a: 'x', b: ['1', '2', '1']} sign alike.
  const char* url = "http://127.0.0.1:8080/a/";
  EXPECT_EQ(twilioSignature("12345", url, {{"b", "2"}, {"a", "x"}, {"b", "1"}}),
            "HILo69Aojz8O9p9nPtUtjQVmTMs=");
  EXPECT_EQ(twilioSignature("12345", url, {{"a", "x"}, {"b", "1"}, {"b", "2"}, {"b", "1"}}),
            "HILo69Aojz8O9p9nPtUtjQVmTMs=");
}

TEST(TwilioSignature, SignsUtf8ValuesAsTheirBytes) {
  EXPECT_EQ(twilioSignature("tok", "https://svc.example/api/sms/webhooks/twilio/sms/",
                            {{"Body", "Code: 123 456 \xC3\xA9 \xE2\x9C\x93"},
                             {"From", "+15551234567"},
                             {"To", "+12025550101"}}),
            "Z8egLeAys3EUdRTuvb/3ZrhwkQM=");
}

TEST(TwilioSignature, AnyChangeToUrlParametersOrKeyIsRefused) {
  const std::string good = twilioSignature("12345", kDocUrl, docParams());
  auto changed = docParams();
  changed[2].second = "1235";
  EXPECT_FALSE(verifyTwilioSignature("12345", good, kDocUrl, changed));
  auto renamed = docParams();
  renamed[2].first = "Digitz";
  EXPECT_FALSE(verifyTwilioSignature("12345", good, kDocUrl, renamed));
  auto added = docParams();
  added.emplace_back("Extra", "");
  EXPECT_FALSE(verifyTwilioSignature("12345", good, kDocUrl, added));
  EXPECT_FALSE(verifyTwilioSignature("12345", good, "https://mycompany.com/myapp.php?foo=1&bar=3",
                                     docParams()));
  EXPECT_FALSE(verifyTwilioSignature("54321", good, kDocUrl, docParams()));
}

TEST(TwilioSignature, AMangledOrMissingSignatureIsRefused) {
  std::string good = twilioSignature("12345", kDocUrl, docParams());
  std::string last_changed = good;
  last_changed[last_changed.size() - 2] ^= 1;
  EXPECT_FALSE(verifyTwilioSignature("12345", last_changed, kDocUrl, docParams()));
  EXPECT_FALSE(
      verifyTwilioSignature("12345", good.substr(0, good.size() - 1), kDocUrl, docParams()));
  EXPECT_FALSE(verifyTwilioSignature("12345", good + "=", kDocUrl, docParams()));
  EXPECT_FALSE(verifyTwilioSignature("12345", "", kDocUrl, docParams()));
  // No key configured verifies nothing, not even the signature of an empty key.
  EXPECT_FALSE(
      verifyTwilioSignature("", twilioSignature("", kDocUrl, docParams()), kDocUrl, docParams()));
}

TEST(TwilioSignature, TheUrlIsAcceptedWithAndWithoutItsPortAsTwilioNodeDoes) {
  // twilio-node's validateRequest accepts a signature made over https://host:443/... for the URL
  // without a port, and one made without the port for a URL with it.
  const FormParams params{{"a", "1"}};
  EXPECT_EQ(twilioSignature("12345", "https://mycompany.com:443/myapp.php?foo=1&bar=2", params),
            "PNoGt+3x9Rw9trQEh4xRhnVeWa0=");
  EXPECT_TRUE(verifyTwilioSignature("12345", "PNoGt+3x9Rw9trQEh4xRhnVeWa0=", kDocUrl, params));
  const std::string without = twilioSignature("12345", "http://127.0.0.1/a/", params);
  EXPECT_TRUE(verifyTwilioSignature("12345", without, "http://127.0.0.1:8080/a/", params));
  // Another port is another URL.
  EXPECT_FALSE(verifyTwilioSignature("12345",
                                     twilioSignature("12345", "http://127.0.0.1:9/a/", params),
                                     "http://127.0.0.1:8080/a/", params));
  // An IPv6 literal's colons are not a port.
  const std::string v6 = twilioSignature("12345", "http://[::1]:8080/a/", params);
  EXPECT_TRUE(verifyTwilioSignature("12345", v6, "http://[::1]:8080/a/", params));
  EXPECT_TRUE(verifyTwilioSignature("12345", twilioSignature("12345", "http://[::1]/a/", params),
                                    "http://[::1]:8080/a/", params));
}

TEST(TwilioSignature, FormBodiesDecodeAsBrowsersAndTwilioEncodeThem) {
  const FormParams p = parseForm("Body=Code%3A+123+%C3%A9+a%2Bb%26c%3Dd&From=%2B1555&b=1&b=2&e=");
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0], (std::pair<std::string, std::string>{"Body", "Code: 123 \xC3\xA9 a+b&c=d"}));
  EXPECT_EQ(p[1].second, "+1555");
  EXPECT_EQ(p[2], (std::pair<std::string, std::string>{"b", "1"}));
  EXPECT_EQ(p[3], (std::pair<std::string, std::string>{"b", "2"}));
  EXPECT_EQ(p[4], (std::pair<std::string, std::string>{"e", ""}));
}

}  // namespace
}  // namespace svc::plugins::sms
