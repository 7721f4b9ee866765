// The sms plugin's twilio and pool providers end to end over real sockets: svcd talks to the
// Twilio stand-in (tests/twilio/server.mjs, a child process) for numbers and messages, and the
// stand-in calls svcd's webhooks as Twilio would, signed by the official `twilio` package.
// Provisioning (and its 503s), sending with status callbacks, carrier failure and timeout,
// inbound SMS with their signature and replay checks, the voice hand-off, and the pool.
#include "harness.h"

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/StreamSocket.h>

#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <numeric>
#include <set>
#include <thread>

namespace svc::testing {
namespace {

constexpr const char* kAccountSid = "AC00000000000000000000000000000001";
constexpr const char* kAuthToken = "test-auth-token";
constexpr const char* kSmsWebhook = "/api/sms/webhooks/twilio/sms/";
constexpr const char* kStatusWebhook = "/api/sms/webhooks/twilio/status/";
constexpr const char* kVoiceWebhook = "/api/sms/webhooks/twilio/voice/";

std::string jsonText(const Poco::JSON::Object& o) {
  std::ostringstream out;
  o.stringify(out);
  return out.str();
}

Poco::JSON::Array::Ptr parseArray(const std::string& text) {
  try {
    return Poco::JSON::Parser().parse(text).extract<Poco::JSON::Array::Ptr>();
  } catch (...) {
    ADD_FAILURE() << "not a JSON array: " << text;
    return new Poco::JSON::Array;
  }
}

// The Twilio stand-in as a child process: started at construction (its port is the first line
// it prints), stopped at destruction.
class TwilioStandIn {
 public:
  TwilioStandIn() {
    int out[2];
    if (::pipe(out) != 0) {
      ADD_FAILURE() << "pipe failed";
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlives the tests
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      ::execlp("node", "node", SVC_TEST_TWILIO_SERVER, "--account-sid", kAccountSid, "--auth-token",
               kAuthToken, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    stdout_ = out[0];
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char c;
      if (::read(stdout_, &c, 1) != 1) break;  // it exited
      line += c;
    }
    try {
      port_ = std::stoi(line);
    } catch (...) {
      ADD_FAILURE() << "the Twilio stand-in (" SVC_TEST_TWILIO_SERVER
                       ") did not start: is node installed and tests/twilio/node_modules there "
                       "(tools/deps.sh)? It printed: '"
                    << line << "'";
    }
  }
  ~TwilioStandIn() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 300 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (i == 299) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
        }
      }
    }
    if (stdout_ >= 0) ::close(stdout_);
  }
  TwilioStandIn(const TwilioStandIn&) = delete;
  TwilioStandIn& operator=(const TwilioStandIn&) = delete;

  int port() const { return port_; }
  std::string apiBase() const { return "http://127.0.0.1:" + std::to_string(port_); }

  /// POSTs a JSON body to a test endpoint (`inbound`).
  HttpReply post(const std::string& endpoint,
                 const Poco::JSON::Object& body = Poco::JSON::Object()) {
    return http(port_, "POST", "/_test/" + endpoint, jsonText(body),
                {{"Content-Type", "application/json"}});
  }
  /// @return the REST requests svcd made, in order.
  Poco::JSON::Array::Ptr requests() {
    return parseArray(http(port_, "GET", "/_test/requests").body);
  }
  /// @return the REST requests svcd made whose path ends with `resource`.
  std::vector<Poco::JSON::Object::Ptr> requestsTo(const std::string& resource) {
    std::vector<Poco::JSON::Object::Ptr> out;
    auto all = requests();
    for (std::size_t i = 0; i < all->size(); ++i) {
      auto r = all->getObject(static_cast<unsigned>(i));
      const auto path = r->getValue<std::string>("path");
      if (path.size() >= resource.size() &&
          path.compare(path.size() - resource.size(), resource.size(), resource) == 0) {
        out.push_back(r);
      }
    }
    return out;
  }
  Poco::JSON::Object::Ptr state() { return http(port_, "GET", "/_test/state").json(); }

 private:
  pid_t pid_ = -1;
  int stdout_ = -1;
  int port_ = 0;
};

// One Twilio stand-in for the whole program, reset before each test.
TwilioStandIn& standIn() {
  static TwilioStandIn server;
  return server;
}

