// The sms plugin over real HTTP on the loopback provider: provisioning (on create, in the
// identity's transaction, and by the action; 409, 503, concurrency), SMS between identities,
// conversations and read state, bad input, sending limits, the operator's inject, and events.
#include "harness.h"

#include <Poco/JSON/Array.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <iostream>
#include <map>
#include <set>
#include <thread>

namespace svc::testing {
namespace {

class Sms : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }

  void start(std::vector<std::string> args, std::vector<std::string> plugins = {},
             const std::string& db_url = "") {
    Svcd::Options o;
    o.db_url = db_url;
    o.plugins = plugins.empty() ? std::vector<std::string>{"auth", "identities", "sms"} : plugins;
    o.args = {"--set",
              "sms.loopback.numbers=US:+12025550100-+12025550199,GB:+447700900000-"
              "+447700900001",
              "--set", "sms.phones.per_account=50"};
    o.args.insert(o.args.end(), args.begin(), args.end());
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    if (key_.empty()) {
      key_ =
          operatorLogin(*svcd_, "owner@example.com")->optValue<std::string>("management_key", "");
    }
  }

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& key = "") {
    return http(svcd_->port(), method, path, body, bearer(key.empty() ? key_ : key));
  }

  struct Ident {
    std::string uuid, phone_id, number;
  };
  Ident identity(const std::string& name, bool phone = true) {
    auto r =
        call("POST", "/api/identities/",
             "{\"name\":\"" + name + "\",\"provision_phone\":" + (phone ? "true" : "false") + "}");
    EXPECT_EQ(r.status, 201) << r.body;
    auto j = r.json();
    Ident out{j->getValue<std::string>("uuid"), "", ""};
    if (auto p = j->getObject("phone")) {
      out.phone_id = p->getValue<std::string>("id");
      out.number = p->getValue<std::string>("number");
    }
    return out;
  }

  HttpReply sendSms(const Ident& from, const std::string& to, const std::string& body) {
    Poco::JSON::Object o;
    o.set("to_number", to);
    o.set("body", body);
    std::ostringstream text;
    o.stringify(text);
    return call("POST", "/api/messages/send/?identity=" + from.uuid, text.str());
  }

  long messageCount(const std::string& query = "") {
    auto r = call("GET", "/api/messages/?" + query);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getValue<long>("count");
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_;
};

TEST_F(Sms, ProvisioningOnCreateByActionAnd409) {
  Ident a = identity("A");
  EXPECT_EQ(a.number, "+12025550100");
  auto phone = call("GET", "/api/phone/" + a.phone_id + "/");
  ASSERT_EQ(phone.status, 200) << phone.body;
  EXPECT_EQ(phone.json()->getValue<std::string>("identity"), a.uuid);
  EXPECT_EQ(phone.json()->getValue<std::string>("country_code"), "US");
  EXPECT_EQ(call("GET", "/api/identities/" + a.uuid + "/")
                .json()
                ->getObject("phone")
                ->getValue<std::string>("number"),
            a.number);

  auto again = call("POST", "/api/identities/" + a.uuid + "/provision-phone/", "{}");
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(again.code(), "phone_exists");

  Ident b = identity("B", false);
  EXPECT_TRUE(call("GET", "/api/identities/" + b.uuid + "/").json()->isNull("phone"));
  // provision-phone's own body: a field it does not take is refused, named, and nothing is
  // provisioned (B still gets GB's first number below).
  auto unknown = call("POST", "/api/identities/" + b.uuid + "/provision-phone/",
                      R"({"country_code":"GB","area_code":"20"})");
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  EXPECT_EQ(unknown.code(), "invalid");
  EXPECT_TRUE(unknown.json()->getObject("errors")->has("area_code")) << unknown.body;
  auto gb =
      call("POST", "/api/identities/" + b.uuid + "/provision-phone/", R"({"country_code":"gb"})");
  ASSERT_EQ(gb.status, 200) << gb.body;
  EXPECT_EQ(gb.json()->getValue<std::string>("uuid"), b.uuid);
  EXPECT_EQ(gb.json()->getObject("phone")->getValue<std::string>("country_code"), "GB");
  EXPECT_EQ(gb.json()->getObject("phone")->getValue<std::string>("number"), "+447700900000");

  auto list = call("GET", "/api/phone/");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.json()->getValue<int>("count"), 2);
  EXPECT_EQ(call("GET", "/api/phone/?identity=" + a.uuid).json()->getValue<int>("count"), 1);
  EXPECT_EQ(call("GET", "/api/phone/0b5d1e8e-8f0c-4a8e-9d53-0d7e0e4f3a11/").status, 404);
}

