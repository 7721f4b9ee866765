// The lenient decoders mail needs: base64 that skips what does not belong, quoted-printable that
// keeps a stray `=`, and text repaired to UTF-8.
#include "mime_text.h"

#include <gtest/gtest.h>

namespace svc::plugins::email {
namespace {

TEST(MimeText, Base64SkipsWhiteSpaceAndPaddingAndReportsForeignCharacters) {
  bool bad = false;
  EXPECT_EQ(decodeBase64Lenient("SGVs\r\nbG8g\td29y bGQ=", &bad), "Hello world");
  EXPECT_FALSE(bad);
  EXPECT_EQ(decodeBase64Lenient("SGVsbG8", &bad), "Hello");  // no padding
  EXPECT_FALSE(bad);
  EXPECT_EQ(decodeBase64Lenient("SG*Vs!bG8=", &bad), "Hello");
  EXPECT_TRUE(bad);
  EXPECT_EQ(decodeBase64Lenient("SGVsbG8gS", nullptr), "Hello ");     // a lone sixth of a byte
  EXPECT_EQ(decodeBase64Lenient("SGVsbG8=S", nullptr), "Hello\x12");  // '=' is skipped too
  EXPECT_EQ(decodeBase64Lenient("", nullptr), "");
  // Padding in the middle is skipped: the rest is one stream.
  EXPECT_EQ(decodeBase64Lenient("QQ==QUFB", nullptr), decodeBase64Lenient("QQQUFB", nullptr));
}

TEST(MimeText, QuotedPrintableKeepsWhatItCannotRead) {
  EXPECT_EQ(decodeQuotedPrintable("caf=C3=A9 =3D ok", false), "caf\xC3\xA9 = ok");
  EXPECT_EQ(decodeQuotedPrintable("soft=\r\nbreak=\nhere", false), "softbreakhere");
  EXPECT_EQ(decodeQuotedPrintable("trailing= \t\r\nspace", false), "trailingspace");
  EXPECT_EQ(decodeQuotedPrintable("a = b =zz =4", false), "a = b =zz =4");
  EXPECT_EQ(decodeQuotedPrintable("a_b", false), "a_b");
  EXPECT_EQ(decodeQuotedPrintable("a_b=5F", true), "a b_");
}

TEST(MimeText, TextIsRepairedToUtf8) {
  EXPECT_EQ(repairUtf8("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(repairUtf8("a\xFF"
                       "b\xC3"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(headerText("caf\xE9"), "caf\xC3\xA9");  // not UTF-8: Latin-1
  EXPECT_EQ(headerText("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(hexValue('a'), 10);
  EXPECT_EQ(hexValue('F'), 15);
  EXPECT_EQ(hexValue('g'), -1);
}

}  // namespace
}  // namespace svc::plugins::email