class SmsTwilio : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(standIn().port(), 0);
    ASSERT_EQ(twilio().post("reset").status, 204);
  }

  TwilioStandIn& twilio() { return standIn(); }

  // svcd with the twilio provider (or `provider`) pointed at the stand-in. Its public base URL
  // names the port it binds (server.port, written back once bound): the stand-in calls the
  // webhooks there, and their signatures cover it.
  // @param db_url another svcd's database, or empty for a new one.
  void start(std::vector<std::string> args = {}, const std::string& provider = "twilio",
             const std::string& db_url = "") {
    Svcd::Options o;
    o.db_url = db_url;
    o.plugins = plugins_;
    o.args = {"--set", "sms.provider=" + provider,
              "--set", "sms.twilio.api_base=" + twilio().apiBase(),
              "--set", std::string("sms.twilio.account_sid=") + kAccountSid,
              "--set", std::string("sms.twilio.auth_token=") + kAuthToken,
              "--set", "public.base_url=http://127.0.0.1:${server.port}",
              "--set", "identities.voice.allow_private_urls=true"};
    o.args.insert(o.args.end(), args.begin(), args.end());
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    if (db_url.empty()) {
      key_ =
          operatorLogin(*svcd_, "owner@example.com")->optValue<std::string>("management_key", "");
    }
    ASSERT_FALSE(key_.empty());
  }

  std::string base() const { return "http://127.0.0.1:" + std::to_string(svcd_->port()); }

  std::vector<std::string> plugins_ = {"auth", "identities", "sms"};

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "") {
    return http(svcd_->port(), method, path, body, bearer(key_));
  }

  struct Ident {
    std::string uuid, number;
  };
  Ident identity(const std::string& name, bool phone = true) {
    auto r =
        call("POST", "/api/identities/",
             "{\"name\":\"" + name + "\",\"provision_phone\":" + (phone ? "true" : "false") + "}");
    EXPECT_EQ(r.status, 201) << r.body;
    if (r.status != 201) return {};
    auto j = r.json();
    Ident out{j->getValue<std::string>("uuid"), ""};
    if (auto p = j->getObject("phone")) out.number = p->getValue<std::string>("number");
    return out;
  }
  int identityCount() { return call("GET", "/api/identities/").json()->getValue<int>("count"); }

  HttpReply sendSms(const Ident& from, const std::string& to, const std::string& body) {
    Poco::JSON::Object o;
    o.set("to_number", to);
    o.set("body", body);
    return call("POST", "/api/messages/send/?identity=" + from.uuid, jsonText(o));
  }
  Poco::JSON::Object::Ptr message(const std::string& id) {
    auto r = call("GET", "/api/messages/" + id + "/");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  Poco::JSON::Array::Ptr messages(const std::string& query) {
    auto r = call("GET", "/api/messages/?" + query);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getArray("results");
  }

  // The stand-in's sid for the message sent last.
  std::string lastCarrierSid() {
    auto list = twilio().state()->getArray("messages");
    if (!list || list->size() == 0) {
      ADD_FAILURE() << "the stand-in holds no message";
      return "";
    }
    return list->getObject(static_cast<unsigned>(list->size() - 1))->getValue<std::string>("sid");
  }

  // A status callback for a message, as Twilio sends it. @return svcd's answer's status.
  int statusCallback(const std::string& sid, const std::string& status,
                     const std::function<void(Poco::JSON::Object&)>& more = {}) {
    Poco::JSON::Object o;
    o.set("sid", sid);
    o.set("status", status);
    if (more) more(o);
    auto r = twilio().post("status", o);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()->getValue<int>("status");
  }

  // The stand-in's answer to a webhook it sent (`inbound`, `call`): svcd's status and body.
  Poco::JSON::Object::Ptr webhook(const std::string& endpoint, const Poco::JSON::Object& body) {
    auto r = twilio().post(endpoint, body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  Poco::JSON::Object::Ptr inbound(const std::string& to, const std::string& from,
                                  const std::string& text,
                                  std::optional<std::string> signature = std::nullopt,
                                  const std::string& url = "") {
    Poco::JSON::Object o;
    o.set("to", to);
    o.set("from", from);
    o.set("body", text);
    if (signature) o.set("signature", *signature);
    if (!url.empty()) o.set("url", url);
    return webhook("inbound", o);
  }

  // The event stream from its start, read until `needle` appears `times` (or 30 s pass).
  std::string eventsUntil(const std::string& types, const std::string& needle,
                          std::size_t times = 1) {
    Poco::Net::StreamSocket socket;
    socket.connect(Poco::Net::SocketAddress("127.0.0.1", static_cast<Poco::UInt16>(svcd_->port())));
    const std::string request = "GET /api/events/stream/?last_event_id=0&types=" + types +
                                " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key_ +
                                "\r\n\r\n";
    socket.sendBytes(request.data(), static_cast<int>(request.size()));
    socket.setReceiveTimeout(Poco::Timespan(0, 100000));
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    char buf[4096];
    while (occurrences(out, needle) < times && std::chrono::steady_clock::now() < deadline) {
      try {
        int n = socket.receiveBytes(buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
      } catch (const Poco::TimeoutException&) {
      } catch (const Poco::Net::NetException&) {
        break;
      }
    }
    return out;
  }

  static std::size_t occurrences(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_;
};

TEST_F(SmsTwilio, AnIncompleteConfigurationStopsTheStartNamingTheKey) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"sms.provider=twilio", "sms.twilio.auth_token=t"}, "sms.twilio.account_sid"},
      {{"sms.provider=twilio", "sms.twilio.account_sid=AC1"}, "sms.twilio.auth_token"},
      {{"sms.provider=twilio", "sms.twilio.account_sid=AC1", "sms.twilio.auth_token=t",
        "sms.twilio.api_base=ftp://example.com"},
       "sms.twilio.api_base"},
      {{"sms.provider=pool", "sms.twilio.account_sid=AC1", "sms.twilio.auth_token=t",
        "sms.pool.numbers=+12025550150,12345"},
       "sms.pool.numbers"},
      {{"sms.provider=carrier-pigeon"}, "sms.provider"},
  };
  for (const auto& [sets, key] : cases) {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "sms"};
    for (const auto& s : sets) o.args.insert(o.args.end(), {"--set", s});
    Svcd svcd(o);
    EXPECT_NE(svcd.startExpectingFailure(), 0) << key;
    EXPECT_NE(svcd.log().find(key), std::string::npos) << svcd.log();
  }
}

