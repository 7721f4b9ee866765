// svcctl follows the API (issue 19): mail reply and forward, the one-call waits printing the code
// of a message delivered over SMTP or an SMS injected through the loopback carrier, events tail,
// help, --version, and errors as JSON under --json; the real svcctl against a real svcd.
#include "email_fixture.h"
#include "svcctl_run.h"

#include <Poco/JSON/Parser.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <iterator>
#include <regex>
#include <sstream>
#include <thread>

namespace svc::testing {
namespace {

Poco::JSON::Object::Ptr parsed(const std::string& text) {
  try {
    return Poco::JSON::Parser().parse(text).extract<Poco::JSON::Object::Ptr>();
  } catch (const Poco::Exception&) {
    ADD_FAILURE() << "not a JSON object: " << text;
    return new Poco::JSON::Object;
  }
}

// @return true once svcd counts `n` event streams open (within 30 s).
bool streamsOpen(Svcd& svcd, int n) {
  for (int i = 0; i < 300; ++i) {
    if (sample(metricsOf(svcd), "svc_event_streams_open") == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

class SvcctlMail : public Email {
 protected:
  std::pair<int, std::string> ctl(const std::string& args, bool stdout_only = false) {
    return runSvcctl(*svcd_, key_, args, stdout_only);
  }
  Poco::JSON::Object::Ptr json(const std::string& args) {
    auto [rc, out] = ctl("--json " + args, true);
    EXPECT_EQ(rc, 0) << args << ": " << out;
    return parsed(out);
  }
  std::string codeMail(const std::string& to, const std::string& body) {
    return smtp(envelope("no-reply@acme.example", to,
                         "From: no-reply@acme.example\r\nTo: " + to +
                             "\r\nSubject: Your Acme code\r\n\r\n" + body + "\r\n"));
  }
};

TEST_F(SvcctlMail, ReplyAndForwardSendThreadedMessages) {
  Ident ann = identity("Ann", "ann"), bob = identity("Bob", "bob"), cat = identity("Cat", "cat");
  auto first = json("mail send --identity " + ann.uuid +
                    " --to bob@agents.test --cc cat@agents.test --subject Plans --body 'Lunch?'");
  const std::string sent_id = first->getValue<std::string>("id");
  // Bob's copy of the message: the one he replies to.
  auto inbox = json("mail list --identity " + bob.uuid + " --direction incoming");
  ASSERT_EQ(inbox->getArray("results")->size(), 1u) << sent_id;
  const std::string bobs = inbox->getArray("results")->getObject(0)->getValue<std::string>("id");

  auto [rc, replied] = ctl("mail reply " + bobs + " --identity " + bob.uuid + " --body 'Yes!'");
  ASSERT_EQ(rc, 0) << replied;
  EXPECT_TRUE(std::regex_match(replied, std::regex("[0-9a-f-]{36} \\w+\n"))) << replied;
  auto reply = json("mail read " + replied.substr(0, 36) + " --identity " + bob.uuid);
  EXPECT_EQ(reply->getValue<std::string>("subject"), "Re: Plans");
  EXPECT_EQ(reply->getArray("to_email")->getElement<std::string>(0), "ann@agents.test");
  EXPECT_EQ(reply->getValue<std::string>("content"), "Yes!");
  auto all = json("mail reply " + bobs + " --all --identity " + bob.uuid + " --body 'All in'");
  EXPECT_EQ(all->getArray("cc")->size() + all->getArray("to_email")->size(), 2u)
      << "Ann and Cat, never Bob himself";

  auto forwarded = json("mail forward " + bobs + " --identity " + bob.uuid +
                        " --to cat@agents.test --body 'FYI'");
  EXPECT_EQ(forwarded->getValue<std::string>("subject"), "Fwd: Plans");
  // Cat received it, threaded apart: the forward is in her list with its subject.
  auto cats = json("mail list --identity " + cat.uuid + " --direction incoming");
  bool got = false;
  for (std::size_t i = 0; i < cats->getArray("results")->size(); ++i) {
    got |=
        cats->getArray("results")->getObject(i)->getValue<std::string>("subject") == "Fwd: Plans";
  }
  EXPECT_TRUE(got) << sent_id;
  // A forward needs recipients: a usage error, nothing sent.
  auto [no_to, why] = ctl("mail forward " + bobs + " --identity " + bob.uuid + " --body x");
  EXPECT_EQ(no_to, 2) << why;
  EXPECT_NE(why.find("missing --to ADDR"), std::string::npos) << why;
}

TEST_F(SvcctlMail, WaitPrintsTheCodeOfAMessageDeliveredOverSmtp) {
  Ident sales = identity("Sales", "sales");
  auto waiting = std::async(std::launch::async, [&] {
    return ctl("mail wait --identity " + sales.uuid + " --timeout 20", true);
  });
  // Held before the message comes (svcctl may take a while to start).
  ASSERT_TRUE(waitForSample(*svcd_, "svc_held_responses_open", 1));
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  ASSERT_NE(codeMail("sales@agents.test", "Your verification code is 482 913.").find("250 2.0.0"),
            std::string::npos);
  auto [rc, code] = waiting.get();
  EXPECT_EQ(rc, 0) << code;
  EXPECT_EQ(code, "482913\n");
  // --json prints the message; filters narrow what answers.
  auto message = json("mail wait --identity " + sales.uuid +
                      " --created-after 2000-01-01T00:00:00Z --from acme.example --timeout 5");
  EXPECT_EQ(message->getValue<std::string>("extracted_code"), "482913");
  EXPECT_EQ(message->getValue<std::string>("subject"), "Your Acme code");
}

TEST_F(SvcctlMail, AWaitThatTimesOutExitsWithItsOwnStatus) {
  Ident sales = identity("Sales", "sales");
  auto [rc, out] = ctl("mail wait --identity " + sales.uuid + " --timeout 1");
  EXPECT_EQ(rc, 124) << out;
  EXPECT_NE(out.find("nothing came in time"), std::string::npos) << out;
  auto [json_rc, error] = ctl("--json mail wait --identity " + sales.uuid + " --timeout 1", true);
  EXPECT_EQ(json_rc, 124);
  EXPECT_EQ(parsed(error)->getValue<std::string>("code"), "timeout");
}

TEST_F(SvcctlMail, EventsTailPrintsOneLinePerEventAndJsonUnderJson) {
  Ident ann = identity("Ann", "ann");
  Ident bob = identity("Bob", "bob");
  auto [rc, lines] = ctl("events tail --last-event-id 0 --types identity.created --count 2", true);
  ASSERT_EQ(rc, 0) << lines;
  std::istringstream in(lines);
  std::string first, second, more;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_FALSE(std::getline(in, more)) << lines;
  EXPECT_TRUE(std::regex_match(
      first, std::regex("\\d+ identity.created \\S+ " + ann.uuid + " " + ann.uuid)))
      << first;
  EXPECT_NE(second.find(bob.uuid), std::string::npos) << second;

  // One JSON object per line; resuming after the first event starts at the second.
  const std::string first_id = first.substr(0, first.find(' '));
  auto [json_rc, objects] = ctl(
      "--json events tail --types identity.created --count 1 --last-event-id " + first_id, true);
  ASSERT_EQ(json_rc, 0) << objects;
  auto event = parsed(objects);
  EXPECT_EQ(event->getValue<std::string>("type"), "identity.created");
  EXPECT_EQ(event->getObject("object")->getValue<std::string>("uuid"), bob.uuid);

  // A live event reaches a tail that is already following. The tails before it are gone first:
  // the server counts a stream open until it notices its client left, and the count must be
  // the new tail's.
  ASSERT_TRUE(streamsOpen(*svcd_, 0)) << "the earlier tails' streams stayed open";
  auto following = std::async(std::launch::async, [&] {
    return ctl("--json events tail --types email.received --count 1", true);
  });
  // The stream starts "from now": mail sent before svcctl is connected is not its to print.
  ASSERT_TRUE(streamsOpen(*svcd_, 1)) << "the tail never opened its stream";
  codeMail("ann@agents.test", "Code 111222");
  auto [live_rc, live] = following.get();
  EXPECT_EQ(live_rc, 0) << live;
  EXPECT_EQ(parsed(live)->getValue<std::string>("type"), "email.received");
  // A type the server does not have is its 400, as JSON under --json.
  auto [bad_rc, bad] = ctl("--json events tail --types nope.never", true);
  EXPECT_EQ(bad_rc, 1);
  EXPECT_EQ(parsed(bad)->getValue<std::string>("code"), "invalid") << bad;
}

TEST_F(SvcctlMail, HelpVersionAndJsonErrors) {
  auto [help_rc, help] = ctl("mail reply --help");
  EXPECT_EQ(help_rc, 0);
  for (const char* part :
       {"usage: svcctl mail reply [options] MESSAGE_ID", "--all ", "--body TEXT", "threaded",
        "calls:\n  POST /api/email-messages/{id}/reply/", "Global options"}) {
    EXPECT_NE(help.find(part), std::string::npos) << part << "\n" << help;
  }
  auto [wait_rc, wait] = ctl("help mail wait");
  EXPECT_EQ(wait_rc, 0);
  EXPECT_NE(wait.find("--timeout SECONDS"), std::string::npos) << wait;
  EXPECT_NE(wait.find("124"), std::string::npos) << wait;
  auto [tail_rc, tail] = ctl("events tail -h");
  EXPECT_EQ(tail_rc, 0);
  EXPECT_NE(tail.find("--last-event-id ID"), std::string::npos) << tail;
  auto [group_rc, group] = ctl("mail --help");
  EXPECT_NE(group.find("  forward "), std::string::npos) << group;

  auto [version_rc, version] = ctl("--version", true);
  EXPECT_EQ(version_rc, 0);
  EXPECT_TRUE(std::regex_search(version, std::regex("^svcctl \\d+\\.\\d+\\.\\d+ \\(SDK " +
                                                    std::string(SVC_TEST_SDK_VERSION) + ", ")))
      << version;

  // The server's error, as the server shaped it.
  Ident ann = identity("Ann", "ann");
  auto [server_rc, server] =
      ctl("--json mail reply 6f1b7c3e-0000-4000-8000-000000000000 --body x "
          "--identity " +
              ann.uuid,
          true);
  EXPECT_EQ(server_rc, 1);
  auto error = parsed(server);
  EXPECT_EQ(error->getValue<std::string>("code"), "not_found");
  EXPECT_FALSE(error->getValue<std::string>("detail").empty());
  // A usage error and an unreachable server, in the same shape.
  auto [usage_rc, usage] = ctl("mail reply --json", true);
  EXPECT_EQ(usage_rc, 2);
  EXPECT_EQ(parsed(usage)->getValue<std::string>("code"), "usage") << usage;
  EXPECT_NE(parsed(usage)->getValue<std::string>("detail").find("MESSAGE_ID"), std::string::npos);
  auto [unknown_rc, unknown] = ctl("--json frobnicate", true);
  EXPECT_EQ(unknown_rc, 2);
  EXPECT_EQ(parsed(unknown)->getValue<std::string>("code"), "usage") << unknown;
  auto [down_rc, down] = runCommand("('" + binDir() + "/svcctl' --url http://127.0.0.1:1 --key " +
                                    key_ + " identities list --json 2>/dev/null)");
  EXPECT_EQ(down_rc, 1);
  EXPECT_EQ(parsed(down)->getValue<std::string>("code"), "unreachable") << down;
}

// The SMS wait: an SMS injected through the loopback carrier answers `sms wait` with its code.
class SvcctlSmsWait : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "sms"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "sms@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
  }
  std::pair<int, std::string> ctl(const std::string& args, bool stdout_only = false) {
    return runSvcctl(*svcd_, key_, args, stdout_only);
  }
  std::unique_ptr<Svcd> svcd_;
  std::string key_;
};

TEST_F(SvcctlSmsWait, WaitPrintsTheCodeOfAnInjectedSms) {
  auto [id_rc, created] = ctl("--json identities create Texter", true);
  ASSERT_EQ(id_rc, 0) << created;
  const std::string uuid = parsed(created)->getValue<std::string>("uuid");
  auto [phone_rc, number] = ctl("phones provision " + uuid, true);
  ASSERT_EQ(phone_rc, 0) << number;
  number.pop_back();

  auto waiting = std::async(std::launch::async, [&] {
    return ctl("sms wait --identity " + uuid + " --timeout 20", true);
  });
  // Held before the message comes (svcctl may take a while to start).
  ASSERT_TRUE(waitForSample(*svcd_, "svc_held_responses_open", 1));
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  auto [inject_rc, injected] =
      ctl("sms inject --to '" + number + "' --from +15005550006 'Your code is 730521'");
  ASSERT_EQ(inject_rc, 0) << injected;
  auto [rc, code] = waiting.get();
  EXPECT_EQ(rc, 0) << code;
  EXPECT_EQ(code, "730521\n");
  auto [json_rc, message] = ctl("--json sms wait --identity " + uuid +
                                    " --created-after 2000-01-01T00:00:00Z --from +15005550006",
                                true);
  EXPECT_EQ(json_rc, 0) << message;
  EXPECT_EQ(parsed(message)->getValue<std::string>("body"), "Your code is 730521");
  auto [late_rc, late] = ctl("sms wait --identity " + uuid + " --timeout 1");
  EXPECT_EQ(late_rc, 124) << late;
}

// svcd stops while a tail follows it and comes back at the same address: the tail reconnects
// with Last-Event-ID and prints the next event, nothing skipped or repeated.
// Tails identity.created across a restart of svcd: with `event_before`, one identity is made
// before the restart; one always right after it, before the tail's retry (3 s) comes round.
// @return the uuids made and the uuids the tail printed.
std::pair<std::vector<std::string>, std::vector<std::string>> tailAcrossRestart(bool event_before) {
  Svcd::Options o;
  o.plugins = {"auth", "identities"};
  o.args = {"--set", "server.port=" + std::to_string(freePort())};
  Svcd first(o);
  EXPECT_TRUE(first.start()) << first.log();
  const std::string key =
      operatorLogin(first, "tail@example.com")->optValue<std::string>("management_key", "");
  EXPECT_FALSE(key.empty());
  const std::string port = std::to_string(first.port());
  auto create = [&](const std::string& name) {
    auto r = http(std::stoi(port), "POST", "/api/identities/", "{\"name\":\"" + name + "\"}",
                  bearer(key));
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json()->getValue<std::string>("uuid");
  };
  std::vector<std::string> made;
  // Bounded, so a missed event fails the test instead of leaving it waiting for ever. What it
  // prints goes to a file (it flushes each event), read as it comes.
  const std::string printed_file = first.dataDir() + "/../tail.out";
  auto tail = std::async(std::launch::async, [&] {
    return runCommand("timeout 120 '" + binDir() + "/svcctl' --url http://127.0.0.1:" + port +
                      " --key " + key + " --json events tail --types identity.created --count " +
                      (event_before ? "2" : "1") + " > '" + printed_file + "'");
  });
  const auto printedSoFar = [&] {
    std::ifstream in(printed_file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // The stream starts "from now": an event made before svcctl is connected is not its to print
  // (a slow start, as under the sanitizers, made the tail miss `Before` and wait for ever).
  EXPECT_TRUE(streamsOpen(first, 1)) << "the tail never opened its stream";
  if (event_before) {
    made.push_back(create("Before"));
    // The tail has it before svcd stops (else it would have no position to resume from).
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         printedSoFar().find(made.back()) == std::string::npos &&
         std::chrono::steady_clock::now() < until;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_NE(printedSoFar().find(made.back()), std::string::npos) << "the tail never printed it";
  }
  EXPECT_EQ(first.terminate(), 0);
  o.db_url = first.dbUrl();
  Svcd second(o);
  EXPECT_TRUE(second.start()) << second.log();
  EXPECT_EQ(std::to_string(second.port()), port);
  made.push_back(create("After"));
  EXPECT_EQ(tail.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const int rc = tail.get().first;
  const std::string out = printedSoFar();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("reconnecting"), std::string::npos) << out;
  std::istringstream lines(out);
  std::vector<std::string> printed;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("{", 0) == 0) {
      printed.push_back(parsed(line)->getObject("object")->getValue<std::string>("uuid"));
    }
  }
  return {made, printed};
}

TEST(SvcctlEvents, TailReconnectsAfterTheServerComesBack) {
  auto [made, printed] = tailAcrossRestart(true);
  EXPECT_EQ(printed, made);
}

TEST(SvcctlEvents, TailDroppedBeforeItsFirstEventMissesNothing) {
  // The stream's opening frame names its position, so the tail resumes from there rather than
  // from whatever is newest when it reconnects.
  auto [made, printed] = tailAcrossRestart(false);
  EXPECT_EQ(printed, made);
}

}  // namespace
}  // namespace svc::testing
