// AccessWatch: a revocation ends the held requests it covers and no others, in every process on
// the database (two watches on one database stand for two svcd), only once it commits, and also
// for a request authenticated before the revocation was seen here but held after.
#include "access_watch.h"

#include "database.h"

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace svc::kernel {
namespace {

// A held request that remembers how it ended.
class RecordingStream : public sdk::Stream {
 public:
  explicit RecordingStream(bool begun = false) : begun_(begun) {}
  bool respond(const sdk::Response& r) override {
    std::lock_guard lock(mutex_);
    if (begun_ || !open_) return false;
    status_ = r.status;
    body_ = r.body;
    open_ = false;
    return true;
  }
  bool begin(int, const std::string&,
             const std::vector<std::pair<std::string, std::string>>&) override {
    std::lock_guard lock(mutex_);
    begun_ = true;
    return open_;
  }
  bool write(const std::string&) override { return isOpen(); }
  void finish() override {
    std::lock_guard lock(mutex_);
    open_ = false;
  }
  bool isOpen() const override {
    std::lock_guard lock(mutex_);
    return open_;
  }
  void onClose(std::function<void()>) override {}
  void expireAfter(std::chrono::milliseconds, std::function<void()>) override {}
  const std::string& requestId() const override { return id_; }
  std::size_t queued() const override { return 0; }
  int status() const {
    std::lock_guard lock(mutex_);
    return status_;
  }
  std::string body() const {
    std::lock_guard lock(mutex_);
    return body_;
  }

 private:
  mutable std::mutex mutex_;
  bool begun_;
  bool open_ = true;
  int status_ = 0;
  std::string body_;
  std::string id_ = "req-1";
};

class AccessWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Poco::TemporaryFile::tempName();
    Poco::File(dir_).createDirectories();
    db_ = std::make_unique<SqlDatabase>("sqlite:" + dir_ + "/t.db", 4, "off");
    db_->migrate("kernel.access", accessWatchMigrations());
    here_ = std::make_unique<AccessWatch>(*db_);
    there_ = std::make_unique<AccessWatch>(*db_);
  }
  void TearDown() override {
    here_.reset();
    there_.reset();
    db_.reset();
    Poco::File(dir_).remove(true);
  }

  void revoke(AccessWatch& by, const sdk::Revocation& r) {
    db_->transaction([&](Poco::Data::Session& s) { by.revoke(s, r); });
  }

  static sdk::Revocation ofKey(const std::string& account, const std::string& credential) {
    sdk::Revocation r;
    r.account_id = account;
    r.credential = credential;
    return r;
  }

  std::string dir_;
  std::unique_ptr<SqlDatabase> db_;
  std::unique_ptr<AccessWatch> here_, there_;
};

TEST_F(AccessWatchTest, ARevocationEndsWhatItCoversInEveryProcessAndNothingElse) {
  const auto now = AccessWatch::Clock::now();
  auto wait = std::make_shared<RecordingStream>();
  auto stream = std::make_shared<RecordingStream>(/*begun=*/true);
  auto other_key = std::make_shared<RecordingStream>();
  auto other_account = std::make_shared<RecordingStream>();
  there_->track(wait, {"acct-1", "key:k1", "ident-1", ""}, now);
  there_->track(stream, {"acct-1", "key:k1", "", ""}, now);
  there_->track(other_key, {"acct-1", "key:k2", "", ""}, now);
  there_->track(other_account, {"acct-2", "key:k1", "", ""}, now);
  EXPECT_EQ(there_->trackedCount(), 4u);

  revoke(*here_, ofKey("acct-1", "key:k1"));
  there_->poll();
  EXPECT_FALSE(wait->isOpen());
  EXPECT_EQ(wait->status(), 401);
  EXPECT_NE(wait->body().find("authentication_failed"), std::string::npos) << wait->body();
  EXPECT_FALSE(stream->isOpen()) << "a stream under way closes";
  EXPECT_TRUE(other_key->isOpen());
  EXPECT_TRUE(other_account->isOpen());
  EXPECT_EQ(there_->trackedCount(), 2u);
  // Read again (the overlap reads the same row): applied once, nothing else ends.
  there_->poll();
  EXPECT_TRUE(other_key->isOpen());
}