TEST_F(SmsTwilio, ProvisioningBuysANumberWithOurWebhooks) {
  start();
  Ident a = identity("A");
  EXPECT_EQ(a.number, "+12025550101");  // the first number Twilio offers

  auto searches = twilio().requestsTo("/AvailablePhoneNumbers/US/Local.json");
  ASSERT_EQ(searches.size(), 1u);
  EXPECT_EQ(searches[0]->getValue<std::string>("method"), "GET");
  auto buys = twilio().requestsTo("/IncomingPhoneNumbers.json");
  ASSERT_EQ(buys.size(), 1u);
  auto buy = buys[0];
  EXPECT_EQ(buy->getValue<std::string>("method"), "POST");
  EXPECT_EQ(buy->getValue<std::string>("path"),
            std::string("/2010-04-01/Accounts/") + kAccountSid + "/IncomingPhoneNumbers.json");
  EXPECT_TRUE(buy->getValue<bool>("auth_ok"));
  EXPECT_EQ(buy->getValue<std::string>("auth_user"), kAccountSid);
  EXPECT_EQ(buy->getValue<std::string>("content_type"), "application/x-www-form-urlencoded");
  auto form = buy->getObject("form");
  EXPECT_EQ(form->getValue<std::string>("PhoneNumber"), "+12025550101");
  EXPECT_EQ(form->getValue<std::string>("SmsUrl"), base() + kSmsWebhook);
  EXPECT_EQ(form->getValue<std::string>("SmsMethod"), "POST");
  EXPECT_EQ(form->getValue<std::string>("VoiceUrl"), base() + kVoiceWebhook);
  EXPECT_EQ(form->getValue<std::string>("VoiceMethod"), "POST");
  auto owned = twilio().state()->getArray("incoming_phone_numbers");
  ASSERT_EQ(owned->size(), 1u);
  EXPECT_EQ(owned->getObject(0)->getValue<std::string>("phone_number"), a.number);

  // The action too, in another country; the identity shows it.
  Ident b = identity("B", false);
  auto gb =
      call("POST", "/api/identities/" + b.uuid + "/provision-phone/", R"({"country_code":"GB"})");
  ASSERT_EQ(gb.status, 200) << gb.body;
  EXPECT_EQ(gb.json()->getObject("phone")->getValue<std::string>("number"), "+447700900101");
  EXPECT_EQ(twilio().requestsTo("/AvailablePhoneNumbers/GB/Local.json").size(), 1u);

  // Twilio refuses one purchase (another buyer was faster): the next number is bought.
  Poco::JSON::Object refuse;
  refuse.set("match", "IncomingPhoneNumbers");
  refuse.set("code", 21422);
  refuse.set("message", "PhoneNumber requested is not available");
  ASSERT_EQ(twilio().post("fail", refuse).status, 204);
  Ident c = identity("C");
  EXPECT_EQ(c.number, "+12025550103");
}

TEST_F(SmsTwilio, NoNumberOrACarrierErrorIs503AndCreatesNothing) {
  start();
  identity("first");  // buys +12025550101
  const int before = identityCount();

  // A country with nothing to buy.
  Poco::JSON::Object none;
  none.set("country", "US");
  none.set("numbers", Poco::JSON::Array());
  ASSERT_EQ(twilio().post("available", none).status, 204);
  auto empty = call("POST", "/api/identities/", R"({"name":"x","provision_phone":true})");
  EXPECT_EQ(empty.status, 503) << empty.body;
  EXPECT_EQ(empty.code(), "service_unavailable");
  EXPECT_FALSE(empty.header("retry-after").empty());
  EXPECT_EQ(identityCount(), before);
  ASSERT_EQ(twilio().post("reset").status, 204);

  // Twilio refuses every purchase: 503, no identity, no number bought.
  Poco::JSON::Object refuse;
  refuse.set("match", "IncomingPhoneNumbers");
  refuse.set("status", 500);
  refuse.set("code", 20500);
  refuse.set("message", "Internal Server Error");
  for (int i = 0; i < 3; ++i) ASSERT_EQ(twilio().post("fail", refuse).status, 204);
  auto refused = call("POST", "/api/identities/", R"({"name":"y","provision_phone":true})");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_FALSE(refused.header("retry-after").empty());
  EXPECT_EQ(identityCount(), before);
  EXPECT_EQ(twilio().state()->getArray("incoming_phone_numbers")->size(), 0u);
  EXPECT_EQ(twilio().requestsTo("/IncomingPhoneNumbers.json").size(), 3u);

  // Twilio fails the search: the action is 503 too and the identity keeps no phone.
  Ident d = identity("D", false);
  Poco::JSON::Object search;
  search.set("match", "AvailablePhoneNumbers");
  search.set("status", 503);
  search.set("code", 20503);
  ASSERT_EQ(twilio().post("fail", search).status, 204);
  auto action = call("POST", "/api/identities/" + d.uuid + "/provision-phone/", "{}");
  EXPECT_EQ(action.status, 503) << action.body;
  EXPECT_FALSE(action.header("retry-after").empty());
  EXPECT_TRUE(call("GET", "/api/identities/" + d.uuid + "/").json()->isNull("phone"));
  EXPECT_EQ(call("GET", "/api/phone/").json()->getValue<int>("count"), 1);
}

