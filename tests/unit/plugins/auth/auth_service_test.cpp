// The authenticator's key cache and revocation: keys are served from memory once verified, a
// revocation reaches the cache (at once through forget(), within a second through the poller),
// and failures are limited per address and per key prefix.
#include "auth_service.h"
#include "auth_store.h"
#include "jwt_issuer.h"
#include "key_format.h"
#include "schema.h"

#include "database.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/util.h>

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace svc::plugins::auth {
namespace {

using sdk::sha256Hex;

constexpr const char* kAccount = "00000000-0000-4000-8000-000000000001";

TEST(FailureKey, AKeyCountsByItsVisiblePrefixAnythingElseByItsHash) {
  const std::string m = newKey(KeyKind::kManagement), id = newKey(KeyKind::kIdentity);
  EXPECT_EQ(failureKey(m), m.substr(0, 13));  // svc_mgmt_ and four characters
  EXPECT_EQ(failureKey(id), id.substr(0, 11));
  EXPECT_EQ(failureKey(m), visiblePrefix(m));
  // A mistyped key (checksum wrong) still counts against its prefix.
  std::string typo = m;
  typo.back() = typo.back() == 'a' ? 'b' : 'a';
  EXPECT_EQ(failureKey(typo), failureKey(m));
  // Too short to carry four characters: counted by its hash like any other credential.
  EXPECT_EQ(failureKey("svc_mgmt_ab"), "sha256:" + sha256Hex("svc_mgmt_ab"));
  EXPECT_EQ(failureKey("eyJhbGciOi.x.y"), "sha256:" + sha256Hex("eyJhbGciOi.x.y"));
  EXPECT_NE(failureKey("a"), failureKey("b"));
}

class AuthServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Poco::TemporaryFile::tempName();
    db_ = std::make_unique<kernel::SqlDatabase>("sqlite:" + dir_ + "/t.db", 4, "off");
    db_->migrate("auth", authMigrations());
    store_ = std::make_unique<AuthStore>(*db_);
    jwt_ = std::make_unique<JwtIssuer>(*db_, "https://svc.example");
  }
  void TearDown() override {
    service_.reset();
    jwt_.reset();
    store_.reset();
    db_.reset();
    Poco::File(dir_).remove(true);
  }

  AuthService& service(int per_address = 30, int per_key = 10) {
    service_ = std::make_unique<AuthService>(*store_, *jwt_, per_address, per_key);
    return *service_;
  }

  // @return a stored management key.
  std::pair<KeyRecord, std::string> addKey() {
    std::string key = newKey(KeyKind::kManagement);
    KeyRecord record;
    db_->transaction([&](Poco::Data::Session& s) {
      record = store_->addKey(s, kAccount, "management", "", "test", visiblePrefix(key),
                              sha256Hex(key), "");
    });
    return {record, key};
  }

  static sdk::Credentials bearer(const std::string& credential,
                                 const std::string& address = "192.0.2.1") {
    return {"Bearer " + credential, "", address, "GET", ""};
  }

  // @return the status authenticate() answers with (200 for a principal).
  int status(const sdk::Credentials& c) {
    try {
      return service_->authenticate(c) ? 200 : 0;
    } catch (const sdk::HttpError& e) {
      return e.status();
    }
  }

  std::string dir_;
  std::unique_ptr<kernel::SqlDatabase> db_;
  std::unique_ptr<AuthStore> store_;
  std::unique_ptr<JwtIssuer> jwt_;
  std::unique_ptr<AuthService> service_;
};

TEST_F(AuthServiceTest, AStoredKeyAuthenticatesAsItsAccount) {
  auto& svc = service();
  auto [record, key] = addKey();
  auto p = svc.authenticate(bearer(key));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, sdk::PrincipalKind::kManagement);
  EXPECT_EQ(p->account_id, kAccount);
  EXPECT_EQ(p->key_id, record.id);
  EXPECT_EQ(p->key_prefix, visiblePrefix(key));
  EXPECT_EQ(status(bearer(newKey(KeyKind::kManagement))), 401);      // well-formed, unknown
  EXPECT_FALSE(svc.authenticate({"", "", "192.0.2.1", "GET", ""}));  // no credential at all
}

// A browser session's cookie reads; it changes things only with the session's own CSRF token
// (a dashboard page's request), never alone or with another session's.
TEST_F(AuthServiceTest, ASessionCookieChangesThingsOnlyWithItsCsrfToken) {
  service();
  std::optional<User> user;
  std::string account;
  db_->transaction([&](Poco::Data::Session& s) {
    user = store_->addUser(s, "ada@example.org", "Ada", "");
    account = store_->ensureAccount(s, *user, "free");
  });
  const std::string token = sdk::randomToken(32);
  store_->addSession(sha256Hex(token), user->id, sdk::nowMicros() + 3600LL * 1000000);
  auto session = [&](const std::string& method, const std::string& csrf) {
    return sdk::Credentials{"", std::string(sdk::kSessionCookie) + "=" + token, "192.0.2.1", method,
                            csrf};
  };
  EXPECT_EQ(status(session("GET", "")), 200);
  EXPECT_EQ(status(session("POST", "")), 403);
  EXPECT_EQ(status(session("POST", "forged")), 403);
  EXPECT_EQ(status(session("POST", sdk::sessionCsrf(sdk::randomToken(32)))), 403);
  auto p = service_->authenticate(session("PATCH", sdk::sessionCsrf(token)));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, sdk::PrincipalKind::kUser);
  EXPECT_EQ(p->account_id, account);
}

