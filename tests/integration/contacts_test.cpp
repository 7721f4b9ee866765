// The contacts plugin over real HTTP: every route and status, identity scoping and other
// accounts, bad input on every field (nothing stored), one contact per email (any case) and per
// number (any notation) even when creates race, search, events, and auto_contacts through real
// email and SMS sends (the loopback carrier).
#include "harness.h"

#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

namespace svc::testing {
namespace {

class Contacts : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "email", "sms", "contacts"};
    o.args = {"--set", "email.domains=agents.test", "--set",
              "sms.loopback.numbers=US:+12025550100-+12025550199"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "owner@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
  }

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& key = "") {
    return http(svcd_->port(), method, path, body, bearer(key.empty() ? key_ : key));
  }

  std::string identity(const std::string& name, const std::string& extra = "") {
    auto r = call("POST", "/api/identities/", "{\"name\":\"" + name + "\"" + extra + "}");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("uuid");
  }

  std::string identityKey(const std::string& identity) {
    auto r = call("POST", "/api/auth/keys/identity/", "{\"identity\":\"" + identity + "\"}");
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("key");
  }

  HttpReply create(const std::string& identity, const std::string& body,
                   const std::string& key = "") {
    return call("POST", "/api/contacts/?identity=" + identity, body, key);
  }

  std::string createdUuid(const std::string& identity, const std::string& body) {
    auto r = create(identity, body);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? r.json()->getValue<std::string>("uuid") : "";
  }

  long count(const std::string& query = "") {
    auto r = call("GET", "/api/contacts/" + query);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getValue<long>("count");
  }

  // The display names of a list's results, in order, joined by commas.
  static std::string names(const HttpReply& r) {
    std::string out;
    auto list = r.json()->getArray("results");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto c = list->getObject(static_cast<unsigned>(i));
      out +=
          (i ? "," : "") +
          (c->isNull("display_name") ? std::string("-") : c->getValue<std::string>("display_name"));
    }
    return out;
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_;
};