TEST_F(SmsTwilio, ANumberBoughtForAnIdentityNotCreatedIsGivenBack) {
  plugins_ = {"auth", "identities", "email", "sms"};
  start({"--set", "email.domains=agents.test"});
  auto first = call("POST", "/api/identities/",
                    R"({"name":"a","email_identifier":"taken","provision_phone":true})");
  ASSERT_EQ(first.status, 201) << first.body;
  // The number is bought before the identity's transaction; the address is then taken, the
  // identity is not created, and the number goes back to Twilio.
  auto second = call("POST", "/api/identities/",
                     R"({"name":"b","email_identifier":"taken","provision_phone":true})");
  EXPECT_EQ(second.status, 409) << second.body;
  EXPECT_EQ(second.code(), "email_taken");
  EXPECT_EQ(twilio().requestsTo("/IncomingPhoneNumbers.json").size(), 2u);      // two bought
  EXPECT_EQ(twilio().state()->getArray("incoming_phone_numbers")->size(), 1u);  // one kept
  EXPECT_EQ(identityCount(), 1);
}

TEST_F(SmsTwilio, ConcurrentProvisioningsBuyDistinctNumbersAndKeepOnlyWhatTheyHold) {
  start();
  // Enough numbers that no request finds the list empty while the others' purchases are
  // in flight (each may buy one before the database tells it the identity has one).
  Poco::JSON::Object available;
  available.set("country", "US");
  Poco::JSON::Array list;
  for (int i = 10; i < 22; ++i) list.add("+120255501" + std::to_string(i));
  available.set("numbers", list);
  ASSERT_EQ(twilio().post("available", available).status, 204);
  std::vector<std::string> numbers(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
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
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_EQ(distinct.count(""), 0u);

  // One identity, many provision-phone at once: one number kept, any other bought is released.
  Ident d = identity("D", false);
  std::vector<int> statuses(6);
  std::vector<std::string> answers(6);
  threads.clear();
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      auto r = call("POST", "/api/identities/" + d.uuid + "/provision-phone/", "{}");
      statuses[i] = r.status;
      answers[i] = std::to_string(r.status) + " " + r.body + "\n";
    });
  }
  for (auto& t : threads) t.join();
  const std::string all = std::accumulate(answers.begin(), answers.end(), std::string());
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 200), 1) << all;
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 409), 5) << all;
  EXPECT_EQ(call("GET", "/api/phone/").json()->getValue<int>("count"), 5);
  // What Twilio bills for is exactly what the identities hold.
  std::set<std::string> held;
  auto phones = call("GET", "/api/phone/").json()->getArray("results");
  for (std::size_t i = 0; i < phones->size(); ++i) {
    held.insert(phones->getObject(static_cast<unsigned>(i))->getValue<std::string>("number"));
  }
  std::set<std::string> owned;
  auto incoming = twilio().state()->getArray("incoming_phone_numbers");
  for (std::size_t i = 0; i < incoming->size(); ++i) {
    owned.insert(
        incoming->getObject(static_cast<unsigned>(i))->getValue<std::string>("phone_number"));
  }
  EXPECT_EQ(owned, held);
}