TEST_F(AuthServiceTest, ACachedKeyStaysValidUntilItIsForgotten) {
  auto& svc = service();
  auto [record, key] = addKey();
  ASSERT_EQ(status(bearer(key)), 200);
  ASSERT_TRUE(store_->revokeKey(kAccount, record.id));
  // The cache answers without a lookup: revoked in the database, still known here.
  EXPECT_EQ(status(bearer(key)), 200);
  svc.forget(sha256Hex(key));
  EXPECT_EQ(status(bearer(key)), 401);
}

TEST_F(AuthServiceTest, ThePollerFollowsRevocationsMadeElsewhere) {
  auto& svc = service();
  svc.start();
  auto [record, key] = addKey();
  ASSERT_EQ(status(bearer(key)), 200);
  ASSERT_TRUE(store_->revokeKey(kAccount, record.id));  // as another process would
  int answer = 200;
  for (int i = 0; i < 300 && answer == 200; ++i) {  // 30 s: a loaded machine is slow, not wrong
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    answer = status(bearer(key));
  }
  EXPECT_EQ(answer, 401);
  svc.stop();
}

TEST_F(AuthServiceTest, StopWritesWhenKeysWereLastUsed) {
  auto& svc = service();
  svc.start();
  auto [record, key] = addKey();
  ASSERT_EQ(status(bearer(key)), 200);
  svc.stop();
  auto stored = store_->keyByHash(sha256Hex(key));
  ASSERT_TRUE(stored);
  EXPECT_GT(stored->last_used_us, 0);
}

TEST_F(AuthServiceTest, FailuresWithOneKeyPrefixAreLimitedFromEveryAddress) {
  service(/*per_address=*/100, /*per_key=*/3);
  const std::string guessed = newKey(KeyKind::kManagement);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(status(bearer(guessed, "192.0.2." + std::to_string(i))), 401);
  }
  EXPECT_EQ(status(bearer(guessed, "192.0.2.99")), 429);
  // Another prefix has its own allowance.
  EXPECT_EQ(status(bearer(newKey(KeyKind::kIdentity), "192.0.2.99")), 401);
}

TEST_F(AuthServiceTest, AKnownGoodKeyIsServedWhenItsAddressIsThrottled) {
  service(/*per_address=*/2, /*per_key=*/100);
  auto [record, key] = addKey();
  ASSERT_EQ(status(bearer(key)), 200);
  EXPECT_EQ(status(bearer(newKey(KeyKind::kManagement))), 401);
  EXPECT_EQ(status(bearer(newKey(KeyKind::kManagement))), 401);
  EXPECT_EQ(status(bearer(newKey(KeyKind::kManagement))), 429);
  EXPECT_EQ(status(bearer(key)), 200);
  EXPECT_EQ(status(bearer(key, "198.51.100.1")), 200);
}

// One spelling per token: Poco reads three parts and ignores what follows, so the form is checked
// before it (`<jwt>.junk`, `<jwt>=`, a part with its unused bits set all spell the same token).
TEST_F(AuthServiceTest, AccessTokensAreReadOnlyInTheirOneCanonicalForm) {
  auto& svc = service();
  const std::string jwt = jwt_->issue("user-1", kAccount, "family-1", 60);
  ASSERT_TRUE(isCanonicalCompactJws(jwt)) << jwt;
  auto p = svc.authenticate(bearer(jwt));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->credential, "family:family-1");
  // The signature's last character with its unused low bits set decodes to the same bytes.
  std::string other_bits = jwt;
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const std::size_t last = alphabet.find(other_bits.back());
  other_bits.back() = alphabet[last ^ 1];
  for (const std::string& bad :
       {jwt + ".garbage", jwt + "=", jwt + ".", "." + jwt, jwt + "==", other_bits,
        jwt.substr(0, jwt.rfind('.')), jwt.substr(0, jwt.find('.')) + ".." + "x"}) {
    EXPECT_FALSE(isCanonicalCompactJws(bad)) << bad;
    EXPECT_EQ(status(bearer(bad)), 401) << bad;
  }
}

TEST_F(AuthServiceTest, AnAccessTokenOfAnEndedSignInIsRefused) {
  auto& svc = service();
  const std::string jwt = jwt_->issue("user-1", kAccount, "family-2", 60);
  EXPECT_EQ(status(bearer(jwt)), 200);
  svc.revokedFamilies().add("family-2", sdk::nowMicros());
  EXPECT_EQ(status(bearer(jwt)), 401);
  // Another sign-in's token is not affected.
  EXPECT_EQ(status(bearer(jwt_->issue("user-1", kAccount, "family-3", 60))), 200);
}

}  // namespace
}  // namespace svc::plugins::auth