TEST_F(Contacts, EveryRouteAndStatus) {
  const std::string a = identity("A");
  auto made = create(a, R"({"email":"Ada@Example.com","display_name":"Ada Lovelace",)"
                        R"("nickname":"Countess","phone_number":"+1 (202) 555-0177"})");
  ASSERT_EQ(made.status, 201) << made.body;
  auto c = made.json();
  const std::string uuid = c->getValue<std::string>("uuid");
  EXPECT_EQ(c->getValue<std::string>("identity"), a);
  EXPECT_EQ(c->getValue<std::string>("email"), "Ada@Example.com");
  EXPECT_EQ(c->getValue<std::string>("phone_number"), "+12025550177") << "normalized";
  EXPECT_EQ(c->getValue<std::string>("display_name"), "Ada Lovelace");
  EXPECT_EQ(c->getValue<std::string>("nickname"), "Countess");
  EXPECT_FALSE(c->getValue<std::string>("created_dt").empty());
  EXPECT_EQ(c->getValue<std::string>("created_dt"), c->getValue<std::string>("updated_dt"));

  // Only a phone number is enough; absent fields are null.
  auto phone_only = create(a, R"({"phone_number":"+447700900123"})");
  ASSERT_EQ(phone_only.status, 201) << phone_only.body;
  EXPECT_TRUE(phone_only.json()->isNull("email"));
  EXPECT_TRUE(phone_only.json()->isNull("display_name"));
  EXPECT_TRUE(phone_only.json()->isNull("nickname"));

  auto one = call("GET", "/api/contacts/" + uuid + "/");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json()->getValue<std::string>("display_name"), "Ada Lovelace");
  EXPECT_EQ(call("GET", "/api/contacts/" + uuid).status, 200) << "without the trailing slash";

  // The list: newest first, paginated.
  auto list = call("GET", "/api/contacts/");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.json()->getValue<int>("count"), 2);
  EXPECT_EQ(names(list), "-,Ada Lovelace");
  auto page = call("GET", "/api/contacts/?limit=1&offset=1");
  EXPECT_EQ(names(page), "Ada Lovelace");
  EXPECT_FALSE(page.json()->isNull("previous"));

  // find/: the email in any case, the number in any notation; else 404.
  for (const std::string query :
       {"email=ada@example.COM", "email=%20Ada@Example.com", "phone_number=%2B1-202-555-0177",
        "phone_number=%2B1%20(202)%20555-0177"}) {
    auto f = call("GET", "/api/contacts/find/?identity=" + a + "&" + query);
    EXPECT_EQ(f.status, 200) << query << ": " << f.body;
    if (f.status == 200) {
      EXPECT_EQ(f.json()->getValue<std::string>("uuid"), uuid) << query;
    }
  }
  EXPECT_EQ(call("GET", "/api/contacts/find/?identity=" + a + "&email=nobody@example.com").status,
            404);
  EXPECT_EQ(call("GET", "/api/contacts/find/?identity=" + a + "&phone_number=+12025550100").status,
            404);

  // search/: a substring of any field, any case.
  for (const std::string q : {"lovel", "COUNT", "example.c", "555-01", "2025550", "ada"}) {
    auto s = call("GET", "/api/contacts/search/?identity=" + a + "&q=" + q);
    ASSERT_EQ(s.status, 200) << s.body;
    EXPECT_EQ(s.json()->getValue<int>("count"), q == "555-01" ? 0 : 1) << q;
    EXPECT_TRUE(s.json()->getValue<bool>("count_is_exact"));
  }

  // PATCH changes only what is given; null clears an optional field.
  auto patched = call("PATCH", "/api/contacts/" + uuid + "/", R"({"nickname":"Ada"})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(patched.json()->getValue<std::string>("nickname"), "Ada");
  EXPECT_EQ(patched.json()->getValue<std::string>("display_name"), "Ada Lovelace");
  EXPECT_EQ(patched.json()->getValue<std::string>("email"), "Ada@Example.com");
  EXPECT_NE(patched.json()->getValue<std::string>("updated_dt"),
            c->getValue<std::string>("updated_dt"));
  auto cleared =
      call("PATCH", "/api/contacts/" + uuid + "/", R"({"display_name":null,"phone_number":null})");
  ASSERT_EQ(cleared.status, 200) << cleared.body;
  EXPECT_TRUE(cleared.json()->isNull("display_name"));
  EXPECT_TRUE(cleared.json()->isNull("phone_number"));
  EXPECT_EQ(call("GET", "/api/contacts/find/?identity=" + a + "&phone_number=+12025550177").status,
            404)
      << "the cleared number finds nothing";
  EXPECT_EQ(call("GET", "/api/contacts/search/?identity=" + a + "&q=lovelace")
                .json()
                ->getValue<int>("count"),
            0)
      << "the search index follows the change";
  // Without an email and a number a contact is nothing: 400, unchanged.
  auto empty = call("PATCH", "/api/contacts/" + uuid + "/", R"({"email":null})");
  EXPECT_EQ(empty.status, 400) << empty.body;
  EXPECT_EQ(call("GET", "/api/contacts/" + uuid + "/").json()->getValue<std::string>("email"),
            "Ada@Example.com");

  // Methods the routes do not have, ids that are not contacts.
  EXPECT_EQ(call("PUT", "/api/contacts/" + uuid + "/", "{}").status, 405);
  EXPECT_EQ(call("GET", "/api/contacts/not-a-uuid/").status, 404);
  EXPECT_EQ(call("GET", "/api/contacts/0b5d1e8e-8f0c-4a8e-9d53-0d7e0e4f3a11/").status, 404);

  EXPECT_EQ(call("DELETE", "/api/contacts/" + uuid + "/").status, 204);
  EXPECT_EQ(call("GET", "/api/contacts/" + uuid + "/").status, 404);
  EXPECT_EQ(call("DELETE", "/api/contacts/" + uuid + "/").status, 404);
  EXPECT_EQ(call("PATCH", "/api/contacts/" + uuid + "/", R"({"nickname":"x"})").status, 404);
  EXPECT_EQ(count(), 1);
  // Its address and the search index are free again.
  EXPECT_EQ(create(a, R"({"email":"ada@example.com"})").status, 201);
  EXPECT_EQ(call("GET", "/api/contacts/search/?identity=" + a + "&q=countess")
                .json()
                ->getValue<int>("count"),
            0);
}

