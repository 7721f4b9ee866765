// The list filters of threads and messages: which query parameters their routes declare (the
// kernel refuses what does not fit before the filter reads it), and the SQL condition and bind
// order they produce.
#include "messages.h"
#include "email_routes.h"

#include <svc/sdk/util.h>

#include <gtest/gtest.h>

#include <map>

namespace svc::plugins::email {
namespace {

sdk::Request request(std::multimap<std::string, std::string> query, std::string identity = "") {
  sdk::Request r;
  r.method = "GET";
  r.principal.kind = sdk::PrincipalKind::kManagement;
  r.principal.account_id = "acct";
  r.query = std::move(query);
  if (!identity.empty()) r.identity = sdk::IdentityRef{identity, "Bot"};
  return r;
}

// The parameters the declaration refuses in a query, each with its first problem.
std::map<std::string, std::string> refused(const std::vector<sdk::Param>& declared,
                                           std::multimap<std::string, std::string> query) {
  sdk::FieldErrors errors;
  sdk::validateQuery(declared, query, errors);
  std::map<std::string, std::string> out;
  try {
    errors.throwIfAny();
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    for (const auto& [field, messages] : e.errors()) out[field] = messages.front();
  }
  return out;
}

constexpr const char* kUuid = "0B6D1C8E-2F7A-4C1B-9E3D-5A4F6B7C8D9E";
constexpr const char* kLowerUuid = "0b6d1c8e-2f7a-4c1b-9e3d-5a4f6b7c8d9e";

TEST(ThreadFilter, ScopesToTheAccountAndTheIdentityThenFilters) {
  auto f = threadFilter(request({}));
  EXPECT_EQ(f.where, "WHERE account_id = ? AND quarantined = 0");
  EXPECT_EQ(f.binds, std::vector<std::string>{"acct"});
  f = threadFilter(request({{"inbox", kUuid}, {"has_unread", "TRUE"}}, "ID-1"));
  EXPECT_EQ(f.where,
            "WHERE account_id = ? AND identity_uuid = ? AND inbox_id = ? AND unread_count > 0 "
            "AND quarantined = 0");
  EXPECT_EQ(f.binds, (std::vector<std::string>{"acct", "id-1", kLowerUuid}));
  EXPECT_EQ(threadFilter(request({{"has_unread", "0"}})).where,
            "WHERE account_id = ? AND unread_count = 0 AND quarantined = 0");
  EXPECT_EQ(threadFilter(request({{"quarantined", "true"}})).where,
            "WHERE account_id = ? AND quarantined = 1");
  EXPECT_EQ(threadFilter(request({{"quarantined", "include"}})).where, "WHERE account_id = ?");
}

TEST(ThreadFilter, TheRouteRefusesParametersItCannotRead) {
  auto bad = refused(threadListQuery(), {{"inbox", "nope"}, {"has_unread", "yes"}, {"q", "x"}});
  EXPECT_EQ(bad.size(), 3u);
  EXPECT_EQ(bad["inbox"], "must be a UUID");
  EXPECT_EQ(bad["has_unread"], "must be true or false");
  EXPECT_NE(bad["q"].find("unknown parameter"), std::string::npos) << bad["q"];
  EXPECT_TRUE(refused(threadListQuery(), {{"inbox", kUuid}, {"has_unread", "TRUE"}}).empty());
}

// Quarantined mail is left out unless asked for, right after the owner: the *_q indexes lead
// with (owner, quarantined), so the default list still counts from the index alone.
TEST(MessageFilter, ScopedListsUseTheIdentityAloneAndTheRestTheAccount) {
  auto f = messageFilter(request({}, "id-1"));
  EXPECT_EQ(f.where, "WHERE identity_uuid = ? AND quarantined = 0");
  EXPECT_EQ(f.binds, std::vector<std::string>{"id-1"});
  f = messageFilter(request({}));
  EXPECT_EQ(f.where, "WHERE account_id = ? AND quarantined = 0");
  EXPECT_EQ(f.binds, std::vector<std::string>{"acct"});
  EXPECT_FALSE(f.after);
  EXPECT_FALSE(f.is_read);
}

TEST(MessageFilter, EveryFilterAddsItsConditionInBindOrder) {
  auto f = messageFilter(request({{"created_after", "2026-11-22T10:40:38.5+01:00"},
                                  {"direction", "incoming"},
                                  {"is_read", "false"},
                                  {"thread_id", kUuid},
                                  {"from_email", " a@b.example "},
                                  {"inbox", kUuid},
                                  {"authenticated", "true"},
                                  {"quarantined", "true"}}));
  EXPECT_EQ(f.where,
            "WHERE account_id = ? AND quarantined = 1 AND created_us > ? AND direction = ? AND "
            "thread_id = ? AND from_email = ? AND inbox_id = ? AND auth_verdict = 'pass' AND "
            "is_read = ?");
  // binds[0], then after, then binds[1...], then is_read: the order of the placeholders.
  EXPECT_EQ(f.binds,
            (std::vector<std::string>{"acct", "incoming", kLowerUuid, "a@b.example", kLowerUuid}));
  ASSERT_TRUE(f.after);
  EXPECT_EQ(*f.after, *sdk::parseIsoMicros("2026-11-22T09:40:38.5Z"));
  EXPECT_EQ(f.is_read, 0);
}

TEST(MessageFilter, QuarantinedMailOnlyOrIncludedAndTheRestOfTheVerdicts) {
  auto f = messageFilter(request({{"quarantined", "include"}, {"authenticated", "false"}}));
  EXPECT_EQ(f.where, "WHERE account_id = ? AND auth_verdict <> 'pass'");
  f = messageFilter(request({{"quarantined", "false"}}, "id-1"));
  EXPECT_EQ(f.where, "WHERE identity_uuid = ? AND quarantined = 0");
  auto bad = refused(messageListQuery(), {{"quarantined", "maybe"}, {"authenticated", "yes"}});
  EXPECT_EQ(bad.size(), 2u);
}

TEST(MessageFilter, TheRouteRefusesParametersItCannotReadAllAtOnce) {
  auto bad = refused(messageListQuery(), {{"created_after", "yesterday"},
                                          {"direction", "sideways"},
                                          {"is_read", "maybe"},
                                          {"thread_id", "x"},
                                          {"inbox", ""}});
  EXPECT_EQ(bad.size(), 5u);
  EXPECT_NE(bad["created_after"].find("date and time"), std::string::npos);
  EXPECT_EQ(bad["direction"], "must be one of: incoming, outgoing");
  EXPECT_EQ(bad["is_read"], "must be true or false");
  EXPECT_EQ(bad["thread_id"], "must be a UUID");
  EXPECT_EQ(bad["inbox"], "must not be empty");
  EXPECT_TRUE(refused(messageListQuery(), {{"is_read", "1"},
                                           {"created_after", "2026-11-22T10:40:38.5+01:00"},
                                           {"from_email", "a@b.example"}})
                  .empty());
}

}  // namespace
}  // namespace svc::plugins::email
