// The client side of end-to-end encryption (svc/sdk/e2e.h, e2e_cli.h): known answers pinning the
// contract's KDF (Argon2id13, t 3, m 65536 KiB, p 1, 16-byte salt) and key derivation, computed
// with an independent implementation (node's libsodium-wrappers-sumo 0.8.4, libsodium 1.0.22),
// whose sealed boxes must open here; sealing, opening, the verifier, unlocking, and the memory
// type. Each Argon2id run costs about half a second and 64 MiB, so there are five.
#include <svc/sdk/e2e.h>
#include <svc/sdk/e2e_cli.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Object.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <fstream>

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace svc::sdk::e2e {
namespace {

std::string unhex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string hexOf(std::string_view bytes) {
  return sdk::hexEncode(bytes);
}

// From node (tests/browser's libsodium-wrappers-sumo):
//   seed = crypto_pwhash(32, passphrase, salt, 3, 65536 * 1024, crypto_pwhash_ALG_ARGON2ID13)
//   {publicKey, privateKey} = crypto_box_seed_keypair(seed)
//   sealed = crypto_box_seal(from_string("sk-live-1234 ✓"), publicKey); verifier likewise.
struct Vector {
  const char* passphrase;
  const char* salt;        // base64
  const char* seed;        // hex
  const char* public_key;  // base64
  const char* secret_key;  // hex
  const char* sealed;      // e2e::, of "sk-live-1234 ✓"
  const char* verifier;    // base64
};

const Vector kAscii{
    "correct horse battery staple",
    "AAECAwQFBgcICQoLDA0ODw==",
    "0d1a3c6523c8f06e4e0af9c515aa5b5448cfebd6838f2d52c3d8b6ef8ddc3c2e",
    "cyw4GQg7hpWeyM3vvFwcrtbF0xZODgx0Uyj6IMv1KDY=",
    "9d45efc6f5ad7ce0de639280a73823275ca29e00f47d49c3330407f86ab27939",
    "e2e::RGxfjDj6cbe4MUz6gm7sxEDpV9q8N9vux+mN77vbgmBLyaeHdia30z+gALzWBwHXEva3lxRQY3Vx+OPeGP5vXg==",
    "JPCIIPJP6mIRx1YrBAhHqgUYRTy/PPDa4IWxUNMkOjib2gNniUku6HYz25NZ+ybQE5hEfucRSiHEykPyAmI="};

const Vector kUtf8{
    "p\xC3\xA4ssw\xC3\xB6rd \xC3\xBCn\xC3\xAF"
    "code",
    "8OHSw7Sllod4aVpLPC0eDw==",
    "42712ea028b2fb1db4b302b35a1bb746326c619ba37f0861aef141346b811602",
    "49hjkxfSO8fJJpxCiIroClpl4zVkDAZJ7WWH2XOFtG0=",
    "b28fceeb9fe5bc473295670b53d8ac8109224731d9393df6bd7d95215f1a75e7",
    "e2e::sBtyDpdZyo7Iziprx+Tre4n1l6p+imJ8bF9EqZnYTDbLDG5xdANw8jHGT+X14zO1HFsjk7H7vf2avLNhrFOB7g==",
    "7TVLg+P6xSMvFvjdQVaJ/0ZA4eMK4fVYCQ/JF4w/9HJm30gWRBss/fJYw6Zxc0gh8z8Z5S6nMh8HH20w4HQ="};

std::string b64(const char* text) {
  return *sdk::base64Decode(text);
}

KeyPair keysOf(const Vector& v) {
  return KeyPair::fromSeed(SecretBytes::copyOf(unhex(v.seed)));
}

Metadata metadataOf(const Vector& v) {
  Metadata m;
  m.salt = b64(v.salt);
  m.public_key = b64(v.public_key);
  m.verifier = v.verifier;
  return m;
}

TEST(E2eKnownAnswers, TheSeedOfAUtf8PassphraseIsNodes) {
  const SecretBytes seed = deriveSeed(kUtf8.passphrase, b64(kUtf8.salt), Kdf{});
  EXPECT_EQ(hexOf(seed.view()), kUtf8.seed);
}

TEST(E2eKnownAnswers, TheSeedGivesNodesKeyPair) {
  for (const Vector* v : {&kAscii, &kUtf8}) {
    const KeyPair keys = keysOf(*v);
    EXPECT_EQ(sdk::base64(keys.publicKey()), v->public_key);
    EXPECT_EQ(hexOf(keys.secretKey().view()), v->secret_key);
  }
}

TEST(E2eKnownAnswers, ValuesAndVerifiersSealedByNodeOpenHere) {
  for (const Vector* v : {&kAscii, &kUtf8}) {
    const KeyPair keys = keysOf(*v);
    auto opened = keys.open(v->sealed);
    ASSERT_TRUE(opened);
    EXPECT_EQ(opened->view(), "sk-live-1234 \xE2\x9C\x93");
    EXPECT_TRUE(checkVerifier(v->verifier, keys));
  }
  EXPECT_FALSE(keysOf(kUtf8).open(kAscii.sealed)) << "sealed to the other key";
  EXPECT_FALSE(checkVerifier(kAscii.verifier, keysOf(kUtf8)));
}

// One Argon2id run checks both the contract's KDF (the seed's key pair is node's) and unlock().
TEST(E2eUnlock, TheRightPassphraseUnlocksWithNodesKeys) {
  const KeyPair keys = unlock(metadataOf(kAscii), SecretBytes::copyOf(kAscii.passphrase));
  EXPECT_EQ(sdk::base64(keys.publicKey()), kAscii.public_key);
  EXPECT_EQ(hexOf(keys.secretKey().view()), kAscii.secret_key);
}

TEST(E2eUnlock, AWrongPassphraseIsSaidPlainly) {
  try {
    unlock(metadataOf(kAscii), SecretBytes::copyOf("correct horse battery stapler"));
    FAIL() << "a wrong passphrase unlocked";
  } catch (const CliError& e) {
    EXPECT_EQ(std::string(e.what()), "wrong passphrase: it does not open this account's vault");
    EXPECT_EQ(e.exit_code, 1);
  }
}

// A server that swapped the public key (keeping the verifier) would read what is sealed next.
TEST(E2eUnlock, APublicKeyThePassphraseDoesNotMakeIsRefused) {
  Metadata m = metadataOf(kAscii);
  m.public_key = b64(kUtf8.public_key);
  try {
    unlock(m, SecretBytes::copyOf(kAscii.passphrase));
    FAIL() << "unlocked with another public key";
  } catch (const CliError& e) {
    EXPECT_NE(std::string(e.what()).find("public key is not the one"), std::string::npos);
  }
}

TEST(E2eKeys, NewKeysHaveTheContractsShapesAndTheirVerifierChecks) {
  const NewKeys made = createKeys(SecretBytes::copyOf("a new passphrase"));
  const Metadata& m = made.metadata;
  EXPECT_EQ(m.salt.size(), kSaltBytes);
  EXPECT_EQ(m.public_key, made.keys.publicKey());
  EXPECT_EQ(sdk::base64Decode(m.verifier)->size(), 62u);
  EXPECT_TRUE(checkVerifier(m.verifier, made.keys));
  EXPECT_FALSE(checkVerifier(m.verifier, keysOf(kAscii)));
  auto json = m.toJson();
  EXPECT_EQ(json->getValue<std::string>("salt"), sdk::base64(m.salt));
  EXPECT_EQ(json->getValue<std::string>("public_key"), sdk::base64(m.public_key));
  auto kdf = json->getObject("kdf");
  EXPECT_EQ(kdf->getValue<std::string>("alg"), "argon2id");
  EXPECT_EQ(kdf->getValue<int>("t"), 3);
  EXPECT_EQ(kdf->getValue<int>("m"), 65536);
  EXPECT_EQ(kdf->getValue<int>("p"), 1);
  EXPECT_NE(newSalt(), newSalt());
}

TEST(E2eSeal, SealedValuesOpenOnlyWithTheirKeyAndUnaltered) {
  const KeyPair keys = keysOf(kAscii);
  const std::string sealed = seal("hunter2\n\xF0\x9F\x94\x91", keys.publicKey());
  ASSERT_TRUE(isSealed(sealed));
  // Standard base64 with padding: what the server's shape check accepts.
  const std::string body = sealed.substr(kPrefix.size());
  EXPECT_EQ(sdk::base64(*sdk::base64Decode(body)), body);
  EXPECT_EQ(sdk::base64Decode(body)->size(), 12 + kSealOverhead);
  EXPECT_EQ(keys.open(sealed)->view(), "hunter2\n\xF0\x9F\x94\x91");
  EXPECT_NE(seal("hunter2", keys.publicKey()), seal("hunter2", keys.publicKey())) << "random";

  EXPECT_FALSE(keysOf(kUtf8).open(sealed));
  std::string box = *sdk::base64Decode(body);
  box[box.size() - 1] ^= 1;
  EXPECT_FALSE(keys.open(std::string(kPrefix) + sdk::base64(box)));
  EXPECT_FALSE(keys.open(body)) << "without the prefix";
  EXPECT_FALSE(keys.open("e2e::not base64!"));
  EXPECT_FALSE(keys.open("e2e::AAAA"));
  EXPECT_FALSE(isSealed("hunter2"));

  const auto empty = keys.open(seal("", keys.publicKey()));
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  EXPECT_THROW(seal("x", "short"), E2eError);
}

TEST(E2eSeal, BadKdfInputIsRefusedBeforeArgon2Runs) {
  EXPECT_THROW(deriveSeed("p", std::string(15, 's'), Kdf{}), E2eError);
  EXPECT_THROW(deriveSeed("p", std::string(16, 's'), Kdf{3, 65536, 2}), E2eError);
  EXPECT_THROW(KeyPair::fromSeed(SecretBytes(31)), E2eError);
}

TEST(E2eSecretBytes, HoldsGrowsMovesAndWipes) {
  SecretBytes grown;
  std::string expected;
  for (int i = 0; i < 5000; ++i) {  // past a page: copied into new locked pages
    grown.push_back(static_cast<unsigned char>('a' + i % 26));
    expected.push_back(static_cast<char>('a' + i % 26));
  }
  EXPECT_EQ(grown.view(), expected);
  grown.pop_back();
  EXPECT_EQ(grown.size(), 4999u);

  SecretBytes moved = std::move(grown);
  EXPECT_EQ(moved.size(), 4999u);
  EXPECT_TRUE(grown.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  SecretBytes copy = SecretBytes::copyOf("abc");
  EXPECT_EQ(copy.view(), "abc");
  copy = std::move(moved);
  EXPECT_EQ(copy.size(), 4999u);

  std::string text = "opened value";
  wipe(text);
  EXPECT_TRUE(text.empty());
}

TEST(E2ePassphraseFile, OneTrailingLineBreakIsNotPartOfIt) {
  Poco::TemporaryFile file;
  auto write = [&](const std::string& text) {
    std::ofstream(file.path(), std::ios::binary | std::ios::trunc) << text;
  };
  write("correct horse\n");
  EXPECT_EQ(readPassphraseFile(file.path()).view(), "correct horse");
  write("with crlf\r\n");
  EXPECT_EQ(readPassphraseFile(file.path()).view(), "with crlf");
  write(" spaces kept \n\n");
  EXPECT_EQ(readPassphraseFile(file.path()).view(), " spaces kept \n");
  write("\n");
  EXPECT_THROW(readPassphraseFile(file.path()), CliError);
  EXPECT_THROW(readPassphraseFile(file.path() + ".absent"), CliError);
}

// The prompt on a real terminal (a pseudo-terminal that is the child's controlling terminal): asked
// twice, nothing typed is echoed, and two different answers are refused.
class E2ePrompt : public ::testing::Test {
 protected:
  // Runs promptPassphrase(confirm = true) in a child on a new pty, typing `answers` at its
  // prompts. @return what the terminal showed, and what the child got ("ok VALUE" or "error ...").
  std::pair<std::string, std::string> prompt(const std::vector<std::string>& answers) {
    int result[2];
    EXPECT_EQ(::pipe(result), 0);
    int master = -1;
    const pid_t child = ::forkpty(&master, nullptr, nullptr, nullptr);
    if (child == 0) {
      std::string got;
      try {
        got = "ok " + std::string(promptPassphrase("Vault passphrase: ", true).view());
      } catch (const CliError& e) {
        got = std::string("error ") + e.what();
      }
      (void)!::write(result[1], got.data(), got.size());
      ::_exit(0);
    }
    ::close(result[1]);
    std::string screen;
    auto waitFor = [&](const std::string& text) {
      while (screen.find(text) == std::string::npos) {
        pollfd p{master, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) return;
        char buf[256];
        const ssize_t n = ::read(master, buf, sizeof buf);
        if (n <= 0) return;
        screen.append(buf, static_cast<std::size_t>(n));
      }
    };
    const char* prompts[] = {"Vault passphrase: ", "Again: "};
    for (std::size_t i = 0; i < answers.size(); ++i) {
      waitFor(prompts[i]);
      (void)!::write(master, answers[i].data(), answers[i].size());
    }
    std::string got;
    char buf[256];
    for (pollfd p{result[0], POLLIN, 0}; ::poll(&p, 1, 10000) > 0;) {
      const ssize_t n = ::read(result[0], buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
    ::kill(child, SIGKILL);  // when it still waits for input: the test fails, it does not hang
    ::close(result[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    for (pollfd p{master, POLLIN, 0}; ::poll(&p, 1, 100) > 0;) {
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) break;
      screen.append(buf, static_cast<std::size_t>(n));
    }
    ::close(master);
    return {screen, got};
  }
};

TEST_F(E2ePrompt, AskedTwiceWithoutEcho) {
  auto [screen, got] = prompt({"s3cret pass\n", "s3cret pass\n"});
  EXPECT_EQ(got, "ok s3cret pass");
  EXPECT_NE(screen.find("Vault passphrase: "), std::string::npos) << screen;
  EXPECT_NE(screen.find("Again: "), std::string::npos) << screen;
  EXPECT_EQ(screen.find("s3cret"), std::string::npos) << "echoed: " << screen;
}

TEST_F(E2ePrompt, TwoDifferentAnswersAreRefused) {
  auto [screen, got] = prompt({"one passphrase\n", "another one\n"});
  EXPECT_EQ(got, "error the two passphrases differ");
  EXPECT_EQ(screen.find("one passphrase"), std::string::npos) << screen;
}

}  // namespace
}  // namespace svc::sdk::e2e