TEST_F(Contacts, QueryParametersAreChecked) {
  const std::string a = identity("A");
  // find/ needs an identity, and exactly one of email and phone_number, well-formed.
  auto no_identity = call("GET", "/api/contacts/find/?email=x@example.com");
  EXPECT_EQ(no_identity.status, 400);
  EXPECT_EQ(no_identity.code(), "identity_required");
  EXPECT_EQ(call("GET", "/api/contacts/find/?identity=" + a).status, 400);
  EXPECT_EQ(call("GET", "/api/contacts/find/?identity=" + a +
                            "&email=x@example.com&phone_number=%2B12025550100")
                .status,
            400);
  auto bad_email = call("GET", "/api/contacts/find/?identity=" + a + "&email=nope");
  EXPECT_EQ(bad_email.status, 400);
  EXPECT_TRUE(bad_email.json()->getObject("errors")->has("email")) << bad_email.body;
  auto bad_phone = call("GET", "/api/contacts/find/?identity=" + a + "&phone_number=12");
  EXPECT_EQ(bad_phone.status, 400);
  EXPECT_TRUE(bad_phone.json()->getObject("errors")->has("phone_number")) << bad_phone.body;
  // search/ needs q, not empty, without control characters.
  for (const std::string query : {"", "q=", "q=%0A", "q=a%1Bb"}) {
    auto r = call("GET", "/api/contacts/search/?" + query);
    EXPECT_EQ(r.status, 400) << query << ": " << r.body;
    EXPECT_EQ(r.code(), "invalid") << query;
    EXPECT_TRUE(r.json()->getObject("errors")->has("q")) << query;
  }
  EXPECT_EQ(call("GET", "/api/contacts/search/?q=" + std::string(255, 'x')).status, 400);
  EXPECT_EQ(call("GET", "/api/contacts/?limit=x").status, 400);
  // POST needs an identity too.
  auto post = call("POST", "/api/contacts/", R"({"email":"x@example.com"})");
  EXPECT_EQ(post.status, 400);
  EXPECT_EQ(post.code(), "identity_required");
}