TEST_F(AccessWatchTest, AnAccountOrIdentityRevocationCoversEveryCredentialOfIt) {
  sdk::Revocation account;
  account.account_id = "acct-1";
  account.status = 403;
  account.code = "account_suspended";
  EXPECT_TRUE(AccessWatch::covers(account, {"acct-1", "key:k1", "", ""}));
  EXPECT_TRUE(AccessWatch::covers(account, {"acct-1", "session:s", "ident-1", ""}));
  EXPECT_FALSE(AccessWatch::covers(account, {"acct-2", "key:k1", "", ""}));
  sdk::Revocation identity = account;
  identity.identity = "ident-1";
  EXPECT_TRUE(AccessWatch::covers(identity, {"acct-1", "key:k1", "ident-1", ""}));
  EXPECT_TRUE(AccessWatch::covers(identity, {"acct-1", "key:k2", "", "ident-1"}));  // bound key
  EXPECT_FALSE(AccessWatch::covers(identity, {"acct-1", "key:k1", "", ""}));        // account-wide
  EXPECT_FALSE(AccessWatch::covers(identity, {"acct-1", "key:k1", "ident-2", ""}));

  auto held = std::make_shared<RecordingStream>();
  there_->track(held, {"acct-1", "key:k1", "", ""}, AccessWatch::Clock::now());
  revoke(*here_, account);
  there_->poll();
  EXPECT_EQ(held->status(), 403);
  EXPECT_NE(held->body().find("account_suspended"), std::string::npos);
}

TEST_F(AccessWatchTest, NothingEndsWhenTheRevokingTransactionRollsBack) {
  auto held = std::make_shared<RecordingStream>();
  there_->track(held, {"acct-1", "key:k1", "", ""}, AccessWatch::Clock::now());
  EXPECT_THROW(db_->transaction([&](Poco::Data::Session& s) {
    here_->revoke(s, ofKey("acct-1", "key:k1"));
    throw std::runtime_error("the revocation failed after all");
  }),
               std::runtime_error);
  there_->poll();
  EXPECT_TRUE(held->isOpen());
  EXPECT_THROW(revoke(*here_, ofKey("", "key:k1")), std::invalid_argument);
}

// Held after the revocation was read here: ended as it is tracked. A revoked credential never
// works again (an authenticator's cache may still let it through for a moment), so whenever it was
// authenticated; a whole account's revocation (a suspension, which may be lifted) only when it
// came after the authentication or within the authenticator's lag before it.
TEST_F(AccessWatchTest, ARequestHeldJustAfterARevocationIsEndedAsItIsTracked) {
  revoke(*here_, ofKey("acct-1", "key:k1"));
  sdk::Revocation suspended;
  suspended.account_id = "acct-2";
  revoke(*here_, suspended);
  there_->poll();
  const auto now = AccessWatch::Clock::now();
  auto late = std::make_shared<RecordingStream>();
  there_->track(late, {"acct-1", "key:k1", "", ""}, now + std::chrono::seconds(30));
  EXPECT_EQ(late->status(), 401);
  auto just_after = std::make_shared<RecordingStream>();
  there_->track(just_after, {"acct-2", "key:k9", "", ""}, now);
  EXPECT_EQ(just_after->status(), 401);
  auto resumed = std::make_shared<RecordingStream>();
  there_->track(resumed, {"acct-2", "key:k9", "", ""}, now + std::chrono::seconds(30));
  EXPECT_TRUE(resumed->isOpen());
  auto other = std::make_shared<RecordingStream>();
  there_->track(other, {"acct-1", "key:k2", "", ""}, now);
  EXPECT_TRUE(other->isOpen());
}

// A process that starts after a revocation holds nothing it could cover, even when its first
// reads fail and the row is only read later.
TEST_F(AccessWatchTest, RevocationsMadeBeforeAWatchWasAreNotItsToApply) {
  revoke(*here_, ofKey("acct-1", "key:k1"));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  AccessWatch newcomer(*db_);
  auto held = std::make_shared<RecordingStream>();
  newcomer.track(held, {"acct-1", "key:k2", "", ""}, AccessWatch::Clock::now());
  newcomer.poll();
  EXPECT_TRUE(held->isOpen());
  revoke(*here_, ofKey("acct-1", "key:k2"));
  newcomer.poll();
  EXPECT_EQ(held->status(), 401);
}

TEST_F(AccessWatchTest, TheThreadAppliesOtherProcessesRevocationsWithoutBeingAsked) {
  there_->start();
  auto held = std::make_shared<RecordingStream>();
  there_->track(held, {"acct-1", "key:k1", "", ""}, AccessWatch::Clock::now());
  revoke(*here_, ofKey("acct-1", "key:k1"));
  // Its reads are 200 ms apart; a deadline for a loaded machine, met as soon as it is ended.
  for (int i = 0; i < 500 && held->isOpen(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(held->status(), 401);
  there_->stop();
}

}  // namespace
}  // namespace svc::kernel
