// What a write may give a password entry: required fields per kind of write, the domain's
// normal form, the protected fields' limits, and every bad field named in one 400.
#include "entry_input.h"
#include "entry_shapes.h"

#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

namespace svc::plugins::passwords {
namespace {

sdk::Request body(const std::string& json) {
  sdk::Request r;
  r.method = "POST";
  r.body = json;
  r.json = Poco::JSON::Parser().parse(json).extract<Poco::JSON::Object::Ptr>();
  return r;
}

// The declaration's check, as the kernel makes it before the handler runs, then the reader's.
EntryFields checked(const std::string& json, EntryWrite kind) {
  const sdk::Request r = body(json);
  sdk::FieldErrors errors;
  entryInputSchema(kind).validate(r.json, "", errors);
  errors.throwIfAny();
  return readEntryFields(r, kind);
}

std::map<std::string, std::vector<std::string>> refusal(const std::string& json, EntryWrite kind) {
  try {
    checked(json, kind);
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "invalid");
    return e.errors();
  }
  ADD_FAILURE() << "accepted " << json;
  return {};
}

TEST(EntryInput, ACreateNeedsADomainAndNothingElse) {
  auto f = checked(R"({"domain":"  Example.COM "})", EntryWrite::kCreate);
  EXPECT_EQ(*f.domain, "example.com");
  EXPECT_FALSE(f.username || f.password || f.notes);
  EXPECT_EQ(refusal("{}", EntryWrite::kCreate).count("domain"), 1u);
  EXPECT_EQ(refusal(R"({"domain":null})", EntryWrite::kCreate).count("domain"), 1u);
  f = readEntryFields(
      body(R"({"domain":"https://Accounts.Example.com/Login","username":"Ann","password":"p w",)"
           R"("notes":"line 1\nline 2\tx"})"),
      EntryWrite::kCreate);
  EXPECT_EQ(*f.domain, "https://accounts.example.com/login");
  EXPECT_EQ(*f.username, "Ann");  // protected fields are kept exactly
  EXPECT_EQ(*f.password, "p w");
  EXPECT_EQ(*f.notes, "line 1\nline 2\tx");
}

TEST(EntryInput, ADomainIsLowerCasedToo) {
  EXPECT_EQ(normalizeDomain("BÜCHER.example"), "bücher.example");
  EXPECT_EQ(normalizeDomain(std::string(253, 'a')), std::string(253, 'a'));
}

TEST(EntryInput, AReplaceNeedsEveryField) {
  auto e = refusal(R"({"domain":"x.com"})", EntryWrite::kReplace);
  EXPECT_EQ(e.size(), 3u);
  for (const char* f : {"username", "password", "notes"}) {
    ASSERT_EQ(e.count(f), 1u) << f;
    EXPECT_EQ(e[f].front(), "this field is required");
  }
  auto f = checked(R"({"domain":"x.com","username":"","password":"p","notes":""})",
                   EntryWrite::kReplace);
  EXPECT_EQ(*f.username, "");
  EXPECT_EQ(*f.notes, "");
}

TEST(EntryInput, APatchTakesAnySubset) {
  auto f = checked("{}", EntryWrite::kPatch);
  EXPECT_FALSE(f.domain || f.username || f.password || f.notes);
  f = checked(R"({"password":"new"})", EntryWrite::kPatch);
  EXPECT_EQ(*f.password, "new");
  EXPECT_FALSE(f.domain);
  // A field it does not take is named, not ignored.
  EXPECT_EQ(refusal(R"({"password":"new","unknown":1})", EntryWrite::kPatch).count("unknown"), 1u);
}

TEST(EntryInput, EveryBadFieldIsNamedAtOnce) {
  auto e =
      refusal(R"({"domain":"a b","username":5,"password":"","notes":["x"]})", EntryWrite::kCreate);
  EXPECT_EQ(e.size(), 4u);
  EXPECT_EQ(e["password"].front(), "must not be empty");
  e = refusal(R"({"domain":"","username":"a\u0007","password":"a\nb","notes":"\u001b[2J"})",
              EntryWrite::kPatch);
  EXPECT_EQ(e.size(), 4u);
  EXPECT_EQ(e["domain"].front(), "must be a host name or URL without spaces or control characters");
}

TEST(EntryInput, SizesAreBounded) {
  auto at = [](const char* field, std::size_t bytes) {
    return std::string(R"({"domain":"x.com",")") + field + R"(":")" + std::string(bytes, 'x') +
           "\"}";
  };
  EXPECT_NO_THROW(checked(at("username", kMaxUsernameBytes), EntryWrite::kCreate));
  EXPECT_NO_THROW(checked(at("password", kMaxPasswordBytes), EntryWrite::kCreate));
  EXPECT_NO_THROW(checked(at("notes", kMaxNotesBytes), EntryWrite::kCreate));
  EXPECT_EQ(refusal(at("username", kMaxUsernameBytes + 1), EntryWrite::kCreate).count("username"),
            1u);
  EXPECT_EQ(refusal(at("password", kMaxPasswordBytes + 1), EntryWrite::kCreate).count("password"),
            1u);
  EXPECT_EQ(refusal(at("notes", kMaxNotesBytes + 1), EntryWrite::kCreate).count("notes"), 1u);
  EXPECT_EQ(refusal("{\"domain\":\"" + std::string(254, 'a') + "\"}", EntryWrite::kCreate)
                .count("domain"),
            1u);
}

}  // namespace
}  // namespace svc::plugins::passwords