TEST_F(SmsTwilio, SendingGoesToMessagesAndStatusCallbacksMoveIt) {
  start();
  Ident a = identity("A");
  const std::string text = "Grüße & 100% + more=yes?";
  auto sent = sendSms(a, "+14155550123", text);
  ASSERT_EQ(sent.status, 201) << sent.body;
  auto m = sent.json();
  EXPECT_EQ(m->getValue<std::string>("status"), "queued");
  EXPECT_EQ(m->getValue<std::string>("direction"), "outgoing");
  EXPECT_EQ(m->getValue<std::string>("from_number"), a.number);
  EXPECT_EQ(m->getValue<std::string>("to_number"), "+14155550123");
  EXPECT_EQ(m->getValue<std::string>("body"), text);
  EXPECT_TRUE(m->isNull("error_code"));
  const std::string id = m->getValue<std::string>("id");

  auto posts = twilio().requestsTo("/Messages.json");
  ASSERT_EQ(posts.size(), 1u);
  auto post = posts[0];
  EXPECT_EQ(post->getValue<std::string>("method"), "POST");
  EXPECT_TRUE(post->getValue<bool>("auth_ok"));
  EXPECT_EQ(post->getValue<std::string>("auth_user"), kAccountSid);
  EXPECT_EQ(post->getValue<std::string>("content_type"), "application/x-www-form-urlencoded");
  auto form = post->getObject("form");
  EXPECT_EQ(form->getValue<std::string>("From"), a.number);
  EXPECT_EQ(form->getValue<std::string>("To"), "+14155550123");
  EXPECT_EQ(form->getValue<std::string>("Body"), text);
  // The callback names our id, for a report that overtakes Twilio's answer.
  EXPECT_EQ(form->getValue<std::string>("StatusCallback"),
            base() + kStatusWebhook + "?message=" + id);

  // Our id is ours: the carrier's sid appears nowhere in what the API shows.
  const std::string sid = lastCarrierSid();
  ASSERT_EQ(sid.rfind("SM", 0), 0u) << sid;
  EXPECT_NE(id, sid);
  EXPECT_EQ(sent.body.find(sid), std::string::npos) << sent.body;

  // sent, then delivered.
  EXPECT_EQ(statusCallback(sid, "sent"), 204);
  EXPECT_EQ(message(id)->getValue<std::string>("status"), "sent");
  EXPECT_EQ(statusCallback(sid, "delivered"), 204);
  auto delivered = message(id);
  EXPECT_EQ(delivered->getValue<std::string>("status"), "delivered");
  EXPECT_TRUE(delivered->isNull("error_code"));
  EXPECT_EQ(jsonText(*delivered).find(sid), std::string::npos);
  // The `sent` callback again, byte for byte, is a replay: refused, and nothing moves.
  EXPECT_EQ(statusCallback(sid, "sent"), 403);
  EXPECT_EQ(message(id)->getValue<std::string>("status"), "delivered");

  // A badly signed callback changes nothing.
  Ident b = identity("B");
  auto second = sendSms(b, "+14155550124", "second");
  ASSERT_EQ(second.status, 201) << second.body;
  const std::string id2 = second.json()->getValue<std::string>("id");
  const std::string sid2 = lastCarrierSid();
  EXPECT_EQ(
      statusCallback(sid2, "delivered", [](Poco::JSON::Object& o) { o.set("signature", "bogus"); }),
      403);
  EXPECT_EQ(message(id2)->getValue<std::string>("status"), "queued");

  // Undelivered, with the carrier's error recorded.
  EXPECT_EQ(statusCallback(sid2, "undelivered",
                           [](Poco::JSON::Object& o) {
                             o.set("error_code", 30003);
                             o.set("error_message", "Unreachable destination handset");
                           }),
            204);
  // Reports arriving late (out of order) never move a final status back, nor lose its error.
  EXPECT_EQ(statusCallback(sid2, "sent"), 204);
  EXPECT_EQ(statusCallback(sid2, "queued"), 204);
  auto undelivered = message(id2);
  EXPECT_EQ(undelivered->getValue<std::string>("status"), "undelivered");
  EXPECT_EQ(undelivered->getValue<std::string>("error_code"), "30003");
  EXPECT_EQ(undelivered->getValue<std::string>("error_message"), "Unreachable destination handset");

  // The stream: sms.sent for each, then an sms.updated per change (sent, delivered, undelivered).
  const std::string stream = eventsUntil("sms.sent,sms.updated", "\"undelivered\"");
  EXPECT_EQ(occurrences(stream, "event: sms.sent"), 2u) << stream;
  EXPECT_EQ(occurrences(stream, "event: sms.updated"), 3u) << stream;
  EXPECT_NE(stream.find("\"delivered\""), std::string::npos) << stream;
  EXPECT_NE(stream.find("\"error_code\":\"30003\""), std::string::npos) << stream;
  EXPECT_EQ(stream.find("Grüße"), std::string::npos) << "no body in events\n" << stream;
  EXPECT_EQ(stream.find(sid), std::string::npos) << stream;
}

TEST_F(SmsTwilio, AStatusCallbackOvertakingTwiliosAnswerIsKept) {
  start();
  Ident a = identity("A");
  Poco::JSON::Object early;
  early.set("status", "delivered");
  ASSERT_EQ(twilio().post("early_status", early).status, 204);
  auto sent = sendSms(a, "+14155550123", "quick");
  ASSERT_EQ(sent.status, 201) << sent.body;
  const std::string id = sent.json()->getValue<std::string>("id");
  auto hooks = parseArray(http(twilio().port(), "GET", "/_test/webhooks").body);
  ASSERT_EQ(hooks->size(), 1u);
  EXPECT_EQ(hooks->getObject(0)->getObject("answer")->getValue<int>("status"), 204);
  // Twilio's answer said queued, but the report it sent first is what happened.
  EXPECT_EQ(sent.json()->getValue<std::string>("status"), "delivered");
  EXPECT_EQ(message(id)->getValue<std::string>("status"), "delivered");
  // Later reports find it by the carrier's sid.
  Poco::JSON::Object late;
  late.set("status", "failed");
  late.set("error_code", 30008);
  ASSERT_EQ(twilio().post("early_status", late).status, 204);
  auto second = sendSms(a, "+14155550124", "quick again");
  ASSERT_EQ(second.status, 201) << second.body;
  EXPECT_EQ(second.json()->getValue<std::string>("status"), "failed");
  EXPECT_EQ(second.json()->getValue<std::string>("error_code"), "30008");
  EXPECT_EQ(statusCallback(lastCarrierSid(), "delivered"), 204);
  EXPECT_EQ(message(second.json()->getValue<std::string>("id"))->getValue<std::string>("status"),
            "failed");

  // Each message is announced sent once, whichever came first.
  const std::string stream = eventsUntil("sms.sent", "event: sms.sent", 2);
  EXPECT_EQ(occurrences(stream, "event: sms.sent"), 2u) << stream;
}

