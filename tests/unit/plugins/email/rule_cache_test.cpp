// The RCPT check's cache of sender rules over a private SQLite database: an account's rules are
// read once and then judged from memory (rows written behind its back are not seen), an
// email_rule event from any process drops them, and other accounts' entries stay.
#include "rules/rule_cache.h"
#include "database.h"
#include "mail_store.h"
#include "rules/rule_rows.h"

#include <svc/sdk/util.h>

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <functional>
#include <memory>

namespace svc::plugins::email {
namespace {

// Delivers what the test publishes to the one subscriber, as the kernel's event thread would.
class DirectBus : public sdk::EventBus {
 public:
  sdk::Event publish(const std::string& type, const std::string& account,
                     const std::string& identity, Poco::JSON::Object::Ptr object,
                     Poco::Data::Session*) override {
    sdk::Event e;
    e.type = type;
    e.account = account;
    e.identity = identity;
    e.object = object;
    if (subscriber) subscriber(e);
    return e;
  }
  std::uint64_t subscribe(std::function<void(const sdk::Event&)> fn) override {
    subscriber = std::move(fn);
    return 7;
  }
  void unsubscribe(std::uint64_t token) override {
    EXPECT_EQ(token, 7u);
    subscriber = nullptr;
  }
  std::function<void(const sdk::Event&)> subscriber;
};

const std::string kAccount = "11111111-1111-4111-8111-111111111111";
const std::string kOtherAccount = "44444444-4444-4444-8444-444444444444";
const std::string kIdentity = "22222222-2222-4222-8222-222222222222";

class RuleCacheTest : public ::testing::Test {
 protected:
  RuleCacheTest()
      : dir_(Poco::TemporaryFile::tempName()),
        db_(std::make_unique<kernel::SqlDatabase>("sqlite:" + dir_ + "/t.db", 4, "off")),
        cache_(*db_, bus_) {
    db_->migrate("email", MailStore::migrations());
    cache_.start();
  }
  ~RuleCacheTest() override {
    cache_.stop();
    db_.reset();
    Poco::File(dir_).remove(true);
  }

  // A row written straight to the table, as another svcd would (no event here).
  void write(const std::string& account, const std::string& kind, const std::string& pattern) {
    db_->transaction([&](Poco::Data::Session& tx) {
      rule_rows::insert(tx, {sdk::newUuid(), account, kIdentity, kind, pattern, 1});
    });
  }
  bool accepts(const std::string& account, const std::string& sender) {
    return cache_.judge(account, kIdentity, sender).accepted;
  }

  std::string dir_;
  DirectBus bus_;
  std::unique_ptr<kernel::SqlDatabase> db_;
  RuleCache cache_;
};

TEST_F(RuleCacheTest, RulesAreReadOnceAndJudgedFromMemoryUntilAnEventDropsThem) {
  EXPECT_TRUE(accepts(kAccount, "a@spam.example"));  // read: no rules, kept
  write(kAccount, "block", "spam.example");
  EXPECT_TRUE(accepts(kAccount, "a@spam.example")) << "judged from memory: no query per RCPT";
  bus_.publish("email_rule.created", kAccount, kIdentity, nullptr, nullptr);
  EXPECT_FALSE(accepts(kAccount, "a@spam.example")) << "the event dropped the account's entry";
}

TEST_F(RuleCacheTest, OnlyRuleEventsOfTheAccountDropItsEntry) {
  EXPECT_TRUE(accepts(kAccount, "a@spam.example"));
  EXPECT_TRUE(accepts(kOtherAccount, "a@spam.example"));
  write(kAccount, "block", "spam.example");
  write(kOtherAccount, "block", "spam.example");
  bus_.publish("email.received", kAccount, kIdentity, nullptr, nullptr);
  EXPECT_TRUE(accepts(kAccount, "a@spam.example")) << "not a rule event";
  bus_.publish("email_rule.deleted", kAccount, kIdentity, nullptr, nullptr);
  EXPECT_FALSE(accepts(kAccount, "a@spam.example"));
  EXPECT_TRUE(accepts(kOtherAccount, "a@spam.example")) << "another account's entry stays";
  cache_.forget(kOtherAccount);
  EXPECT_FALSE(accepts(kOtherAccount, "a@spam.example"));
}

TEST_F(RuleCacheTest, TheNullSenderIsAcceptedUnderAnAllowList) {
  write(kAccount, "allow", "github.com");
  EXPECT_TRUE(accepts(kAccount, ""));
  EXPECT_FALSE(accepts(kAccount, "a@elsewhere.example"));
  EXPECT_TRUE(accepts(kAccount, "a@github.com"));
}

TEST_F(RuleCacheTest, TheFromOfAMessageIsJudged) {
  write(kAccount, "allow", "github.com");
  EXPECT_TRUE(cache_.judgeAuthor(kAccount, kIdentity, {"noreply@github.com", {}}).accepted);
  EXPECT_FALSE(cache_.judgeAuthor(kAccount, kIdentity, {"a@elsewhere.example", {}}).accepted);
  EXPECT_FALSE(cache_.judgeAuthor(kAccount, kIdentity, {}).accepted) << "no From";
}

}  // namespace
}  // namespace svc::plugins::email
