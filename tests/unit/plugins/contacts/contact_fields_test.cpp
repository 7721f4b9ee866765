#include "contact_fields.h"
#include "contact_search.h"

#include <svc/sdk/http.h>

#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <set>

namespace svc::plugins::contacts {
namespace {

Poco::JSON::Object::Ptr body(const std::string& json) {
  return Poco::JSON::Parser().parse(json).extract<Poco::JSON::Object::Ptr>();
}

// @return the fields an invalid body's 400 names: the declaration's check, as the kernel makes
// it before the handler runs, then the reader's.
std::set<std::string> badFields(const std::string& json) {
  try {
    sdk::FieldErrors errors;
    contactInputSchema().validate(body(json), "", errors);
    errors.throwIfAny();
    readContactFields(body(json));
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "invalid");
    std::set<std::string> out;
    for (const auto& [field, messages] : e.errors()) out.insert(field);
    return out;
  }
  return {};
}

TEST(ContactFields, PresentFieldsAreNormalizedAbsentOnesLeftAlone) {
  auto f = readContactFields(body(
      R"({"email":"  Ada@Example.com ","phone_number":"+1 (202) 555-0177","display_name":" Ada "})"));
  EXPECT_EQ(f.email, "Ada@Example.com");
  EXPECT_EQ(f.phone_number, "+12025550177");
  EXPECT_EQ(f.display_name, "Ada");
  EXPECT_FALSE(f.nickname.has_value());
  EXPECT_FALSE(readContactFields(nullptr).email.has_value()) << "an empty body sets nothing";
}

TEST(ContactFields, NullOrEmptyClears) {
  auto f = readContactFields(
      body(R"({"email":null,"phone_number":"","display_name":null,"nickname":"  "})"));
  EXPECT_EQ(f.email, "");
  EXPECT_EQ(f.phone_number, "");
  EXPECT_EQ(f.display_name, "");
  EXPECT_EQ(f.nickname, "");
}

TEST(ContactFields, EveryBadFieldIsNamedAtOnce) {
  EXPECT_EQ(badFields(R"({"email":"x","phone_number":"123","display_name":5,"nickname":[]})"),
            (std::set<std::string>{"email", "phone_number", "display_name", "nickname"}));
  EXPECT_EQ(badFields(R"({"email":"a@example.com","nickname":"a\u001bb"})"),
            std::set<std::string>{"nickname"});
  EXPECT_EQ(badFields(R"({"display_name":"tab\there"})"), std::set<std::string>{"display_name"});
  EXPECT_EQ(badFields(R"({"phone_number":true})"), std::set<std::string>{"phone_number"});
}

TEST(ContactFields, NamesAreBoundedInCharactersNotBytes) {
  std::string ok, too_long;
  for (std::size_t i = 0; i < kMaxNameCharacters; ++i) ok += "\xC3\xA9";  // é
  too_long = ok + "x";
  EXPECT_EQ(readContactFields(body(R"({"nickname":")" + ok + R"("})")).nickname, ok);
  EXPECT_EQ(badFields(R"({"nickname":")" + too_long + R"("})"), std::set<std::string>{"nickname"});
}

TEST(ContactSearch, FoldingIsUnicodeAware) {
  EXPECT_EQ(foldCase("ÉLODIE Zoë"), "élodie zoë");
  EXPECT_EQ(searchText({"Ada@X.com", "", "ÉL", "+1202"}), "ada@x.com\nél\n+1202");
}

TEST(ContactSearch, GramsAreDistinctPerLineAndPerAccount) {
  // "aaaa" has one distinct trigram; lines never join: "ab\ncd" has none.
  EXPECT_EQ(gramKeys("acct", "aaaa").size(), 1u);
  EXPECT_TRUE(gramKeys("acct", "ab\ncd").empty());
  EXPECT_EQ(gramKeys("acct", "abcd").size(), 2u);
  // Three characters, not three bytes.
  EXPECT_EQ(gramKeys("acct", "éé").size(), 0u);
  EXPECT_EQ(gramKeys("acct", "ééé").size(), 1u);
  // A query's grams are among a text's grams when it is a substring.
  const auto text = gramKeys("acct", "grace@navy.mil\ngrace hopper");
  for (auto k : gramKeys("acct", "hopp")) {
    EXPECT_TRUE(std::binary_search(text.begin(), text.end(), k));
  }
  EXPECT_NE(gramKeys("acct", "abc"), gramKeys("other", "abc")) << "keys belong to an account";
  for (auto k : gramKeys("acct", "any text here")) EXPECT_GE(k, 0) << "a positive BIGINT";
}

}  // namespace
}  // namespace svc::plugins::contacts