TEST_F(SmsTwilio, CarrierFailureLeavesTheMessageFailedWithTheReason) {
  start();
  Ident a = identity("A");
  Poco::JSON::Object fail;
  fail.set("match", "Messages");
  fail.set("code", 21610);
  fail.set("message", "Attempt to send to unsubscribed recipient");
  ASSERT_EQ(twilio().post("fail", fail).status, 204);
  auto r = sendSms(a, "+14155550123", "hello");
  ASSERT_EQ(r.status, 201) << r.body;
  auto m = r.json();
  EXPECT_EQ(m->getValue<std::string>("status"), "failed");
  EXPECT_EQ(m->getValue<std::string>("error_code"), "21610");
  EXPECT_EQ(m->getValue<std::string>("error_message"), "Attempt to send to unsubscribed recipient");
  auto listed = messages("identity=" + a.uuid);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->getObject(0)->getValue<std::string>("status"), "failed");
  EXPECT_EQ(twilio().state()->getArray("messages")->size(), 0u);

  // The failure was that one answer's: the next message goes out.
  auto next = sendSms(a, "+14155550123", "again");
  ASSERT_EQ(next.status, 201) << next.body;
  EXPECT_EQ(next.json()->getValue<std::string>("status"), "queued");
  EXPECT_EQ(messages("identity=" + a.uuid)->size(), 2u);
}

TEST_F(SmsTwilio, CarrierTimeoutLeavesTheMessageFailedNotLost) {
  // 3 s: the identity made below talks to Twilio under the same limit, on a slow machine too.
  start({"--set", "sms.twilio.timeout_seconds=3"});
  Ident a = identity("A");
  Poco::JSON::Object hang;
  hang.set("match", "Messages");
  ASSERT_EQ(twilio().post("hang", hang).status, 204);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = sendSms(a, "+14155550123", "are you there?");
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_LT(took, std::chrono::seconds(15));  // the limit, not the hang (which lasts)
  auto m = r.json();
  EXPECT_EQ(m->getValue<std::string>("status"), "failed");
  EXPECT_NE(m->getValue<std::string>("error_message").find("did not answer within 3 second"),
            std::string::npos)
      << r.body;
  auto listed = messages("identity=" + a.uuid);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->getObject(0)->getValue<std::string>("id"), m->getValue<std::string>("id"));
  EXPECT_EQ(listed->getObject(0)->getValue<std::string>("status"), "failed");
  EXPECT_EQ(listed->getObject(0)->getValue<std::string>("body"), "are you there?");

  // Provisioning while Twilio hangs: 503 in about the time limit, nothing created.
  const int before = identityCount();
  hang.set("match", "AvailablePhoneNumbers");
  ASSERT_EQ(twilio().post("hang", hang).status, 204);
  const auto t1 = std::chrono::steady_clock::now();
  auto stuck = call("POST", "/api/identities/", R"({"name":"B","provision_phone":true})");
  EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::seconds(15));
  EXPECT_EQ(stuck.status, 503) << stuck.body;
  EXPECT_FALSE(stuck.header("retry-after").empty());
  EXPECT_EQ(identityCount(), before);
}