TEST_F(Contacts, BadInputOnEveryFieldIsRefusedAndStoresNothing) {
  const std::string a = identity("A");
  const std::string long_name(201, 'n');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "email"},
      {R"({"display_name":"Only a name"})", "phone_number"},
      {R"({"email":null,"phone_number":null})", "email"},
      {R"({"email":"not-an-address"})", "email"},
      {R"({"email":"a@b"})", "email"},
      {R"({"email":"a b@example.com"})", "email"},
      {R"({"email":42})", "email"},
      {R"({"email":["a@example.com"]})", "email"},
      {R"({"phone_number":"12025550100"})", "phone_number"},
      {R"({"phone_number":"+1202555010x"})", "phone_number"},
      {R"({"phone_number":"+0123456789"})", "phone_number"},
      {R"({"phone_number":true})", "phone_number"},
      {R"({"email":"a@example.com","display_name":")" + long_name + R"("})", "display_name"},
      {R"({"email":"a@example.com","display_name":"a\u0007b"})", "display_name"},
      {R"({"email":"a@example.com","display_name":"line\nbreak"})", "display_name"},
      {R"({"email":"a@example.com","display_name":{}})", "display_name"},
      {R"({"email":"a@example.com","nickname":")" + long_name + R"("})", "nickname"},
      {R"({"email":"a@example.com","nickname":"tab\there"})", "nickname"},
      {R"({"email":"a@example.com","nickname":7})", "nickname"},
  };
  for (const auto& [body, field] : cases) {
    auto r = create(a, body);
    EXPECT_EQ(r.status, 400) << body << ": " << r.body;
    EXPECT_EQ(r.code(), "invalid") << body;
    auto errors = r.json()->getObject("errors");
    EXPECT_TRUE(errors && errors->has(field)) << body << ": " << r.body;
  }
  // Every bad field is named at once.
  auto all = create(a, R"({"email":"x","phone_number":"y","display_name":1,"nickname":false})");
  ASSERT_EQ(all.status, 400);
  for (const char* field : {"email", "phone_number", "display_name", "nickname"}) {
    EXPECT_TRUE(all.json()->getObject("errors")->has(field)) << field << ": " << all.body;
  }
  // Malformed JSON is the kernel's 400.
  EXPECT_EQ(create(a, R"({"email":)").status, 400);
  EXPECT_EQ(count(), 0) << "nothing stored";

  // A 200-character name (of several bytes each) is fine, and PATCH checks as POST does.
  std::string wide;
  for (int i = 0; i < 200; ++i) wide += "é";
  const std::string uuid =
      createdUuid(a, R"({"email":"a@example.com","display_name":")" + wide + R"("})");
  ASSERT_FALSE(uuid.empty());
  for (const auto& [body, field] : cases) {
    if (body == "{}" || field == "phone_number" || body.find("null") != std::string::npos) {
      continue;
    }
    auto r = call("PATCH", "/api/contacts/" + uuid + "/", body);
    EXPECT_EQ(r.status, 400) << body << ": " << r.body;
  }
  auto after = call("GET", "/api/contacts/" + uuid + "/").json();
  EXPECT_EQ(after->getValue<std::string>("email"), "a@example.com") << "unchanged";
  EXPECT_EQ(after->getValue<std::string>("display_name"), wide);
  EXPECT_TRUE(after->isNull("nickname"));
}

TEST_F(Contacts, OnePerEmailAnyCaseAndOnePerNumberAnyNotation) {
  const std::string a = identity("A"), b = identity("B");
  const std::string first =
      createdUuid(a, R"({"email":"Grace@Navy.mil","phone_number":"+12025550142"})");
  auto same_email = create(a, R"({"email":"grace@NAVY.MIL"})");
  EXPECT_EQ(same_email.status, 409) << same_email.body;
  EXPECT_EQ(same_email.code(), "conflict");
  auto same_phone = create(a, R"({"phone_number":"+1 202-555-0142","email":"other@navy.mil"})");
  EXPECT_EQ(same_phone.status, 409) << same_phone.body;
  EXPECT_EQ(same_phone.code(), "conflict");
  EXPECT_EQ(count("?identity=" + a), 1) << "nothing stored by the conflicts";
  // Another identity keeps its own contacts.
  EXPECT_EQ(create(b, R"({"email":"grace@navy.mil","phone_number":"+12025550142"})").status, 201);
  // A change to another contact's address or number is a conflict too.
  const std::string second = createdUuid(a, R"({"email":"hopper@navy.mil"})");
  auto to_email = call("PATCH", "/api/contacts/" + second + "/", R"({"email":"GRACE@navy.mil"})");
  EXPECT_EQ(to_email.status, 409) << to_email.body;
  auto to_phone =
      call("PATCH", "/api/contacts/" + second + "/", R"({"phone_number":"+1.202.555.0142"})");
  EXPECT_EQ(to_phone.status, 409) << to_phone.body;
  EXPECT_EQ(call("GET", "/api/contacts/" + second + "/").json()->getValue<std::string>("email"),
            "hopper@navy.mil");
  // A contact may change the case of its own address.
  auto own = call("PATCH", "/api/contacts/" + first + "/", R"({"email":"grace@navy.mil"})");
  EXPECT_EQ(own.status, 200) << own.body;
  // Contacts without a number do not collide with one another.
  EXPECT_EQ(create(a, R"({"email":"third@navy.mil"})").status, 201);
}

