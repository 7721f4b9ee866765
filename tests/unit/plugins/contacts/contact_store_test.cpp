// The contacts store and auto_contacts over a private SQLite database, with an event bus that
// records what is published.
#include "contact_store.h"
#include "auto_contacts.h"
#include "contact_fields.h"
#include "database.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/File.h>
#include <Poco/JSON/Array.h>
#include <Poco/Logger.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <memory>
#include <random>

namespace svc::plugins::contacts {
namespace {

class RecordingBus : public sdk::EventBus {
 public:
  sdk::Event publish(const std::string& type, const std::string& account,
                     const std::string& identity, Poco::JSON::Object::Ptr object,
                     Poco::Data::Session* transaction) override {
    EXPECT_NE(transaction, nullptr) << type << " is published in the write's transaction";
    sdk::Event e;
    e.type = type;
    e.account = account;
    e.identity = identity;
    e.object = object;
    events.push_back(e);
    return e;
  }
  std::uint64_t subscribe(std::function<void(const sdk::Event&)>) override { return 1; }
  void unsubscribe(std::uint64_t) override {}
  std::vector<sdk::Event> events;
};

const std::string kAccount = "11111111-1111-4111-8111-111111111111";
const std::string kIdentity = "22222222-2222-4222-8222-222222222222";
const std::string kOther = "33333333-3333-4333-8333-333333333333";

class ContactStoreTest : public ::testing::Test {
 protected:
  ContactStoreTest()
      : dir_(Poco::TemporaryFile::tempName()),
        db_(std::make_unique<kernel::SqlDatabase>("sqlite:" + dir_ + "/t.db", 4, "off")),
        store_(*db_, bus_) {
    db_->migrate("contacts", ContactStore::migrations());
  }
  ~ContactStoreTest() override {
    db_.reset();
    Poco::File(dir_).remove(true);
  }

  ContactRow add(const std::string& email, const std::string& phone = "",
                 const std::string& name = "", const std::string& identity = kIdentity) {
    ContactRow c;
    c.id = sdk::newUuid();
    c.account_id = kAccount;
    c.identity_uuid = identity;
    c.email = email;
    c.phone_number = phone;
    c.display_name = name;
    c.created_us = c.updated_us = ++clock_;
    db_->transaction([&](Poco::Data::Session& tx) { store_.insert(tx, c); });
    return c;
  }

  int conflictStatus(const std::function<void()>& write) {
    try {
      write();
    } catch (const sdk::HttpError& e) {
      return e.status();
    }
    return 0;
  }

  ContactStore::SearchPage search(const std::string& q, int limit = 50, int offset = 0,
                                  const std::string& identity = kIdentity) {
    Poco::Data::Session s = db_->session();
    return store_.search(s, {kAccount, identity}, foldCase(q), {limit, offset}, 10000);
  }