TEST_F(SmsTwilio, InboundIsStoredOnceAndOnlyWhenSigned) {
  start();
  Ident a = identity("A");
  auto in = inbound(a.number, "+14155550100", "Your code is 123456");
  EXPECT_EQ(in->getValue<int>("status"), 200) << jsonText(*in);
  EXPECT_EQ(in->getValue<std::string>("url"), base() + kSmsWebhook);
  EXPECT_NE(in->getValue<std::string>("content_type").find("xml"), std::string::npos);
  EXPECT_NE(in->getValue<std::string>("body").find("<Response"), std::string::npos);
  auto incoming = messages("direction=incoming&identity=" + a.uuid);
  ASSERT_EQ(incoming->size(), 1u);
  auto m = incoming->getObject(0);
  EXPECT_EQ(m->getValue<std::string>("body"), "Your code is 123456");
  EXPECT_EQ(m->getValue<std::string>("extracted_code"), "123456");
  EXPECT_EQ(m->getValue<std::string>("from_number"), "+14155550100");
  EXPECT_EQ(m->getValue<std::string>("to_number"), a.number);
  EXPECT_EQ(m->getValue<std::string>("status"), "received");
  EXPECT_FALSE(m->getValue<bool>("is_read"));

  // Text beyond ASCII arrives intact through the form encoding and the signature.
  const std::string unicode = "Код: 4821 🔐 & 50% + \"quotes\"";
  EXPECT_EQ(inbound(a.number, "+447700900555", unicode)->getValue<int>("status"), 200);
  auto both = messages("direction=incoming&identity=" + a.uuid);
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ(both->getObject(0)->getValue<std::string>("body"), unicode);
  EXPECT_EQ(both->getObject(0)->getValue<std::string>("from_number"), "+447700900555");

  // A picture without text (MMS) comes with an empty Body: stored, empty.
  EXPECT_EQ(inbound(a.number, "+14155550100", "")->getValue<int>("status"), 200);
  auto three = messages("direction=incoming&identity=" + a.uuid);
  ASSERT_EQ(three->size(), 3u);
  EXPECT_EQ(three->getObject(0)->getValue<std::string>("body"), "");
  EXPECT_TRUE(three->getObject(0)->isNull("extracted_code"));

  // The same request again, byte for byte: refused.
  auto replay = twilio().post("replay");
  EXPECT_EQ(replay.json()->getValue<int>("status"), 403) << replay.body;
  // Badly signed, or not signed: refused, nothing stored.
  EXPECT_EQ(inbound(a.number, "+14155550100", "forged 111111", "bogus")->getValue<int>("status"),
            403);
  EXPECT_EQ(inbound(a.number, "+14155550100", "unsigned 222222", "")->getValue<int>("status"), 403);
  // To a number nobody here holds: answered, not stored.
  auto stray =
      inbound("+19995550100", "+14155550100", "stray 333333", std::nullopt, base() + kSmsWebhook);
  EXPECT_EQ(stray->getValue<int>("status"), 200) << jsonText(*stray);
  EXPECT_EQ(call("GET", "/api/messages/").json()->getValue<int>("count"), 3);

  const std::string stream = eventsUntil("sms.received", "event: sms.received", 3);
  EXPECT_EQ(occurrences(stream, "event: sms.received"), 3u) << stream;
  EXPECT_NE(stream.find(m->getValue<std::string>("id")), std::string::npos) << stream;
  EXPECT_EQ(stream.find("Your code is"), std::string::npos) << "no body in events\n" << stream;
}

TEST_F(SmsTwilio, AReplayIsRefusedAfterARestartToo) {
  // The same public URL after the restart (the signature covers it): the same port.
  int port = 0;
  {
    Poco::Net::ServerSocket probe(Poco::Net::SocketAddress("127.0.0.1", 0));
    port = probe.address().port();
  }
  start({"--set", "server.port=" + std::to_string(port)});
  Ident a = identity("A");
  EXPECT_EQ(inbound(a.number, "+14155550100", "before the restart")->getValue<int>("status"), 200);
  ASSERT_EQ(svcd_->terminate(), 0);
  auto first = std::move(svcd_);  // keeps its data directory (the SQLite database) until the end
  start({"--set", "server.port=" + std::to_string(port)}, "twilio", first->dbUrl());
  ASSERT_EQ(svcd_->port(), port);
  auto replay = twilio().post("replay");
  EXPECT_EQ(replay.json()->getValue<int>("status"), 403) << replay.body;
  EXPECT_EQ(call("GET", "/api/messages/").json()->getValue<int>("count"), 1);
  // A new message is still welcome.
  EXPECT_EQ(inbound(a.number, "+14155550100", "after the restart")->getValue<int>("status"), 200);
  EXPECT_EQ(call("GET", "/api/messages/").json()->getValue<int>("count"), 2);
}