TEST_F(Sms, ACountryWithoutNumbersIs400ARunOutOneIs503AndNeitherCreatesAnything) {
  // FR has no numbers on this server and never will: retrying cannot help, so no 503. The refusal
  // names country_code and the countries that have numbers.
  Ident c = identity("C", false);
  auto fr =
      call("POST", "/api/identities/" + c.uuid + "/provision-phone/", R"({"country_code":"FR"})");
  EXPECT_EQ(fr.status, 400) << fr.body;
  EXPECT_EQ(fr.code(), "invalid");
  ASSERT_TRUE(fr.json()->getObject("errors")->has("country_code")) << fr.body;
  EXPECT_NE(fr.body.find("no phone numbers in FR; it has numbers in GB, US"), std::string::npos)
      << fr.body;
  EXPECT_TRUE(fr.header("retry-after").empty());
  EXPECT_TRUE(call("GET", "/api/identities/" + c.uuid + "/").json()->isNull("phone"));
  const int identities = call("GET", "/api/identities/").json()->getValue<int>("count");
  auto fr_create = call("POST", "/api/identities/",
                        R"({"name":"F","provision_phone":true,"country_code":"FR"})");
  EXPECT_EQ(fr_create.status, 400) << fr_create.body;
  EXPECT_EQ(call("GET", "/api/identities/").json()->getValue<int>("count"), identities);

  for (const char* bad :
       {R"({"country_code":"USA"})", R"({"country_code":7})", R"({"country_code":"1x"})"}) {
    auto r = call("POST", "/api/identities/" + c.uuid + "/provision-phone/", bad);
    EXPECT_EQ(r.status, 400) << bad << " " << r.body;
  }
  // GB has two numbers: the third identity asking for one is refused whole.
  identity("G1", false);
  for (const char* name : {"G2", "G3"}) {
    auto r = call("POST", "/api/identities/",
                  std::string("{\"name\":\"") + name +
                      "\",\"provision_phone\":true,\"country_code\":\"GB\"}");
    EXPECT_EQ(r.status, 201) << r.body;
  }
  const int before = call("GET", "/api/identities/").json()->getValue<int>("count");
  auto none = call("POST", "/api/identities/",
                   R"({"name":"G4","provision_phone":true,"country_code":"GB"})");
  EXPECT_EQ(none.status, 503) << none.body;
  EXPECT_EQ(none.code(), "service_unavailable");
  EXPECT_FALSE(none.header("retry-after").empty());
  EXPECT_EQ(call("GET", "/api/identities/").json()->getValue<int>("count"), before);
  auto bad = call("POST", "/api/identities/", R"({"name":"x","provision_phone":"yes"})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(call("GET", "/api/identities/").json()->getValue<int>("count"), before);
}

TEST_F(Sms, AnAccountHoldsAtMostItsShareOfNumbers) {
  svcd_.reset();
  key_.clear();
  start({"--set", "sms.phones.per_account=2"});
  identity("A");
  identity("B");
  auto third = call("POST", "/api/identities/", R"({"name":"C","provision_phone":true})");
  EXPECT_EQ(third.status, 409) << third.body;
  EXPECT_EQ(third.code(), "conflict");
  EXPECT_EQ(call("GET", "/api/identities/").json()->getValue<int>("count"), 2);
  // Another account still gets one.
  const std::string other =
      operatorLogin(*svcd_, "other@example.com")->optValue<std::string>("management_key", "");
  EXPECT_EQ(
      call("POST", "/api/identities/", R"({"name":"D","provision_phone":true})", other).status,
      201);
}

TEST_F(Sms, ConcurrentProvisioningsNeverShareANumber) {
  std::vector<std::string> numbers(12);
  std::vector<std::thread> threads;
  for (int i = 0; i < 12; ++i) {
    threads.emplace_back([&, i] {
      auto r = call("POST", "/api/identities/",
                    "{\"name\":\"c" + std::to_string(i) + "\",\"provision_phone\":true}");
      if (r.status == 201) {
        numbers[i] = r.json()->getObject("phone")->getValue<std::string>("number");
      } else {
        ADD_FAILURE() << r.status << " " << r.body;
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> distinct(numbers.begin(), numbers.end());
  EXPECT_EQ(distinct.size(), 12u);
  EXPECT_EQ(distinct.count(""), 0u);

  // One identity, many provision-phone at once: exactly one number.
  Ident d = identity("D", false);
  std::vector<int> statuses(6);
  threads.clear();
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      statuses[i] = call("POST", "/api/identities/" + d.uuid + "/provision-phone/", "{}").status;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 200), 1);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 409), 5);
  EXPECT_EQ(call("GET", "/api/phone/?identity=" + d.uuid).json()->getValue<int>("count"), 1);
}

TEST_F(Sms, LoopbackDeliversBetweenIdentitiesWithConversationsAndReadState) {
  Ident a = identity("A"), b = identity("B");
  auto sent = sendSms(a, b.number, "Your code is 482913");
  ASSERT_EQ(sent.status, 201) << sent.body;
  auto m = sent.json();
  EXPECT_EQ(m->getValue<std::string>("status"), "delivered");
  EXPECT_EQ(m->getValue<std::string>("direction"), "outgoing");
  EXPECT_EQ(m->getValue<std::string>("from_number"), a.number);
  EXPECT_EQ(m->getValue<std::string>("to_number"), b.number);
  EXPECT_EQ(m->getValue<std::string>("encoding"), "GSM-7");
  EXPECT_EQ(m->getValue<int>("segments"), 1);
  EXPECT_EQ(m->getValue<std::string>("conversation_id"), a.phone_id + "_" + b.number);

  auto incoming = call("GET", "/api/messages/?direction=incoming&identity=" + b.uuid);
  ASSERT_EQ(incoming.status, 200) << incoming.body;
  auto results = incoming.json()->getArray("results");
  ASSERT_EQ(results->size(), 1u);
  auto in = results->getObject(0);
  EXPECT_EQ(in->getValue<std::string>("body"), "Your code is 482913");
  EXPECT_EQ(in->getValue<std::string>("status"), "received");
  EXPECT_EQ(in->getValue<std::string>("extracted_code"), "482913");
  EXPECT_EQ(m->getValue<std::string>("extracted_code"), "482913");
  EXPECT_FALSE(in->getValue<bool>("is_read"));
  const std::string conversation = b.phone_id + "_" + a.number;
  EXPECT_EQ(in->getValue<std::string>("conversation_id"), conversation);

  auto inbox = call("GET", "/api/sms-inbox/?identity=" + b.uuid + "&has_unread=true");
  ASSERT_EQ(inbox.status, 200);
  auto conv = inbox.json()->getArray("results");
  ASSERT_EQ(conv->size(), 1u);
  EXPECT_EQ(conv->getObject(0)->getValue<std::string>("phone_number"), a.number);
  EXPECT_EQ(conv->getObject(0)->getValue<int>("unread_count"), 1);

  // A reply, then the conversation in order, then read.
  ASSERT_EQ(sendSms(b, a.number, "Thanks! 👍").status, 201);
  auto whole = call("GET", "/api/sms-inbox/" + conversation + "/");
  ASSERT_EQ(whole.status, 200) << whole.body;
  auto msgs = whole.json()->getArray("messages");
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ(msgs->getObject(0)->getValue<std::string>("direction"), "incoming");
  EXPECT_EQ(msgs->getObject(1)->getValue<std::string>("encoding"), "UCS-2");
  auto id = in->getValue<std::string>("id");
  EXPECT_EQ(call("PUT", "/api/messages/" + id + "/", "{}").status, 400);
  auto read = call("PATCH", "/api/messages/" + id + "/", R"({"is_read":true})");
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_TRUE(read.json()->getValue<bool>("is_read"));
  EXPECT_EQ(call("GET", "/api/sms-inbox/?identity=" + b.uuid + "&has_unread=true")
                .json()
                ->getValue<int>("count"),
            0);

  // Newest first, and created_after is strict.
  auto all = call("GET", "/api/messages/?identity=" + a.uuid).json()->getArray("results");
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->getObject(0)->getValue<std::string>("direction"), "incoming");
  const std::string first_dt = all->getObject(1)->getValue<std::string>("created_dt");
  EXPECT_EQ(call("GET", "/api/messages/?identity=" + a.uuid + "&created_after=" + first_dt)
                .json()
                ->getValue<int>("count"),
            1);
  // With a cursor, oldest first: moving it to the last one seen skips nothing.
  auto walked = call("GET", "/api/messages/?identity=" + a.uuid +
                                "&created_after=2000-01-01T00:00:00Z&limit=1")
                    .json()
                    ->getArray("results");
  ASSERT_EQ(walked->size(), 1u);
  EXPECT_EQ(walked->getObject(0)->getValue<std::string>("direction"), "outgoing");

  // A preview is cut between characters, never inside one.
  ASSERT_EQ(sendSms(a, b.number, std::string(199, 'a') + "\xc3\xa9 and more").status, 201);
  auto cut = call("GET", "/api/sms-inbox/?identity=" + b.uuid);
  EXPECT_NE(cut.body.find("\"preview\":\"" + std::string(199, 'a') + "\""), std::string::npos)
      << cut.body;

  // To a number of no identity here: recorded, undelivered, saying why.
  auto away = sendSms(a, "+14155550000", "hello");
  ASSERT_EQ(away.status, 201);
  EXPECT_EQ(away.json()->getValue<std::string>("status"), "undelivered");
  EXPECT_EQ(away.json()->getValue<std::string>("error_code"), "loopback_unreachable");

  // Conversation ids: malformed is 400, absent is 404.
  EXPECT_EQ(call("GET", "/api/sms-inbox/nonsense/").code(), "invalid_conversation_id");
  EXPECT_EQ(call("GET", "/api/sms-inbox/" + b.phone_id + "_+19998887777/").status, 404);

  // Events: received and sent, without bodies.
  const std::string stream = eventStream(
      svcd_->port(), key_, "last_event_id=0&types=sms.received,sms.sent,phone.provisioned",
      {"event: sms.received", "event: sms.sent", "event: phone.provisioned"});
  EXPECT_NE(stream.find("event: sms.received"), std::string::npos) << stream;
  EXPECT_NE(stream.find("event: sms.sent"), std::string::npos) << stream;
  EXPECT_NE(stream.find("event: phone.provisioned"), std::string::npos) << stream;
  EXPECT_EQ(stream.find("Thanks!"), std::string::npos) << "no body in events\n" << stream;
}

