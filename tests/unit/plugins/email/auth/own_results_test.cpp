// Authentication-Results fields that claim to be this server's are removed from what arrives
// (RFC 8601 section 5), however they are written; other servers' and the body are left alone.
#include "auth/own_results.h"

#include <gtest/gtest.h>

namespace svc::plugins::email {
namespace {

const std::string kBody = "\r\nAuthentication-Results: mx.agents.test; dkim=pass\r\n";

TEST(OwnResults, AForgedFieldNamingUsIsRemovedAndTheRestKept) {
  const std::string message =
      "Received: from x\r\n"
      "Authentication-Results: mx.agents.test; dkim=pass header.d=github.com\r\n"
      "Authentication-Results: mx.elsewhere.example; spf=pass smtp.mailfrom=a@b.example\r\n"
      "From: GitHub <noreply@github.com>\r\n" +
      kBody;
  auto out = withoutOwnResults(message, "mx.agents.test");
  ASSERT_TRUE(out);
  EXPECT_EQ(*out,
            "Received: from x\r\n"
            "Authentication-Results: mx.elsewhere.example; spf=pass smtp.mailfrom=a@b.example\r\n"
            "From: GitHub <noreply@github.com>\r\n" +
                kBody);  // the body's look-alike is text, not a header
}

TEST(OwnResults, EveryWayOfWritingOurNameIsCaught) {
  for (const std::string field : {
           "authentication-results: MX.Agents.Test; dkim=pass\r\n",
           "AUTHENTICATION-RESULTS:mx.agents.test;dkim=pass\r\n",
           "Authentication-Results : mx.agents.test; dkim=pass\r\n",  // obsolete space
           "Authentication-Results: mx.agents.test.; dkim=pass\r\n",
           "Authentication-Results: \"mx.agents.test\"; dkim=pass\r\n",
           "Authentication-Results: (trust me (really)) mx.agents.test 1; dkim=pass\r\n",
           "Authentication-Results:\r\n\tmx.agents.test;\r\n\tdkim=pass header.d=github.com\r\n",
           "Authentication-Results: mx.agents.test; none\n",  // LF line ends
           "Authentication-Results: mx.agents.test\r\n",
       }) {
    auto out = withoutOwnResults("Subject: s\r\n" + field + "From: a@b.example\r\n\r\nbody\r\n",
                                 "mx.agents.test");
    ASSERT_TRUE(out) << field;
    EXPECT_EQ(*out, "Subject: s\r\nFrom: a@b.example\r\n\r\nbody\r\n") << field;
  }
}

TEST(OwnResults, OtherNamesAndOtherFieldsAreNotOurs) {
  for (const std::string field : {
           "Authentication-Results: mx.agents.test.evil.example; dkim=pass\r\n",
           "Authentication-Results: evil.mx.agents.test; dkim=pass\r\n",
           "Authentication-Results: (mx.agents.test) other.example; dkim=pass\r\n",
           "X-Authentication-Results: mx.agents.test; dkim=pass\r\n",
           "ARC-Authentication-Results: i=1; mx.agents.test; dkim=pass\r\n",
           "Subject: Authentication-Results: mx.agents.test; dkim=pass\r\n",
       }) {
    EXPECT_FALSE(withoutOwnResults("From: a@b.example\r\n" + field + "\r\nbody", "mx.agents.test"))
        << field;
  }
  EXPECT_FALSE(withoutOwnResults("", "mx.agents.test"));
  EXPECT_FALSE(withoutOwnResults("Authentication-Results: x; none\r\n", ""));
}

TEST(OwnResults, AMessageOfHeadersAloneAndSeveralForgeries) {
  auto out = withoutOwnResults(
      "Authentication-Results: mx.agents.test; spf=pass\r\n"
      "Authentication-Results: mx.agents.test;\r\n dmarc=pass\r\n"
      "Subject: s\r\n"
      "Authentication-Results: mx.agents.test; dkim=pass",  // no line end, no body
      "mx.agents.test");
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, "Subject: s\r\n");
}

}  // namespace
}  // namespace svc::plugins::email