TEST_F(Contacts, ConcurrentDuplicateCreatesGiveOneContact) {
  const std::string a = identity("A");
  constexpr int kThreads = 8;
  std::atomic<int> created{0}, conflicts{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      // The same address in other cases, and the same number in other notations.
      const std::string body =
          i % 2 ? R"({"email":"Race@Example.com"})" : R"({"email":"race@example.COM"})";
      auto r = create(a, body);
      (r.status == 201 ? created : r.status == 409 ? conflicts : other)++;
      auto p = create(a, i % 2 ? R"({"phone_number":"+12025550111"})"
                               : R"({"phone_number":"+1 (202) 555-0111"})");
      (p.status == 201 ? created : p.status == 409 ? conflicts : other)++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 2);
  EXPECT_EQ(conflicts.load(), 2 * kThreads - 2);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(count(), 2);
}

TEST_F(Contacts, IdentityKeysSeeTheirIdentityAndOtherAccountsNothing) {
  const std::string a = identity("A"), b = identity("B");
  const std::string key_a = identityKey(a);
  const std::string mine = createdUuid(a, R"({"email":"mine@example.com","display_name":"Mine"})");
  const std::string theirs =
      createdUuid(b, R"({"email":"theirs@example.com","display_name":"Theirs"})");

  // An identity key creates for its own identity without naming it, and lists only its own.
  auto own =
      call("POST", "/api/contacts/", R"({"email":"own@example.com","display_name":"Own"})", key_a);
  ASSERT_EQ(own.status, 201) << own.body;
  EXPECT_EQ(own.json()->getValue<std::string>("identity"), a);
  auto listed = call("GET", "/api/contacts/", "", key_a);
  EXPECT_EQ(names(listed), "Own,Mine");
  EXPECT_EQ(call("GET", "/api/contacts/search/?q=e", "", key_a).json()->getValue<int>("count"), 2);
  EXPECT_EQ(call("GET", "/api/contacts/find/?email=mine@example.com", "", key_a).status, 200);
  EXPECT_EQ(call("GET", "/api/contacts/find/?email=theirs@example.com", "", key_a).status, 404);
  // Another identity's contact is not there for it; naming another identity is refused.
  EXPECT_EQ(call("GET", "/api/contacts/" + theirs + "/", "", key_a).status, 404);
  EXPECT_EQ(call("PATCH", "/api/contacts/" + theirs + "/", R"({"nickname":"x"})", key_a).status,
            404);
  EXPECT_EQ(call("DELETE", "/api/contacts/" + theirs + "/", "", key_a).status, 404);
  EXPECT_EQ(call("GET", "/api/contacts/?identity=" + b, "", key_a).status, 403);
  EXPECT_EQ(call("GET", "/api/contacts/" + mine + "/", "", key_a).status, 200);

  // The management key sees the account's, or one identity's with identity=.
  EXPECT_EQ(count(), 3);
  EXPECT_EQ(names(call("GET", "/api/contacts/?identity=" + b)), "Theirs");
  EXPECT_EQ(
      call("GET", "/api/contacts/search/?q=theirs&identity=" + a).json()->getValue<int>("count"),
      0);
  EXPECT_EQ(call("GET", "/api/contacts/search/?q=theirs").json()->getValue<int>("count"), 1);

  // Another account: nothing of this one's, every route 404 (never "someone else's").
  const std::string other =
      operatorLogin(*svcd_, "other@example.com")->optValue<std::string>("management_key", "");
  auto none = call("GET", "/api/contacts/", "", other);
  ASSERT_EQ(none.status, 200);
  EXPECT_EQ(none.json()->getValue<int>("count"), 0);
  EXPECT_EQ(call("GET", "/api/contacts/search/?q=mine", "", other).json()->getValue<int>("count"),
            0);
  EXPECT_EQ(call("GET", "/api/contacts/" + mine + "/", "", other).status, 404);
  EXPECT_EQ(call("PATCH", "/api/contacts/" + mine + "/", R"({"nickname":"x"})", other).status, 404);
  EXPECT_EQ(call("DELETE", "/api/contacts/" + mine + "/", "", other).status, 404);
  EXPECT_EQ(call("GET", "/api/contacts/find/?identity=" + a + "&email=mine@example.com", "", other)
                .status,
            404);
  EXPECT_EQ(
      call("POST", "/api/contacts/?identity=" + a, R"({"email":"x@example.com"})", other).status,
      404);
  EXPECT_EQ(count(), 3) << "nothing changed by the other account";
}