TEST_F(Sms, BadInputIsRefusedAndStoresNothing) {
  Ident a = identity("A");
  Ident nophone = identity("N", false);
  const std::string long_body(1601, 'x');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"to_number":"12025550101","body":"x"})", "to_number"},
      {R"({"to_number":"+1202","body":"x"})", "to_number"},
      {R"({"to_number":"+1202555010a","body":"x"})", "to_number"},
      {R"({"to_number":12025550101,"body":"x"})", "to_number"},
      {R"({"body":"x"})", "to_number"},
      {R"({"to_number":"+12025550101","body":""})", "body"},
      {R"({"to_number":"+12025550101"})", "body"},
      {R"({"to_number":"+12025550101","body":5})", "body"},
      {"{\"to_number\":\"+12025550101\",\"body\":\"" + long_body + "\"}", "body"},
  };
  for (const auto& [body, field] : cases) {
    auto r = call("POST", "/api/messages/send/?identity=" + a.uuid, body);
    EXPECT_EQ(r.status, 400) << body << " " << r.body;
    EXPECT_TRUE(r.json()->has("errors") && r.json()->getObject("errors")->has(field))
        << body << " " << r.body;
  }
  EXPECT_EQ(sendSms(a, "+12025550101", std::string(1600, 'y')).status, 201);  // the limit is fine
  EXPECT_EQ(messageCount(), 1);
  auto no_identity =
      call("POST", "/api/messages/send/", R"({"to_number":"+12025550101","body":"x"})");
  EXPECT_EQ(no_identity.status, 400);
  EXPECT_EQ(no_identity.code(), "identity_required");
  auto no_phone = sendSms(nophone, "+12025550101", "x");
  EXPECT_EQ(no_phone.status, 404);
  EXPECT_EQ(no_phone.code(), "no_phone");
  for (const char* q :
       {"direction=sideways", "is_read=maybe", "created_after=yesterday", "phone=123"}) {
    EXPECT_EQ(call("GET", std::string("/api/messages/?") + q).status, 400) << q;
  }
  EXPECT_EQ(call("PATCH", "/api/messages/not-a-uuid/", R"({"is_read":true})").status, 404);
  const std::string sent_id = call("GET", "/api/messages/")
                                  .json()
                                  ->getArray("results")
                                  ->getObject(0)
                                  ->getValue<std::string>("id");
  for (const char* bad : {R"({"is_read":"yes"})", R"({"is_read":1})", "[true]", "{bad json"}) {
    auto r = call("PATCH", "/api/messages/" + sent_id + "/", bad);
    EXPECT_EQ(r.status, 400) << bad << " " << r.body;
  }
  EXPECT_EQ(call("GET", "/api/sms-inbox/?has_unread=maybe").status, 400);
  EXPECT_EQ(call("GET", "/api/sms-inbox/?phone=nope").status, 400);
  EXPECT_EQ(messageCount(), 1);
}

