#include "user_code.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

namespace svc::plugins::auth {
namespace {

TEST(UserCode, NewCodesAreEightLettersOfTheAlphabet) {
  std::set<std::string> seen;
  for (int i = 0; i < 500; ++i) {
    std::string code = newUserCode();
    ASSERT_EQ(code.size(), 8u);
    for (char c : code) EXPECT_NE(std::strchr(kUserCodeAlphabet, c), nullptr) << code;
    seen.insert(code);
  }
  // 20^8 codes: 500 draws all differ unless the generator is broken.
  EXPECT_EQ(seen.size(), 500u);
}

TEST(UserCode, EveryLetterOfTheAlphabetIsDrawn) {
  std::set<char> letters;
  for (int i = 0; i < 200; ++i) {
    for (char c : newUserCode()) letters.insert(c);
  }
  EXPECT_EQ(letters.size(), std::strlen(kUserCodeAlphabet));
}

TEST(UserCode, NormalizeAcceptsAnyCaseWithOrWithoutHyphenOrSpaces) {
  EXPECT_EQ(normalizeUserCode("BCDF-GHJK"), "BCDFGHJK");
  EXPECT_EQ(normalizeUserCode("bcdf-ghjk"), "BCDFGHJK");
  EXPECT_EQ(normalizeUserCode("bcdfghjk"), "BCDFGHJK");
  EXPECT_EQ(normalizeUserCode(" BCDF GHJK "), "BCDFGHJK");
  EXPECT_EQ(normalizeUserCode("b-c-d-f-g-h-j-k"), "BCDFGHJK");
}

TEST(UserCode, NormalizeRefusesWhatIsNoCode) {
  EXPECT_EQ(normalizeUserCode(""), "");
  EXPECT_EQ(normalizeUserCode("BCDF-GHJ"), "");    // seven letters
  EXPECT_EQ(normalizeUserCode("BCDF-GHJKL"), "");  // nine
  EXPECT_EQ(normalizeUserCode("ABCD-EFGH"), "");   // vowels are not in the alphabet
  EXPECT_EQ(normalizeUserCode("BCDF-GHJ1"), "");   // digits neither
  EXPECT_EQ(normalizeUserCode("BCDF_GHJK"), "");   // only hyphens and spaces are dropped
  EXPECT_EQ(normalizeUserCode("BCDF\tGHJK"), "");
}

TEST(UserCode, DisplayHyphenatesAndRoundTrips) {
  EXPECT_EQ(displayUserCode("BCDFGHJK"), "BCDF-GHJK");
  for (int i = 0; i < 50; ++i) {
    std::string code = newUserCode();
    EXPECT_EQ(normalizeUserCode(displayUserCode(code)), code);
  }
}

}  // namespace
}  // namespace svc::plugins::auth
