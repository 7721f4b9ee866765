#include <svc/sdk/http.h>
#include <svc/sdk/util.h>
#include <svc/sdk/version.h>

#include <Poco/Base64Encoder.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

namespace svc::sdk {

// Built in version_signature_test_*.cpp with other standard-library settings.
const char* signatureWithGlibcxxAssertions();
const char* signatureWithGlibcxxDebug();

namespace {

TEST(Utf8, AcceptsWellFormedAndRefusesMalformed) {
  EXPECT_TRUE(isValidUtf8("plain ascii"));
  EXPECT_TRUE(isValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(isValidUtf8("\xc3"));              // truncated
  EXPECT_FALSE(isValidUtf8("\xc0\xaf"));          // overlong slash
  EXPECT_FALSE(isValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(isValidUtf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_FALSE(isValidUtf8("\xff"));
  EXPECT_FALSE(isValidUtf8("\xe2\x28\xa1"));
}

TEST(QuoteForDetail, KeepsShortPrintableTextAsItIs) {
  EXPECT_EQ(quoteForDetail("/api/nowhere/"), "/api/nowhere/");
  EXPECT_EQ(quoteForDetail("caf\xc3\xa9 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_EQ(quoteForDetail(""), "");
}

TEST(QuoteForDetail, ReplacesInvalidUtf8AndControlsWithTheReplacementCharacter) {
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(quoteForDetail("a\xef"
                           "b"),
            "a" + fffd + "b");                                    // a lone lead byte
  EXPECT_EQ(quoteForDetail("\xed\xa0\x80"), fffd + fffd + fffd);  // a surrogate, byte by byte
  EXPECT_EQ(quoteForDetail("\xc3"), fffd);                        // truncated at the end
  EXPECT_EQ(quoteForDetail("a\nb\x7f"
                           "c\xc2\x85"),
            "a" + fffd + "b" + fffd + "c" + fffd);
  EXPECT_EQ(quoteForDetail("x\xe2\x80\xaey"), "x" + fffd + "y");  // right-to-left override
  EXPECT_TRUE(isValidUtf8(quoteForDetail("\xff\xfe\xc0\xaf\xf4\x90\x80\x80")));
}

TEST(QuoteForDetail, CutsLongInputByCharactersWithAnEllipsis) {
  std::string digits(100000, '9');
  EXPECT_EQ(quoteForDetail(digits), std::string(80, '9') + "\xe2\x80\xa6");
  EXPECT_EQ(quoteForDetail(digits, 3), "999\xe2\x80\xa6");
  EXPECT_EQ(quoteForDetail("999", 3), "999");  // exactly max: nothing was cut
  // A cut never splits a character: five two-byte characters cut to two.
  EXPECT_EQ(quoteForDetail("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 2),
            "\xc3\xa9\xc3\xa9\xe2\x80\xa6");
}

TEST(Base64, EncodesPaddedOnOneLineAndDecodesBack) {
  EXPECT_EQ(sdk::base64(""), "");
  EXPECT_EQ(sdk::base64("f"), "Zg==");
  EXPECT_EQ(sdk::base64("fo"), "Zm8=");
  EXPECT_EQ(sdk::base64("foobar"), "Zm9vYmFy");
  const std::string long_input(100, '\xFB');
  const std::string encoded = sdk::base64(long_input);
  EXPECT_EQ(encoded.find_first_of("\r\n"), std::string::npos);
  EXPECT_EQ(sdk::base64Decode(encoded), long_input);
  EXPECT_EQ(sdk::base64Decode("Zm9v\r\nYmFy"), "foobar");
  EXPECT_EQ(sdk::base64Decode("Zg=="), "f");
  EXPECT_EQ(sdk::base64Decode("Zm8="), "fo");
  EXPECT_EQ(sdk::base64Decode(""), "");
}

// What Poco's stream encoder wrote (the SDK's encoder before OpenSSL's block encoder), for every
// length of a run of every byte value.
TEST(Base64, TheUrlAlphabetUnpaddedAndBackAsPocosEncoderWroteIt) {
  for (int length = 0; length < 70; ++length) {
    std::string bytes;
    for (int i = 0; i < length; ++i) bytes += static_cast<char>((i * 97 + length * 31) & 0xff);
    std::ostringstream out;
    Poco::Base64Encoder encoder(out, Poco::BASE64_URL_ENCODING | Poco::BASE64_NO_PADDING);
    encoder.rdbuf()->setLineLength(0);
    encoder << bytes;
    encoder.close();
    EXPECT_EQ(sdk::base64url(bytes), out.str()) << length;
    EXPECT_EQ(sdk::base64urlDecode(out.str()), bytes) << length;
    std::ostringstream padded;
    Poco::Base64Encoder plain(padded);
    plain.rdbuf()->setLineLength(0);
    plain << bytes;
    plain.close();
    EXPECT_EQ(sdk::base64(bytes), padded.str()) << length;
  }
  // Past the 3 MiB pieces the encoder works in: the same text as in one piece.
  std::string large(3 * 1024 * 1024 + 5, '\0');
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7);
  std::ostringstream whole;
  Poco::Base64Encoder one(whole);
  one.rdbuf()->setLineLength(0);
  one << large;
  one.close();
  EXPECT_EQ(sdk::base64(large), whole.str());
  EXPECT_EQ(sdk::base64Decode(whole.str()), large);
  EXPECT_EQ(sdk::base64url("\xfb\xff"), "-_8");
  EXPECT_EQ(sdk::base64urlDecode("-_8="), "\xfb\xff");  // padded too
  EXPECT_FALSE(sdk::base64urlDecode("-_8+"));           // not the url alphabet
  EXPECT_FALSE(sdk::base64urlDecode("Z"));              // no base64 is that long
}

TEST(Base64, DecodingRefusesWhatIsNotBase64) {
  EXPECT_FALSE(sdk::base64Decode("Zg"));  // unpadded
  EXPECT_FALSE(sdk::base64Decode("Zm9vY"));
  EXPECT_FALSE(sdk::base64Decode("Zm9*"));
  EXPECT_FALSE(sdk::base64Decode("Zm9v-_=="));  // base64url is another alphabet
  EXPECT_FALSE(sdk::base64Decode("Zg==Zm9v"));  // padding ends the text
  EXPECT_FALSE(sdk::base64Decode("Z==="));
  EXPECT_FALSE(sdk::base64Decode("QUJD----"));  // not ABC and an end
}

TEST(Hex, EncodesLowerCaseTwoDigitsAByte) {
  EXPECT_EQ(sdk::hexEncode(""), "");
  EXPECT_EQ(sdk::hexEncode(std::string("\x00\x0f\xab\xff", 4)), "000fabff");
  EXPECT_EQ(sdk::sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Uuid, NewUuidsAreVersion4LowercaseAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = newUuid();
    EXPECT_TRUE(isUuid(id));
    EXPECT_EQ(id[14], '4');
    EXPECT_EQ(id.find_first_of("ABCDEF"), std::string::npos);
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_FALSE(isUuid("not-a-uuid"));
  EXPECT_FALSE(isUuid("a1a1a1a1-0000-4000-8000-00000000000g"));
}

TEST(Timestamps, IsoWithMicroseconds) {
  EXPECT_EQ(isoTimestamp(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(isoTimestamp(1795344038123456LL), "2026-11-22T10:40:38.123456Z");
}

TEST(Abi, KernelIsCompatibleWithItselfAndNamesBothSidesOtherwise) {
  const std::string kernel_version =
      std::to_string(SVC_SDK_VERSION_MAJOR) + "." + std::to_string(SVC_SDK_VERSION_MINOR);
  EXPECT_EQ(abiMismatch(kernelAbi()), "");
  AbiInfo other{SVC_SDK_VERSION_MAJOR + 1, 0, kernelAbi().signature};
  std::string why = abiMismatch(other);
  EXPECT_NE(why.find("SDK major version mismatch"), std::string::npos) << why;
  EXPECT_NE(why.find("was built with SDK " + std::to_string(SVC_SDK_VERSION_MAJOR + 1) + ".0"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("this kernel needs SDK " + kernel_version), std::string::npos) << why;
  AbiInfo sig{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR, "clang-99;cxx11abi=0;ptr=4;poco=0"};
  why = abiMismatch(sig);
  EXPECT_NE(why.find("clang-99"), std::string::npos) << why;
  EXPECT_NE(why.find(kernelAbi().signature), std::string::npos) << why;
  AbiInfo newer{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR + 1, kernelAbi().signature};
  EXPECT_NE(abiMismatch(newer), "");
}

// Objects cross the boundary by value, so a minor version is as binding as a major one, either way.
TEST(Abi, AnotherMinorVersionIsRefusedOlderOrNewer) {
  const char* sig = kernelAbi().signature;
  const AbiInfo kernel{2, 3, sig};
  EXPECT_EQ(abiMismatch(AbiInfo{2, 3, sig}, kernel, "p.so"), "");
  std::string older = abiMismatch(AbiInfo{2, 2, sig}, kernel, "p.so");
  EXPECT_EQ(older, std::string("SDK minor version mismatch (built for an older SDK: rebuild it "
                               "against SDK 2.3): p.so was built with SDK 2.2 (") +
                       sig + "), this kernel needs SDK 2.3 (" + sig + ")");
  std::string newer = abiMismatch(AbiInfo{2, 4, sig}, kernel, "p.so");
  EXPECT_EQ(newer, std::string("SDK minor version mismatch (built for a newer SDK: it needs a "
                               "newer svcd): p.so was built with SDK 2.4 (") +
                       sig + "), this kernel needs SDK 2.3 (" + sig + ")");
}

TEST(Abi, ASignatureMismatchNamesTheFieldsThatDiffer) {
  const AbiInfo kernel{2, 0,
                       "compiler=gcc-12.2;stdlib=libstdc++;cxx11abi=1;debug=0;ptr=8;poco=1.11"};
  AbiInfo poco{2, 0, "compiler=gcc-12.2;stdlib=libstdc++;cxx11abi=1;debug=0;ptr=8;poco=1.12"};
  std::string why = abiMismatch(poco, kernel, "p.so");
  EXPECT_EQ(why.rfind("build signature mismatch (differs in poco): p.so was built with SDK 2.0 "
                      "(compiler=gcc-12.2;stdlib=libstdc++;cxx11abi=1;debug=0;ptr=8;poco=1.12), "
                      "this kernel needs SDK 2.0 (",
                      0),
            0u)
      << why;
  AbiInfo debug{2, 0, "compiler=gcc-12.2;stdlib=libstdc++;cxx11abi=0;debug=1;ptr=8;poco=1.11"};
  why = abiMismatch(debug, kernel, "p.so");
  EXPECT_NE(why.find("build signature mismatch (differs in cxx11abi, debug)"), std::string::npos)
      << why;
  AbiInfo none{2, 0, nullptr};
  why = abiMismatch(none, kernel, "p.so");
  EXPECT_NE(why.find("(no signature)"), std::string::npos) << why;
}

TEST(Abi, TheSignatureNamesPocosMajorMinorAndTheLayoutChangingDebugModeOnly) {
  const std::string mine = kernelAbi().signature;
  const std::string poco = ";poco=" + std::to_string(POCO_VERSION >> 24) + "." +
                           std::to_string((POCO_VERSION >> 16) & 0xFF);
  EXPECT_EQ(mine.substr(mine.size() - poco.size()), poco) << mine;  // last, and no patch level
  EXPECT_NE(mine.find("ptr=" + std::to_string(sizeof(void*))), std::string::npos) << mine;
  EXPECT_NE(mine.find("debug=0"), std::string::npos) << mine;
  EXPECT_EQ(SVC_SDK_BUILD_SIGNATURE, mine);
  // _GLIBCXX_ASSERTIONS checks bounds without changing a layout: the same signature.
  EXPECT_EQ(signatureWithGlibcxxAssertions(), mine);
  // _GLIBCXX_DEBUG swaps in containers with other layouts: another signature, the kernel refuses.
  std::string debug = signatureWithGlibcxxDebug();
  EXPECT_NE(debug.find("debug=1"), std::string::npos) << debug;
  EXPECT_NE(abiMismatch(
                AbiInfo{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR, signatureWithGlibcxxDebug()}),
            "");
}

TEST(BearerCredential, TheSchemeIsCaseInsensitiveAndBlanksAroundTheCredentialAreSkipped) {
  for (const char* header : {"Bearer k1", "bearer k1", "BEARER k1", "bEaReR k1", "Bearer    k1",
                             "Bearer\tk1", "  Bearer k1  "}) {
    EXPECT_EQ(bearerCredential(header).value_or("(none)"), "k1") << header;
  }
}

TEST(BearerCredential, OtherSchemesAndEmptyCredentialsAreNone) {
  for (const char* header :
       {"", "Basic eDp5", "Bearer", "Bearer   ", "Bearerk1", "Bear k1", "Token k1"}) {
    EXPECT_FALSE(bearerCredential(header)) << header;
  }
}

TEST(HttpError, CarriesFieldErrorsExtrasAndHeaders) {
  HttpError e = HttpError::invalid("name", "must not be empty");
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "invalid");
  EXPECT_EQ(e.errors().at("name").front(), "must not be empty");
  e.extra("retry_after_seconds", 3).header("Retry-After", "3");
  EXPECT_EQ(e.extras().size(), 1u);
  EXPECT_EQ(e.headers().front().second, "3");
}

TEST(FieldErrors, AProblemOfSeveralFieldsIsSaidOnceNamingThemAll) {
  FieldErrors errors;
  errors.add("digits", "at least one must be true");
  errors.add("length", "must be at least 4");
  errors.add("special", "at least one must be true");
  try {
    errors.throwIfAny();
    FAIL() << "nothing thrown";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.detail(),
              "The request is invalid: digits, special: at least one must be true; length: must "
              "be at least 4.");
    // Each field still carries it, for a client that reads `errors` by field.
    EXPECT_EQ(e.errors().at("digits").front(), "at least one must be true");
    EXPECT_EQ(e.errors().at("special").front(), "at least one must be true");
    EXPECT_EQ(e.errors().at("length").front(), "must be at least 4");
  }
}

}  // namespace
}  // namespace svc::sdk

#include <svc/sdk/rate_limit.h>

namespace svc::sdk {
namespace {

TEST(RateLimiter, AllowsTheBurstThenAsksToWaitPerKey) {
  RateLimiter limiter(3);
  EXPECT_EQ(limiter.take("a"), 0);
  EXPECT_EQ(limiter.take("a"), 0);
  EXPECT_EQ(limiter.peek("a"), 0);
  EXPECT_EQ(limiter.take("a"), 0);
  int wait = limiter.take("a");
  EXPECT_GE(wait, 1);
  EXPECT_LE(wait, 20);              // one token every 20 s
  EXPECT_EQ(limiter.take("b"), 0);  // other keys are unaffected
  try {
    limiter.takeOrThrow("a", "tries");
    FAIL() << "expected 429";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 429);
    EXPECT_EQ(e.code(), "throttled");
    EXPECT_EQ(e.headers().front().first, "Retry-After");
  }
  RateLimiter unlimited(0);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(unlimited.take("x"), 0);
}

TEST(ParseIsoMicros, ReadsTimesWithZonesAndFractions) {
  EXPECT_EQ(parseIsoMicros("1970-01-01T00:00:01Z"), 1000000);
  EXPECT_EQ(parseIsoMicros("1970-01-01T00:00:00.000002Z"), 2);
  EXPECT_EQ(parseIsoMicros("1970-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(parseIsoMicros("1970-01-01T00:00:00"), 0);  // no zone: UTC
  EXPECT_FALSE(parseIsoMicros("1970-01-01"));
  EXPECT_FALSE(parseIsoMicros("1970-01-01T00:00:00Z trailing"));
  EXPECT_FALSE(parseIsoMicros("now"));
}

TEST(WindowWait, AllowsSendsUntilTheLimitIsReached) {
  const std::int64_t now = 10'000'000'000;
  EXPECT_FALSE(windowWait({}, 2, 3600, now));
  EXPECT_FALSE(windowWait({now - 1'000'000}, 2, 3600, now));
  EXPECT_FALSE(windowWait({now, now, now}, 0, 3600, now));  // 0: no limit
  EXPECT_FALSE(windowWait({now, now, now}, -1, 3600, now));
}

TEST(WindowWait, AtTheLimitWaitsUntilTheOldestOfTheLastSendsLeavesTheWindow) {
  const std::int64_t now = 10'000'000'000;
  // Newest first: the last of `limit` is the one that leaves first.
  auto wait = windowWait({now - 10'000'000, now - 600'000'000}, 2, 3600, now);
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, 3600 - 600 + 1);
  // One microsecond before it leaves: still a whole second (never 0, which reads as "now").
  wait = windowWait({now - 3600'000'000 + 1}, 1, 3600, now);
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, 1);
  wait = windowWait({now, now - 86'000'000'000}, 2, 86400, now);
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, 401);
}

TEST(SafeText, TruncatesBetweenCharactersAndKeepsLinesForTerminals) {
  EXPECT_EQ(truncateUtf8("abc", 5), "abc");
  EXPECT_EQ(truncateUtf8("ab\xc3\xa9", 3), "ab");  // never half of the é
  EXPECT_EQ(truncateUtf8("ab\xc3\xa9", 4), "ab\xc3\xa9");
  EXPECT_EQ(truncateUtf8("\xf0\x9f\x98\x80x", 3), "");
  EXPECT_EQ(safeForTerminal("line 1\nline\t2"), "line 1\nline\t2");
  EXPECT_EQ(safeForTerminal("\x1b]0;title\x07\x1b[2J"),
            "\xEF\xBF\xBD]0;title\xEF\xBF\xBD\xEF\xBF\xBD[2J");
  EXPECT_EQ(safeForTerminal(std::string(500, 'x')).size(), 500u);  // no length limit
}

// A file of secrets is private when it is a regular file of this user that no one else may read,
// write or run: any group or other bit, or a directory, is named.
TEST(PrivateFile, OnlyARegularFileOfThisUserWithoutGroupOrOtherBitsIsPrivate) {
  Poco::TemporaryFile file;
  std::ofstream(file.path()) << "secret";
  for (const auto& [mode, problem] : std::vector<std::pair<mode_t, std::string>>{
           {0600, ""},
           {0400, ""},
           {0700, ""},
           {0640, "other users may read it; make it mode 0600 (chmod 600)"},
           {0604, "other users may read it; make it mode 0600 (chmod 600)"},
           {0620, "other users may read it; make it mode 0600 (chmod 600)"},
           {0601, "other users may read it; make it mode 0600 (chmod 600)"}}) {
    ASSERT_EQ(::chmod(file.path().c_str(), mode), 0);
    const int fd = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(privateFileProblem(fd), problem) << std::oct << mode;
    ::close(fd);
  }
  if (::geteuid() == 0) {  // only root can give a file away
    ASSERT_EQ(::chmod(file.path().c_str(), 0600), 0);
    ASSERT_EQ(::chown(file.path().c_str(), 65534, 65534), 0);
    const int fd = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(privateFileProblem(fd), "belongs to another user than svcd's");
    ::close(fd);
  }
  const int dir = ::open("/tmp", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  EXPECT_EQ(privateFileProblem(dir), "is not a regular file");
  ::close(dir);
  EXPECT_EQ(privateFileProblem(-1).rfind("cannot be examined: ", 0), 0u);
}

}  // namespace
}  // namespace svc::sdk