// The routes' declarations, checked by the kernel before a handler runs: unknown fields and
// parameters are refused naming them, every problem comes in one answer, an enum's error lists
// what it allows; a conversation id of the wrong form keeps the contract's own code.
TEST_F(Sms, DeclaredShapesRefuseUnknownFieldsAndParametersAllAtOnce) {
  Ident a = identity("A");
  auto refusal = [](const HttpReply& r) {
    std::map<std::string, std::string> out;
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.code(), "invalid") << r.body;
    if (r.status != 400) return out;
    auto errors = r.json()->getObject("errors");
    for (const auto& name : errors ? errors->getNames() : std::vector<std::string>{}) {
      out[name] = errors->getArray(name)->getElement<std::string>(0);
    }
    return out;
  };
  const std::string send = "/api/messages/send/?identity=" + a.uuid;
  auto extra =
      refusal(call("POST", send, R"({"to_number":"+12025550101","body":"x","media_url":"x"})"));
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_NE(extra["media_url"].find("unknown field; this object takes: to_number, body"),
            std::string::npos)
      << extra["media_url"];
  auto many = refusal(call("POST", send, R"({"to_number":"12025550101","body":"","from":"x"})"));
  EXPECT_EQ(many.size(), 3u);
  EXPECT_NE(many["to_number"].find("E.164"), std::string::npos) << many["to_number"];
  EXPECT_EQ(many["body"], "must not be empty");
  EXPECT_NE(many["from"].find("unknown field"), std::string::npos);
  EXPECT_EQ(refusal(call("POST", send,
                         "{\"to_number\":\"+12025550101\",\"body\":\"a\\u0000b\"}"))["body"],
            "must not contain NUL characters");
  EXPECT_EQ(messageCount(), 0);

  auto query = refusal(call("GET", "/api/messages/?wait=true&direction=sideways&phone=1"));
  EXPECT_EQ(query.size(), 3u);
  EXPECT_NE(query["wait"].find("unknown parameter"), std::string::npos) << query["wait"];
  EXPECT_EQ(query["direction"], "must be one of: incoming, outgoing");
  EXPECT_EQ(query["phone"], "must be a UUID");
  EXPECT_EQ(refusal(call("GET", "/api/sms-inbox/?q=x")).count("q"), 1u);
  EXPECT_EQ(refusal(call("GET", "/api/phone/?number=x")).count("number"), 1u);

  ASSERT_EQ(sendSms(a, "+12025550101", "hello").status, 201);
  const std::string id = call("GET", "/api/messages/?identity=" + a.uuid)
                             .json()
                             ->getArray("results")
                             ->getObject(0)
                             ->getValue<std::string>("id");
  auto patch =
      refusal(call("PATCH", "/api/messages/" + id + "/", R"({"is_read":true,"body":"x"})"));
  EXPECT_NE(patch["body"].find("this object takes: is_read"), std::string::npos) << patch["body"];
  EXPECT_EQ(refusal(call("PUT", "/api/messages/" + id + "/", "{}"))["is_read"],
            "this field is required");
  auto bad_id = call("GET", "/api/sms-inbox/not-a-conversation/");
  EXPECT_EQ(bad_id.status, 400);
  EXPECT_EQ(bad_id.code(), "invalid_conversation_id");
}