  std::string dir_;
  std::unique_ptr<kernel::SqlDatabase> db_;
  RecordingBus bus_;
  ContactStore store_;
  std::int64_t clock_ = 1000;
};

TEST_F(ContactStoreTest, OneContactPerEmailAnyCaseAndPerNumber) {
  add("Grace@Navy.mil", "+12025550142");
  EXPECT_EQ(conflictStatus([&] { add("grace@NAVY.mil"); }), 409);
  EXPECT_EQ(conflictStatus([&] { add("other@navy.mil", "+12025550142"); }), 409);
  EXPECT_EQ(conflictStatus([&] { add("grace@navy.mil", "", "", kOther); }), 0)
      << "another identity's are its own";
  add("", "+12025550143");
  add("no-phone-1@navy.mil");
  add("no-phone-2@navy.mil");  // absent numbers never collide
  Poco::Data::Session s = db_->session();
  EXPECT_EQ(store_.count(s, {kAccount, kIdentity}), 4);
  ASSERT_TRUE(store_.byEmail(s, kIdentity, "GRACE@navy.MIL"));
  EXPECT_EQ(store_.byEmail(s, kIdentity, "GRACE@navy.MIL")->email, "Grace@Navy.mil");
  EXPECT_TRUE(store_.byPhone(s, kIdentity, "+12025550143"));
  EXPECT_FALSE(store_.byPhone(s, kOther, "+12025550143"));
}

TEST_F(ContactStoreTest, ConflictNamesTheFieldAndWritesNothing) {
  add("a@example.com", "+12025550100");
  const auto events = bus_.events.size();
  try {
    add("b@example.com", "+12025550100");
    FAIL() << "no conflict";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.code(), "conflict");
    EXPECT_EQ(e.errors().count("phone_number"), 1u);
  }
  Poco::Data::Session s = db_->session();
  EXPECT_FALSE(store_.byEmail(s, kIdentity, "b@example.com"));
  EXPECT_EQ(bus_.events.size(), events) << "a refused write publishes nothing";
}

TEST_F(ContactStoreTest, WritesPublishTheContact) {
  ContactRow c = add("ev@example.com");
  ContactRow changed = c;
  changed.nickname = "Ev";
  db_->transaction([&](Poco::Data::Session& tx) { store_.update(tx, c, changed); });
  db_->transaction([&](Poco::Data::Session& tx) { store_.remove(tx, changed); });
  db_->transaction([&](Poco::Data::Session& tx) { store_.remove(tx, changed); });  // gone already
  ASSERT_EQ(bus_.events.size(), 3u);
  EXPECT_EQ(bus_.events[0].type, "contact.created");
  EXPECT_EQ(bus_.events[1].type, "contact.updated");
  EXPECT_EQ(bus_.events[1].object->getValue<std::string>("nickname"), "Ev");
  EXPECT_EQ(bus_.events[2].type, "contact.deleted");
  EXPECT_EQ(bus_.events[2].identity, kIdentity);
  EXPECT_EQ(search("ev").count, 0) << "its grams went with it";
}

// The index answers exactly what a scan of every contact would, for queries of every kind.
TEST_F(ContactStoreTest, SearchAgreesWithAScan) {
  std::mt19937 rng(7);
  const std::vector<std::string> parts = {"an", "bel", "cor", "dra", "él", "fin", "Gar", "ZOË"};
  std::vector<ContactRow> all;
  for (int i = 0; i < 400; ++i) {
    std::string name = parts[rng() % parts.size()] + parts[rng() % parts.size()] + " " +
                       parts[rng() % parts.size()];
    std::string email = i % 4 ? "p" + std::to_string(i) + "@example.com" : "";
    std::string phone = i % 3 ? "" : "+1415555" + std::to_string(1000 + i);
    if (email.empty() && phone.empty()) phone = "+1202555" + std::to_string(1000 + i);
    all.push_back(add(email, phone, name));
  }
  add("p1@example.com", "", "Bel", kOther);  // another identity's: never found
  // Through candidates of rare grams, and (`#`: every gram being "common") through the scan.
  for (const std::string raw :
       {"an", "belcor", "ÉL", "zoë", "gar fin", "example", "p12", "5551", "+1202", "nothing", "n b",
        "ëan", "e", "@", "#BELCOR", "#p12", "#example", "#nothing", "#zoë"}) {
    store_.setRareGramForTest(raw[0] == '#' ? 1 : 5000);
    const std::string q = raw[0] == '#' ? raw.substr(1) : raw;
    std::vector<std::string> want;
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      const std::string text =
          foldCase(it->email + "\n" + it->display_name + "\n" + it->phone_number);
      if (text.find(foldCase(q)) != std::string::npos) want.push_back(it->id);
    }
    auto found = search(q, 200);
    EXPECT_EQ(found.count, static_cast<long>(want.size())) << q;
    EXPECT_TRUE(found.exact) << q;
    std::vector<std::string> got;
    for (const auto& c : found.rows) got.push_back(c.id);
    want.resize(std::min<std::size_t>(want.size(), 200));
    EXPECT_EQ(got, want) << q << ": newest first, the same contacts";
  }
  // Pages of a search cut the same list.
  auto first = search("an", 5, 0), second = search("an", 5, 5);
  ASSERT_EQ(first.rows.size(), 5u);
  ASSERT_EQ(second.rows.size(), 5u);
  EXPECT_EQ(first.count, second.count);
  EXPECT_NE(first.rows.back().id, second.rows.front().id);
  // The whole account, when no identity is named.
  EXPECT_EQ(search("p1@example.com", 50, 0, "").count, 2);
}

TEST(AutoContactsEvents, RecipientsOfSentMailAndSms) {
  sdk::Event mail;
  mail.type = "email.sent";
  mail.object = new Poco::JSON::Object;
  Poco::JSON::Array::Ptr to = new Poco::JSON::Array, cc = new Poco::JSON::Array;
  to->add("a@example.com");
  to->add("not an address");
  cc->add("b@example.com");
  mail.object->set("to_email", to);
  mail.object->set("cc", cc);
  mail.object->set("bcc", new Poco::JSON::Array);
  mail.object->set("status", "sent");
  auto got = sentTo(mail);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].email, "a@example.com");
  EXPECT_EQ(got[1].email, "b@example.com");
  mail.object->set("status", "failed");
  EXPECT_TRUE(sentTo(mail).empty()) << "a message that failed reached no one";

  sdk::Event sms;
  sms.type = "sms.sent";
  sms.object = new Poco::JSON::Object;
  sms.object->set("to_number", "+12025550100");
  sms.object->set("status", "delivered");
  ASSERT_EQ(sentTo(sms).size(), 1u);
  EXPECT_EQ(sentTo(sms)[0].phone_number, "+12025550100");
  sms.type = "sms.received";
  EXPECT_TRUE(sentTo(sms).empty());
}

TEST_F(ContactStoreTest, AutoContactsAddsOnlyWhatIsMissingAndOnlyWhenOn) {
  AutoContacts auto_contacts(store_, Poco::Logger::get("test"));
  const SentMessage message{
      kAccount,
      kIdentity,
      {{"Known@Example.com", ""}, {"new@example.com", ""}, {"", "+12025550199"}}};
  add("known@example.com", "", "Known");
  auto_contacts.handle(message);
  Poco::Data::Session s = db_->session();
  EXPECT_EQ(store_.count(s, {kAccount, kIdentity}), 1) << "off by default";
  {
    Poco::Data::Session s2 = db_->session();
    EXPECT_FALSE(store_.autoContacts(s2, {kIdentity})[kIdentity]);
  }
  db_->transaction(
      [&](Poco::Data::Session& tx) { store_.setAutoContacts(tx, kAccount, kIdentity, true); });
  auto_contacts.handle(message);
  auto_contacts.handle(message);  // the same event from another svcd: nothing more
  EXPECT_EQ(store_.count(s, {kAccount, kIdentity}), 3);
  EXPECT_EQ(store_.byEmail(s, kIdentity, "known@example.com")->display_name, "Known");
  EXPECT_TRUE(store_.byPhone(s, kIdentity, "+12025550199"));
}

}  // namespace
}  // namespace svc::plugins::contacts