TEST_F(Contacts, SearchMatchesSubstringsOfEveryFieldInAnyCase) {
  const std::string a = identity("A");
  createdUuid(a, R"({"email":"elodie@example.fr","display_name":"Élodie Durand"})");
  createdUuid(a, R"({"email":"zoe@example.com","nickname":"ZOË","phone_number":"+33612345678"})");
  createdUuid(a, R"({"phone_number":"+12025550123","display_name":"Bob"})");
  auto hits = [&](const std::string& q) {
    auto r = call("GET", "/api/contacts/search/?identity=" + a + "&q=" + q);
    EXPECT_EQ(r.status, 200) << q << ": " << r.body;
    return names(r);
  };
  EXPECT_EQ(hits("%C3%A9lodie"), "Élodie Durand") << "é matches É";
  EXPECT_EQ(hits("DURAND"), "Élodie Durand");
  EXPECT_EQ(hits("zo%C3%AB"), "-") << "ë matches Ë in the nickname";
  EXPECT_EQ(hits("example"), "-,Élodie Durand") << "newest first";
  EXPECT_EQ(hits("%2B336"), "-") << "a number's prefix";
  EXPECT_EQ(hits("5550123"), "Bob");
  EXPECT_EQ(hits("o"), "Bob,-,Élodie Durand") << "one character: every field holding it";
  EXPECT_EQ(hits("bo"), "Bob");
  EXPECT_EQ(hits("nobody"), "");
  EXPECT_EQ(hits("ie%20du"), "Élodie Durand") << "across a space";
  EXPECT_EQ(hits("frzoe"), "") << "never across two fields or contacts";
  auto page = call("GET", "/api/contacts/search/?identity=" + a + "&q=e&limit=1");
  EXPECT_EQ(page.json()->getValue<int>("count"), 2);
  EXPECT_EQ(names(page), "-");
  EXPECT_FALSE(page.json()->isNull("next"));
}

TEST_F(Contacts, EventsCarryTheContact) {
  const std::string a = identity("A");
  const std::string uuid = createdUuid(a, R"({"email":"ev@example.com","display_name":"Ev"})");
  ASSERT_EQ(call("PATCH", "/api/contacts/" + uuid + "/", R"({"nickname":"E"})").status, 200);
  ASSERT_EQ(call("DELETE", "/api/contacts/" + uuid + "/").status, 204);
  // Refusals publish nothing.
  ASSERT_EQ(create(a, R"({"email":"bad"})").status, 400);
  const std::string stream = eventStream(
      svcd_->port(), key_, "last_event_id=0&types=contact.created,contact.updated,contact.deleted",
      {"event: contact.created", "event: contact.updated", "event: contact.deleted"});
  for (const char* type : {"contact.created", "contact.updated", "contact.deleted"}) {
    const auto at = stream.find(std::string("event: ") + type);
    ASSERT_NE(at, std::string::npos) << type << "\n" << stream;
    const auto data = stream.substr(at, stream.find("\n\n", at) - at);
    EXPECT_NE(data.find("\"uuid\":\"" + uuid + "\""), std::string::npos) << data;
    EXPECT_NE(data.find("\"identity\":\"" + a + "\""), std::string::npos) << data;
    EXPECT_NE(data.find("\"email\":\"ev@example.com\""), std::string::npos) << data;
  }
  EXPECT_NE(stream.find("\"nickname\":\"E\""), std::string::npos) << stream;
  EXPECT_EQ(stream.find("\"bad\""), std::string::npos) << stream;
}