TEST_F(Sms, SendingIsLimitedPerIdentity) {
  svcd_.reset();
  key_.clear();  // a new database: a new account
  start({"--set", "sms.send.per_hour=2"});
  Ident a = identity("A"), b = identity("B");
  EXPECT_EQ(sendSms(a, b.number, "1").status, 201);
  EXPECT_EQ(sendSms(a, b.number, "2").status, 201);
  auto third = sendSms(a, b.number, "3");
  EXPECT_EQ(third.status, 429) << third.body;
  EXPECT_EQ(third.code(), "throttled");
  EXPECT_FALSE(third.header("retry-after").empty());
  EXPECT_EQ(sendSms(b, a.number, "b may").status, 201);  // per identity

  // Many at once cannot all slip under it: C may send two, of twelve racing.
  Ident c = identity("C");
  std::vector<int> statuses(12);
  std::vector<std::thread> threads;
  for (int i = 0; i < 12; ++i) {
    threads.emplace_back([&, i] { statuses[i] = sendSms(c, a.number, "race").status; });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 201), 2);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 429), 10);
}

TEST_F(Sms, OperatorInjectsInboundMessages) {
  Ident a = identity("A");
  auto inject = [&](const std::string& body) {
    return http(svcd_->adminPort(), "POST", "/admin/sms/inject/", body,
                bearer(svcd_->adminToken()));
  };
  auto r = inject(
      "{\"to\":\"" + a.number +
      "\",\"from\":\"+15005550006\",\"body\":\"G-123456 is your Google verification code.\"}");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()->getValue<std::string>("identity"), a.uuid);
  EXPECT_EQ(r.json()->getValue<std::string>("extracted_code"), "123456");
  EXPECT_EQ(messageCount("direction=incoming"), 1);
  EXPECT_EQ(inject(R"({"to":"+19998887777","from":"+15005550006","body":"x"})").status, 404);
  EXPECT_EQ(inject(R"({"to":"nope","from":"+15005550006","body":"x"})").status, 400);
  // Not on the public listener.
  EXPECT_EQ(call("POST", "/admin/sms/inject/", "{}").status, 404);

  // svcctl sms inject does the same.
  auto [code, out] = runCommand(
      binDir() + "/svcctl --admin http://127.0.0.1:" + std::to_string(svcd_->adminPort()) +
      " --admin-token " + svcd_->adminToken() + " sms inject --to " + a.number +
      " --from +15005550006 'Your code: 777111' 2>&1");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(messageCount("direction=incoming"), 2);
}

