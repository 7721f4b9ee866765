#include "key_format.h"

#include <svc/sdk/util.h>
#include "passwords.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <regex>
#include <set>

namespace svc::plugins::auth {
namespace {

using sdk::sha256Hex;

TEST(KeyFormat, KeysHavePrefixBase62BodyAndChecksum) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    std::string m = newKey(KeyKind::kManagement), id = newKey(KeyKind::kIdentity);
    EXPECT_TRUE(std::regex_match(m, std::regex("svc_mgmt_[0-9A-Za-z]{49}"))) << m;
    EXPECT_TRUE(std::regex_match(id, std::regex("svc_id_[0-9A-Za-z]{49}"))) << id;
    EXPECT_EQ(checkKey(m), KeyKind::kManagement);
    EXPECT_EQ(checkKey(id), KeyKind::kIdentity);
    seen.insert(m);
  }
  EXPECT_EQ(seen.size(), 200u);
}

TEST(KeyFormat, ATypoIsCaughtByTheChecksum) {
  std::string key = newKey(KeyKind::kManagement);
  for (std::size_t i = 9; i < key.size(); ++i) {
    std::string typo = key;
    typo[i] = typo[i] == 'x' ? 'y' : 'x';
    EXPECT_FALSE(checkKey(typo)) << "position " << i;
  }
  EXPECT_FALSE(checkKey(key.substr(0, key.size() - 1)));
  EXPECT_FALSE(checkKey(key + "0"));
  EXPECT_FALSE(checkKey("svc_mgmt_"));
  EXPECT_FALSE(checkKey("svc_other_" + key.substr(9)));
  std::string bad_char = key;
  bad_char[20] = '-';
  EXPECT_FALSE(checkKey(bad_char));
}

// 43 base62 digits can write numbers past 2^256 - 1; no key has such a body, so one is a typo.
TEST(KeyFormat, ABodyLargerThan256BitsIsRefused) {
  unsigned char all_ones[32];
  std::fill(std::begin(all_ones), std::end(all_ones), 0xff);
  const std::string largest = "svc_mgmt_" + base62(all_ones, sizeof all_ones, 43);
  EXPECT_EQ(checkKey(largest + keyChecksum(largest)), KeyKind::kManagement);
  const std::string beyond = "svc_mgmt_" + std::string(43, 'z');
  EXPECT_EQ(checkKey(beyond + keyChecksum(beyond)), std::nullopt);
}

TEST(KeyFormat, Base62AndHashes) {
  unsigned char zero[4] = {0, 0, 0, 0}, max[4] = {255, 255, 255, 255};
  EXPECT_EQ(base62(zero, 4, 6), "000000");
  EXPECT_EQ(base62(max, 4, 6), "4gfFC3");  // 4294967295 in base62
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(visiblePrefix("svc_mgmt_ABCDEFGH"), "svc_mgmt");  // not a valid key: 8 characters
}

TEST(Passwords, HashesAreSaltedAndVerify) {
  std::string a = hashPassword("correct horse"), b = hashPassword("correct horse");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("scrypt$32768$8$1$", 0), 0u);
  EXPECT_TRUE(verifyPassword("correct horse", a));
  EXPECT_FALSE(verifyPassword("correct horsE", a));
  EXPECT_FALSE(verifyPassword("correct horse", "scrypt$1$1$1$x$y"));
  EXPECT_FALSE(verifyPassword("correct horse", "garbage"));
}

}  // namespace
}  // namespace svc::plugins::auth