class AutoContacts : public Contacts {
 protected:
  // Waits up to 5 s for the identity to have `want` contacts. @return how many it has.
  long waitForContacts(const std::string& identity, long want) {
    long n = 0;
    for (int i = 0; i < 600; ++i) {
      n = count("?identity=" + identity);
      if (n >= want) return n;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return n;
  }

  std::string email(const std::string& identity) {
    return call("GET", "/api/identities/" + identity + "/")
        .json()
        ->getObject("email")
        ->getValue<std::string>("address");
  }
  std::string phone(const std::string& identity) {
    auto r = call("POST", "/api/identities/" + identity + "/provision-phone/", "{}");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getObject("phone")->getValue<std::string>("number");
  }
  bool autoContacts(const std::string& identity) {
    return call("GET", "/api/identities/" + identity + "/")
        .json()
        ->getObject("contacts")
        ->getValue<bool>("auto_contacts");
  }
};

TEST_F(AutoContacts, IsASettingOfTheIdentityOffByDefault) {
  const std::string off = identity("Off"), on = identity("On", ",\"auto_contacts\":true");
  EXPECT_FALSE(autoContacts(off));
  EXPECT_TRUE(autoContacts(on));
  auto list = call("GET", "/api/identities/");
  EXPECT_NE(list.body.find("\"contacts\":{\"auto_contacts\":false}"), std::string::npos)
      << list.body;
  // PATCH turns it on with the identity's other fields, in one change (and its event).
  auto patched =
      call("PATCH", "/api/identities/" + off + "/", R"({"name":"Now on","auto_contacts":true})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_TRUE(patched.json()->getObject("contacts")->getValue<bool>("auto_contacts"));
  EXPECT_EQ(patched.json()->getValue<std::string>("name"), "Now on");
  EXPECT_TRUE(autoContacts(off));
  // A PATCH without it leaves it; a bad value changes nothing at all.
  ASSERT_EQ(call("PATCH", "/api/identities/" + off + "/", R"({"name":"Still on"})").status, 200);
  EXPECT_TRUE(autoContacts(off));
  auto bad =
      call("PATCH", "/api/identities/" + off + "/", R"({"name":"Renamed","auto_contacts":"no"})");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_TRUE(bad.json()->getObject("errors")->has("auto_contacts")) << bad.body;
  auto now = call("GET", "/api/identities/" + off + "/").json();
  EXPECT_EQ(now->getValue<std::string>("name"), "Still on") << "rolled back with it";
  EXPECT_TRUE(now->getObject("contacts")->getValue<bool>("auto_contacts"));
  ASSERT_EQ(call("PATCH", "/api/identities/" + off + "/", R"({"auto_contacts":false})").status,
            200);
  EXPECT_FALSE(autoContacts(off));
  EXPECT_EQ(call("POST", "/api/identities/", R"({"name":"X","auto_contacts":1})").status, 400);
  const std::string stream =
      eventStream(svcd_->port(), key_, "last_event_id=0&types=identity.updated",
                  {"\"contacts\":{\"auto_contacts\":true}"});
  EXPECT_NE(stream.find("\"contacts\":{\"auto_contacts\":true}"), std::string::npos) << stream;
}

TEST_F(AutoContacts, TheSettingIsDeclaredInTheIdentitysShapes) {
  // Added by the contacts plugin after the identity routes were registered, yet described and
  // checked by the kernel like any declared field.
  auto doc = call("GET", "/api/schema/");
  ASSERT_EQ(doc.status, 200);
  auto schemas = doc.json()->getObject("components")->getObject("schemas");
  for (const char* body : {"IdentityInput", "IdentityUpdate", "IdentityPatch"}) {
    auto field = schemas->getObject(body)->getObject("properties")->getObject("auto_contacts");
    ASSERT_TRUE(field) << body;
    std::ostringstream type;
    field->get("type").extract<Poco::JSON::Array::Ptr>()->stringify(type);
    EXPECT_EQ(type.str(), R"(["boolean","null"])") << body;
    // The default it states is the one a new identity gets (IsASettingOfTheIdentityOffByDefault).
    const std::string described = field->optValue<std::string>("description", "");
    EXPECT_NE(described.find("(default false"), std::string::npos) << body << ": " << described;
    EXPECT_EQ(described.find("default true"), std::string::npos) << body << ": " << described;
  }
  auto reference = call("GET", "/api/schema/reference.txt");
  ASSERT_EQ(reference.status, 200);
  std::istringstream lines(reference.body);
  int described_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("auto_contacts") == std::string::npos) continue;
    if (line.find("default") != std::string::npos) ++described_lines;
    EXPECT_EQ(line.find("default true"), std::string::npos) << line;
  }
  EXPECT_GT(described_lines, 0) << reference.body;
  auto identity = schemas->getObject("Identity");
  EXPECT_TRUE(identity->getObject("properties")->has("contacts"));
  EXPECT_FALSE(identity->getValue<bool>("additionalProperties"));
  auto unknown = call("POST", "/api/identities/", R"({"name":"X","bogus":1,"auto_contacts":"y"})");
  ASSERT_EQ(unknown.status, 400) << unknown.body;
  auto errors = unknown.json()->getObject("errors");
  EXPECT_TRUE(errors->has("bogus")) << unknown.body;
  EXPECT_TRUE(errors->has("auto_contacts")) << unknown.body;
  EXPECT_NE(unknown.body.find("auto_contacts"), std::string::npos);
}