TEST_F(Sms, AMessageNeverHandedToTheCarrierIsFailedAtTheNextStart) {
  Ident a = identity("A"), b = identity("B");
  auto sent = sendSms(a, b.number, "lost in a crash");
  ASSERT_EQ(sent.status, 201);
  const std::string id = sent.json()->getValue<std::string>("id");
  // As a crash between storing it and calling the carrier leaves it: queued, no carrier id, and
  // (older than any carrier call) an hour old. A fresh one is another svcd's, mid-call: kept.
  const std::string db = svcd_->dbUrl(), data = svcd_->dataDir();
  ASSERT_EQ(svcd_->terminate(), 0);
  auto before = std::move(svcd_);
  const std::string ref = "'local:" + id + "'";
  runSql(db, {"UPDATE sms_messages SET status = 'queued', carrier_ref = " + ref +
              ", created_us = created_us - 3600000000 WHERE id = '" + id + "'"});
  if (HasFatalFailure()) return;
  start({"--set", "data.dir=" + data}, {}, db);
  auto m = call("GET", "/api/messages/" + id + "/");
  ASSERT_EQ(m.status, 200) << m.body;
  EXPECT_EQ(m.json()->getValue<std::string>("status"), "failed");
  EXPECT_EQ(m.json()->getValue<std::string>("error_code"), "not_handed_over");
  EXPECT_NE(svcd_->waitForLog("by a stop").find("1 SMS"), std::string::npos);
}

// A server with the email and sms plugins installed but not enabled: their paths (PluginInfo::
// paths) answer 404 feature_not_enabled naming the plugin, not the not_found of a typo.
TEST(MailAndSmsPaths, AnInstalledPluginNotEnabledIsNamedOnItsPaths) {
  Svcd::Options o;
  o.plugins = {"auth", "identities", "email", "sms"};
  o.args = {"--set", "plugins.enabled=auth,identities"};
  Svcd svcd(o);
  ASSERT_TRUE(svcd.start()) << svcd.log();
  const std::string key =
      operatorLogin(svcd, "owner@example.com")->optValue<std::string>("management_key", "");
  const std::vector<std::pair<std::string, std::string>> paths = {
      {"/api/email-messages/", "email"},
      {"/api/email/check-availability/", "email"},
      {"/api/domains/", "email"},
      {"/api/email-attachments/x/download/", "email"},
      {"/api/messages/", "sms"},
      {"/api/sms-inbox/", "sms"},
      {"/api/phone", "sms"},
      {"/api/sms/webhooks/twilio/sms/", "sms"}};
  for (const auto& [path, plugin] : paths) {
    auto r = http(svcd.port(), "GET", path, "", bearer(key));
    EXPECT_EQ(r.status, 404) << path << " " << r.body;
    EXPECT_EQ(r.code(), "feature_not_enabled") << path << " " << r.body;
    EXPECT_NE(r.body.find("'" + plugin + "'"), std::string::npos) << path << " " << r.body;
  }
  EXPECT_EQ(http(svcd.port(), "GET", "/api/emails/", "", bearer(key)).code(), "not_found");
}

}  // namespace
}  // namespace svc::testing