TEST_F(SmsTwilio, CallsAreHandedToTheVoiceAgentOrDeclined) {
  start();
  Ident a = identity("A"), b = identity("B");
  auto set = call("PUT", "/api/identities/" + a.uuid + "/voice-agent/",
                  R"({"response_url":"http://127.0.0.1:9/agent","enabled":true})");
  ASSERT_EQ(set.status, 200) << set.body;

  auto callTo = [&](const std::string& to, std::optional<std::string> signature = std::nullopt,
                    const std::string& from = "+14155550100") {
    Poco::JSON::Object o;
    o.set("to", to);
    o.set("from", from);
    if (signature) o.set("signature", *signature);
    return webhook("call", o);
  };
  auto handed = callTo(a.number);
  EXPECT_EQ(handed->getValue<int>("status"), 200) << jsonText(*handed);
  EXPECT_EQ(handed->getValue<std::string>("url"), base() + kVoiceWebhook);
  EXPECT_NE(handed->getValue<std::string>("content_type").find("xml"), std::string::npos);
  const std::string twiml = handed->getValue<std::string>("body");
  EXPECT_NE(twiml.find("<Redirect method=\"POST\">http://127.0.0.1:9/agent</Redirect>"),
            std::string::npos)
      << twiml;
  EXPECT_EQ(twiml.find("<Hangup"), std::string::npos) << twiml;

  auto declined = callTo(b.number);
  EXPECT_EQ(declined->getValue<int>("status"), 200);
  const std::string said = declined->getValue<std::string>("body");
  EXPECT_NE(said.find("<Say>"), std::string::npos) << said;
  EXPECT_NE(said.find("<Hangup/>"), std::string::npos) << said;
  EXPECT_EQ(said.find("<Redirect"), std::string::npos) << said;

  // The URL is escaped as XML.
  ASSERT_EQ(call("PATCH", "/api/identities/" + a.uuid + "/voice-agent/",
                 R"({"response_url":"http://127.0.0.1:9/agent?a=1&b=<2>"})")
                .status,
            200);
  EXPECT_NE(callTo(a.number)->getValue<std::string>("body").find(
                ">http://127.0.0.1:9/agent?a=1&amp;b=&lt;2&gt;</Redirect>"),
            std::string::npos);

  // Turned off, the agent no longer answers.
  ASSERT_EQ(
      call("PATCH", "/api/identities/" + a.uuid + "/voice-agent/", R"({"enabled":false})").status,
      200);
  EXPECT_NE(callTo(a.number)->getValue<std::string>("body").find("<Hangup/>"), std::string::npos);

  // A caller who withholds their number is recorded as anonymous.
  EXPECT_EQ(callTo(b.number, std::nullopt, "")->getValue<int>("status"), 200);

  // A forged call is refused and not recorded.
  EXPECT_EQ(callTo(a.number, "bogus")->getValue<int>("status"), 403);

  const std::string stream = eventsUntil("call.received", "event: call.received", 5);
  EXPECT_EQ(occurrences(stream, "event: call.received"), 5u) << stream;
  EXPECT_EQ(occurrences(stream, "\"to_number\":\"" + a.number + "\""), 3u) << stream;
  EXPECT_EQ(occurrences(stream, "\"to_number\":\"" + b.number + "\""), 2u) << stream;
  EXPECT_EQ(occurrences(stream, "\"from_number\":\"anonymous\""), 1u) << stream;
  EXPECT_NE(stream.find("\"from_number\":\"+14155550100\""), std::string::npos) << stream;
  EXPECT_NE(stream.find("\"created_dt\""), std::string::npos) << stream;
}

TEST_F(SmsTwilio, PoolHandsOutTheOperatorsNumbersAndSendsThroughTwilio) {
  start({"--set", "sms.pool.numbers=+12025550150,+12025550151"}, "pool");
  // The operator's numbers, set up at Twilio by hand to call this server.
  for (const char* n : {"+12025550150", "+12025550151"}) {
    Poco::JSON::Object own;
    own.set("phone_number", n);
    own.set("sms_url", base() + kSmsWebhook);
    own.set("voice_url", base() + kVoiceWebhook);
    ASSERT_EQ(twilio().post("own", own).status, 201);
  }
  Ident a = identity("A"), b = identity("B");
  EXPECT_EQ(a.number, "+12025550150");
  EXPECT_EQ(b.number, "+12025550151");
  const int before = identityCount();
  auto third = call("POST", "/api/identities/", R"({"name":"C","provision_phone":true})");
  EXPECT_EQ(third.status, 503) << third.body;
  EXPECT_EQ(third.code(), "service_unavailable");
  EXPECT_FALSE(third.header("retry-after").empty());
  EXPECT_EQ(identityCount(), before);
  // Nothing is bought or searched: the numbers are the operator's.
  EXPECT_TRUE(twilio().requestsTo("/IncomingPhoneNumbers.json").empty());
  EXPECT_TRUE(twilio().requestsTo("/Local.json").empty());

  auto sent = sendSms(a, "+14155550123", "from the pool");
  ASSERT_EQ(sent.status, 201) << sent.body;
  EXPECT_EQ(sent.json()->getValue<std::string>("status"), "queued");
  auto posts = twilio().requestsTo("/Messages.json");
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_TRUE(posts[0]->getValue<bool>("auth_ok"));
  EXPECT_EQ(posts[0]->getObject("form")->getValue<std::string>("From"), "+12025550150");
  EXPECT_EQ(posts[0]->getObject("form")->getValue<std::string>("StatusCallback"),
            base() + kStatusWebhook + "?message=" + sent.json()->getValue<std::string>("id"));
  EXPECT_EQ(statusCallback(lastCarrierSid(), "delivered"), 204);
  EXPECT_EQ(message(sent.json()->getValue<std::string>("id"))->getValue<std::string>("status"),
            "delivered");

  // Inbound through the same webhooks.
  EXPECT_EQ(inbound(b.number, "+14155550100", "pool code 654321")->getValue<int>("status"), 200);
  auto incoming = messages("direction=incoming&identity=" + b.uuid);
  ASSERT_EQ(incoming->size(), 1u);
  EXPECT_EQ(incoming->getObject(0)->getValue<std::string>("extracted_code"), "654321");
}

}  // namespace
}  // namespace svc::testing