TEST_F(AutoContacts, RecipientsOfSentMailAndSmsBecomeContacts) {
  const std::string sender = identity("Sender", ",\"auto_contacts\":true");
  const std::string quiet = identity("Quiet");
  // Bob has the setting too: what he receives must not make contacts, only what he sends.
  const std::string bob = identity("Bob", ",\"auto_contacts\":true"), cat = identity("Cat");
  const std::string sender_number = phone(sender), quiet_number = phone(quiet);
  const std::string bob_number = phone(bob);
  (void)sender_number;
  (void)quiet_number;
  // A contact the sender has already, in another case: kept, not doubled.
  const std::string known = email(cat);
  std::string upper = known;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  createdUuid(sender, "{\"email\":\"" + upper + "\",\"display_name\":\"Cat\"}");

  auto mail = call("POST", "/api/email-messages/compose/?identity=" + sender,
                   "{\"to_email\":\"" + email(bob) + "\",\"cc\":\"" + known +
                       "\",\"subject\":\"hi\",\"content\":\"hello\"}");
  ASSERT_EQ(mail.status, 201) << mail.body;
  auto sms = call("POST", "/api/messages/send/?identity=" + sender,
                  "{\"to_number\":\"" + bob_number + "\",\"body\":\"hello\"}");
  ASSERT_EQ(sms.status, 201) << sms.body;
  EXPECT_EQ(waitForContacts(sender, 3), 3);
  auto by_mail = call("GET", "/api/contacts/find/?identity=" + sender + "&email=" + email(bob));
  EXPECT_EQ(by_mail.status, 200) << by_mail.body;
  auto by_phone =
      call("GET", "/api/contacts/find/?identity=" + sender + "&phone_number=" + bob_number);
  EXPECT_EQ(by_phone.status, 200) << by_phone.body;
  auto cat_contact = call("GET", "/api/contacts/find/?identity=" + sender + "&email=" + known);
  EXPECT_EQ(cat_contact.json()->getValue<std::string>("display_name"), "Cat") << "kept as it was";

  // Sending again adds nothing; an identity without the setting gets no contacts.
  ASSERT_EQ(call("POST", "/api/messages/send/?identity=" + sender,
                 "{\"to_number\":\"" + bob_number + "\",\"body\":\"again\"}")
                .status,
            201);
  ASSERT_EQ(call("POST", "/api/messages/send/?identity=" + quiet,
                 "{\"to_number\":\"" + bob_number + "\",\"body\":\"hello\"}")
                .status,
            201);
  ASSERT_EQ(call("POST", "/api/email-messages/compose/?identity=" + quiet,
                 "{\"to_email\":\"" + email(bob) + "\",\"subject\":\"hi\",\"content\":\"x\"}")
                .status,
            201);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(count("?identity=" + sender), 3);
  EXPECT_EQ(count("?identity=" + quiet), 0);
  EXPECT_EQ(count("?identity=" + bob), 0);
}

}  // namespace
}  // namespace svc::testing