namespace svc::testing {
namespace {

// GET /api/messages/wait/: the code of an SMS a carrier delivers, in one call.
TEST_F(Sms, AWaitHeldBeforeAnSmsArrivesAnswersWithItsCodeAndTimesOutWith204) {
  Ident a = identity("Waiter");
  Ident b = identity("Bystander");
  auto inject = [&](const std::string& to, const std::string& from, const std::string& body) {
    return http(svcd_->adminPort(), "POST", "/admin/sms/inject/",
                R"({"to":")" + to + R"(","from":")" + from + R"(","body":")" + body + R"("})",
                bearer(svcd_->adminToken()));
  };
  auto waiting = std::async(std::launch::async, [&] {
    return call("GET", "/api/messages/wait/?timeout=20&from=555-0006&identity=" + a.uuid);
  });
  // Held before the messages come (else it would find the last one already there).
  ASSERT_TRUE(waitForSample(*svcd_, "svc_held_responses_open", 1));
  // Neither another identity's message nor another sender's answers it.
  ASSERT_EQ(inject(b.number, "+15005550006", "Code 111111").status, 201);
  ASSERT_EQ(inject(a.number, "+15005550007", "Code 222222").status, 201);
  ASSERT_EQ(inject(a.number, "+15005550006", "Your code is 731 904").status, 201);
  const HttpReply r = waiting.get();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()->getValue<std::string>("extracted_code"), "731904");
  // Already there (created_after in the past): at once; the body filter picks among them.
  auto there = call("GET",
                    "/api/messages/wait/?created_after=2000-01-01T00:00:00Z&body=222&"
                    "identity=" +
                        a.uuid);
  ASSERT_EQ(there.status, 200) << there.body;
  EXPECT_EQ(there.json()->getValue<std::string>("extracted_code"), "222222");
  EXPECT_EQ(call("GET", "/api/messages/wait/?timeout=1&identity=" + a.uuid).status, 204);
  // `from` is the number or its tail, never a part that matches everything.
  const std::string past = "/api/messages/wait/?created_after=2000-01-01T00:00:00Z&timeout=1&";
  EXPECT_EQ(call("GET", past + "from=%2B1%20500%20555%200007&identity=" + a.uuid)
                .json()
                ->getValue<std::string>("extracted_code"),
            "222222");
  EXPECT_EQ(call("GET", past + "from=0007&identity=" + a.uuid)
                .json()
                ->getValue<std::string>("extracted_code"),
            "222222");
  EXPECT_EQ(call("GET", past + "from=1500&identity=" + a.uuid).status, 204);
  auto bad = call("GET", "/api/messages/wait/?timeout=0&from=abc&identity=" + a.uuid);
  ASSERT_EQ(bad.status, 400) << bad.body;
  EXPECT_TRUE(bad.json()->getObject("errors")->has("timeout"));
  EXPECT_TRUE(bad.json()->getObject("errors")->has("from"));
  for (const char* from : {"%2B()-", "55", "%20"}) {
    auto refused =
        call("GET", std::string("/api/messages/wait/?from=") + from + "&identity=" + a.uuid);
    ASSERT_EQ(refused.status, 400) << from << refused.body;
    EXPECT_TRUE(refused.json()->getObject("errors")->has("from")) << from;
  }
  auto separated = call("GET", "/api/messages/wait/?timeout=0,120&identity=" + a.uuid);
  ASSERT_EQ(separated.status, 400) << separated.body;
  EXPECT_TRUE(separated.json()->getObject("errors")->has("timeout"));
}

}  // namespace
}  // namespace svc::testing
