// svcctl as operators and agents run it: the real build/bin/svcctl against a real svcd. Its
// commands come from a table (the kernel's, then each plugin library's): help at every level,
// exit code 2 for what names no command, --json on what prints a resource, a plugin's command
// (identities, with the generic --field), the kernel's, and the handshake that refuses a module
// built for another SDK version.
#include "harness.h"

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

namespace svc::testing {
namespace {

class Svcctl : public ::testing::Test {
 protected:
  // The plugins and settings of the server the commands run against.
  virtual Svcd::Options options() {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "email"};
    o.args = {"--set", "email.domains=agents.test"};
    return o;
  }

  void SetUp() override {
    svcd_ = std::make_unique<Svcd>(options());
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "cli@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
  }

  // Runs svcctl with the server's addresses, the key and the operator token.
  // @return its exit code and what it printed (stderr too, unless `stdout_only`).
  std::pair<int, std::string> ctl(const std::string& args, bool stdout_only = false) {
    return runCommand(
        "'" + binDir() + "/svcctl' --url http://127.0.0.1:" + std::to_string(svcd_->port()) +
        " --key " + key_ + " --admin http://127.0.0.1:" + std::to_string(svcd_->adminPort()) +
        " --admin-token " + svcd_->adminToken() + " " + args + (stdout_only ? " 2>/dev/null" : ""));
  }

  // Runs svcctl --json ARGS. @return its output, parsed (failing the test when it does not parse).
  Poco::JSON::Object::Ptr json(const std::string& args) {
    auto [rc, out] = ctl("--json " + args, true);
    EXPECT_EQ(rc, 0) << args << ": " << out;
    try {
      return Poco::JSON::Parser().parse(out).extract<Poco::JSON::Object::Ptr>();
    } catch (const Poco::Exception& e) {
      ADD_FAILURE() << args << " printed no JSON object: " << out;
      return new Poco::JSON::Object;
    }
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_;
};

TEST_F(Svcctl, HelpWorksAtEveryLevelAndListsCommandsWithTheirSummaries) {
  auto [rc, top] = ctl("--help");
  EXPECT_EQ(rc, 0) << top;
  for (const char* line :
       {"  plugins ", "  health ", "  metrics ", "commands of plugin auth:", "  keys ",
        "commands of plugin identities:", "  identities  the personas agents act as", "  mail ",
        "--json", "--plugins-dir DIR"}) {
    EXPECT_NE(top.find(line), std::string::npos) << line << "\n" << top;
  }
  EXPECT_EQ(ctl("-h"), ctl("--help"));
  EXPECT_EQ(ctl("help"), ctl("--help"));

  auto [group_rc, group] = ctl("identities --help");
  EXPECT_EQ(group_rc, 0);
  EXPECT_NE(group.find("usage: svcctl identities COMMAND"), std::string::npos) << group;
  // Names padded to the longest (voice-agent, a nested group).
  EXPECT_TRUE(std::regex_search(group, std::regex("\n  create +create an identity"))) << group;
  EXPECT_TRUE(std::regex_search(group, std::regex("\n  update +change an identity"))) << group;
  EXPECT_TRUE(std::regex_search(group, std::regex("\n  voice-agent +where calls"))) << group;

  auto [leaf_rc, leaf] = ctl("identities create --help");
  EXPECT_EQ(leaf_rc, 0);
  EXPECT_NE(leaf.find("usage: svcctl identities create [options] NAME"), std::string::npos) << leaf;
  EXPECT_NE(leaf.find("--field NAME=VALUE ..."), std::string::npos) << leaf;
  EXPECT_NE(leaf.find("--email LOCAL_PART"), std::string::npos) << leaf;
  EXPECT_EQ(ctl("help identities create"), ctl("identities create --help"));
  EXPECT_EQ(ctl("identities create -h").second, leaf);
  EXPECT_EQ(ctl("mail send --help").first, 0);
  EXPECT_EQ(ctl("keys --help").first, 0);
}

TEST_F(Svcctl, WhatNamesNoCommandOrDoesNotFitOneExitsTwoWithUsage) {
  auto [rc, out] = ctl("frobnicate");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("svcctl: unknown command 'frobnicate'"), std::string::npos) << out;
  EXPECT_NE(out.find("usage: svcctl"), std::string::npos) << out;
  auto [sub_rc, sub] = ctl("identities frobnicate");
  EXPECT_EQ(sub_rc, 2);
  EXPECT_NE(sub.find("unknown command 'identities frobnicate'"), std::string::npos) << sub;
  EXPECT_NE(sub.find("  list "), std::string::npos) << "the group's commands\n" << sub;
  EXPECT_EQ(ctl("").first, 2);
  EXPECT_EQ(ctl("identities").first, 2);
  auto [missing_rc, missing] = ctl("identities create");
  EXPECT_EQ(missing_rc, 2);
  EXPECT_NE(missing.find("missing NAME"), std::string::npos) << missing;
  auto [option_rc, option] = ctl("identities list --frobnicate");
  EXPECT_EQ(option_rc, 2);
  EXPECT_NE(option.find("unknown option --frobnicate"), std::string::npos) << option;
  EXPECT_EQ(ctl("identities create X --field nothing").first, 2);
  EXPECT_EQ(ctl("identities list").first, 0) << "nothing was created by the refused lines";
  EXPECT_EQ(json("identities list")->getValue<int>("count"), 0);
}

TEST_F(Svcctl, IdentitiesCreateAndUpdateTakeAnyFieldAsJsonOrText) {
  // --field sets any field of the body: the email plugin's, here, which identities never names.
  auto [rc, created] = ctl(
      "identities create 'Field Bot' --field email_identifier=fieldbot --field domain=agents.test");
  ASSERT_EQ(rc, 0) << created;
  EXPECT_NE(created.find("fieldbot@agents.test"), std::string::npos) << created;
  const std::string uuid = created.substr(0, 36);
  auto [list_rc, listed] = ctl("identities list");
  EXPECT_EQ(list_rc, 0);
  EXPECT_NE(listed.find(uuid + "  fieldbot@agents.test  Field Bot"), std::string::npos) << listed;

  // A value that parses as JSON is sent as that JSON: "\"7\"" is the string 7, not "\"7\"".
  auto renamed = json("identities update " + uuid + " --field 'name=\"7\"'");
  EXPECT_EQ(renamed->getValue<std::string>("name"), "7");
  EXPECT_EQ(renamed->getObject("email")->getValue<std::string>("address"), "fieldbot@agents.test");
  // Text that is not JSON is sent as text; --name says the same.
  EXPECT_EQ(json("identities update " + uuid + " --field 'name=Plain Bot'")
                ->getValue<std::string>("name"),
            "Plain Bot");
  EXPECT_EQ(json("identities update " + uuid + " --name Named")->getValue<std::string>("name"),
            "Named");
  EXPECT_EQ(json("identities show " + uuid)->getValue<std::string>("name"), "Named");
  // JSON of another type reaches the server as that type, which checks it.
  auto [bad_rc, bad] = ctl("identities update " + uuid + " --field name=42");
  EXPECT_EQ(bad_rc, 1) << bad;
  EXPECT_NE(bad.find("svcctl: 400 "), std::string::npos) << bad;
  // The shorthand --email still works.
  auto [short_rc, shorthand] = ctl("identities create Short --email short");
  EXPECT_EQ(short_rc, 0) << shorthand;
  EXPECT_NE(shorthand.find("short@agents.test"), std::string::npos) << shorthand;
}

TEST_F(Svcctl, JsonPrintsTheApisJsonOnCommandsThatPrintAResource) {
  auto created = json("identities create 'Json Bot' --email jsonbot");
  const std::string uuid = created->getValue<std::string>("uuid");
  EXPECT_EQ(created->getObject("email")->getValue<std::string>("address"), "jsonbot@agents.test");
  auto listed = json("identities list");
  EXPECT_EQ(listed->getValue<int>("count"), 1);
  EXPECT_EQ(listed->getArray("results")->getObject(0)->getValue<std::string>("uuid"), uuid);
  auto key = json("keys create --label from-json");
  EXPECT_EQ(key->getValue<std::string>("label"), "from-json");
  EXPECT_FALSE(key->getValue<std::string>("key").empty());
  auto keys = json("keys list");
  EXPECT_GE(keys->getArray("results")->size(), 2u);
  auto sent = json("mail send --identity " + uuid +
                   " --to jsonbot@agents.test --subject 'to myself' --body hi");
  EXPECT_FALSE(sent->getValue<std::string>("id").empty());
  auto inbox = json("mail inbox --identity " + uuid);
  EXPECT_TRUE(inbox->has("results")) << "the inbox page";
  auto plugins = json("plugins");
  EXPECT_EQ(plugins->getArray("plugins")->size(), 3u);
  // The option stands anywhere on the line, as every global option.
  auto [rc, after] = ctl("identities list --json", true);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(
      Poco::JSON::Parser().parse(after).extract<Poco::JSON::Object::Ptr>()->getValue<int>("count"),
      1);
}

TEST_F(Svcctl, KernelCommandsListPluginsHealthAndMetrics) {
  auto [rc, plugins] = ctl("plugins");
  EXPECT_EQ(rc, 0) << plugins;
  EXPECT_NE(plugins.find("NAME"), std::string::npos) << plugins;
  EXPECT_NE(plugins.find("identities"), std::string::npos) << plugins;
  EXPECT_NE(plugins.find("    GET /api/identities/"), std::string::npos) << plugins;
  auto [health_rc, health] = ctl("health", true);
  EXPECT_EQ(health_rc, 0);
  EXPECT_NE(health.find("\"name\":\"identities\""), std::string::npos) << health;
  auto [metrics_rc, metrics] = ctl("metrics", true);
  EXPECT_EQ(metrics_rc, 0);
  EXPECT_NE(metrics.find("svc_http_requests_total"), std::string::npos);
  // Without the operator token, the operator's commands say what is missing.
  auto [no_token, why] =
      runCommand("env -u SVC_ADMIN_TOKEN '" + binDir() + "/svcctl' --admin http://127.0.0.1:" +
                 std::to_string(svcd_->adminPort()) + " plugins");
  EXPECT_EQ(no_token, 1);
  EXPECT_NE(why.find("the operator token is needed"), std::string::npos) << why;
}

// The sms plugin's commands against a server with the loopback carrier: numbers, SMS between
// two identities of the server, conversations, reading, and bad numbers refused.
class SvcctlSms : public Svcctl {
 protected:
  Svcd::Options options() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "sms"};
    return o;
  }

  // Creates an identity. @return its UUID.
  std::string identity(const std::string& name) {
    return json("identities create '" + name + "'")->getValue<std::string>("uuid");
  }
};

TEST_F(SvcctlSms, PhonesProvisionAndListShowTheNumber) {
  const std::string uuid = identity("Phone Bot");
  auto [rc, number] = ctl("phones provision " + uuid + " --country US", true);
  ASSERT_EQ(rc, 0) << number;
  EXPECT_TRUE(std::regex_match(number, std::regex(R"(\+120255501\d\d\n)"))) << number;
  number.pop_back();
  auto [list_rc, listed] = ctl("phones list");
  EXPECT_EQ(list_rc, 0) << listed;
  EXPECT_NE(listed.find(number + "  US       " + uuid), std::string::npos) << listed;
  auto page = json("phones list --identity " + uuid);
  ASSERT_EQ(page->getArray("results")->size(), 1u);
  EXPECT_EQ(page->getArray("results")->getObject(0)->getValue<std::string>("number"), number);

  // A second number for the same identity, or a country that is not one, is refused.
  auto [again_rc, again] = ctl("phones provision " + uuid);
  EXPECT_EQ(again_rc, 1);
  EXPECT_NE(again.find("svcctl: 409 phone_exists: "), std::string::npos) << again;
  auto [country_rc, country] = ctl("phones provision " + identity("Other") + " --country USA");
  EXPECT_EQ(country_rc, 1);
  EXPECT_NE(country.find("svcctl: 400 "), std::string::npos) << country;
  EXPECT_NE(country.find("country_code"), std::string::npos) << country;
  EXPECT_EQ(json("phones list")->getValue<int>("count"), 1) << "nothing stored by the refusals";
}

TEST_F(SvcctlSms, IdentitiesCreateWithPhoneAndEveryViewShowsTheNumber) {
  auto [rc, created] = ctl("identities create 'Phone Bot' --phone --country US");
  ASSERT_EQ(rc, 0) << created;
  std::smatch made;
  ASSERT_TRUE(std::regex_match(created, made, std::regex(R"(([0-9a-f-]{36}) (\+120255501\d\d)\n)")))
      << created;
  const std::string uuid = made[1], number = made[2];
  auto [list_rc, listed] = ctl("identities list");
  EXPECT_EQ(list_rc, 0) << listed;
  EXPECT_NE(listed.find(uuid + "  " + number + "  Phone Bot"), std::string::npos) << listed;
  auto [show_rc, shown] = ctl("identities show " + uuid);
  EXPECT_EQ(show_rc, 0) << shown;
  EXPECT_NE(shown.find("Addresses: " + number + "\n"), std::string::npos) << shown;
  // --country without --phone would be ignored: refused instead, and nothing is created.
  auto [lone_rc, lone] = ctl("identities create Lone --country GB");
  EXPECT_EQ(lone_rc, 2) << lone;
  EXPECT_NE(lone.find("give --phone too"), std::string::npos) << lone;
  EXPECT_EQ(json("identities list")->getValue<int>("count"), 1);
}

TEST_F(SvcctlSms, SendInboxAndReadAConversation) {
  const std::string ann = identity("Ann"), bob = identity("Bob");
  auto ann_number = ctl("phones provision " + ann, true).second;
  auto bob_number = ctl("phones provision " + bob, true).second;
  ASSERT_FALSE(ann_number.empty());
  ASSERT_FALSE(bob_number.empty());
  ann_number.pop_back();
  bob_number.pop_back();

  auto [rc, sent] = ctl("sms send --to " + ann_number + " --identity " + bob + " 'Code 482913'");
  ASSERT_EQ(rc, 0) << sent;
  std::smatch line;
  ASSERT_TRUE(std::regex_match(sent, line, std::regex(R"(([0-9a-f-]{36}) delivered\n)"))) << sent;
  const std::string message_id = line[1];

  // Ann's inbox lists the conversation with Bob, one unread; --json is the API's page.
  auto inbox = json("sms inbox --identity " + ann);
  ASSERT_EQ(inbox->getArray("results")->size(), 1u);
  auto conversation = inbox->getArray("results")->getObject(0);
  const std::string conversation_id = conversation->getValue<std::string>("conversation_id");
  EXPECT_EQ(conversation_id.substr(conversation_id.find('_') + 1), bob_number);
  EXPECT_EQ(conversation->getValue<int>("unread_count"), 1);
  auto [inbox_rc, table] = ctl("sms inbox --identity " + ann + " --unread");
  EXPECT_EQ(inbox_rc, 0) << table;
  EXPECT_NE(table.find(conversation_id), std::string::npos) << table;
  EXPECT_NE(table.find("  1/1     " + bob_number + "  Code 482913"), std::string::npos) << table;

  // Reading prints the body and marks it read.
  auto [read_rc, read] = ctl("sms read " + conversation_id + " --identity " + ann);
  EXPECT_EQ(read_rc, 0) << read;
  EXPECT_NE(read.find(bob_number + " -> " + ann_number + "\nCode 482913\n"), std::string::npos)
      << read;
  auto again = json("sms read " + conversation_id + " --identity " + ann);
  auto incoming = again->getArray("messages")->getObject(0);
  EXPECT_EQ(incoming->getValue<std::string>("body"), "Code 482913");
  EXPECT_TRUE(incoming->getValue<bool>("is_read")) << "the first read marked it";
  // A message id reads that message: the one Bob sent, in his identity.
  auto outgoing = json("sms read " + message_id + " --identity " + bob);
  EXPECT_EQ(outgoing->getValue<std::string>("direction"), "outgoing");
  EXPECT_EQ(outgoing->getValue<std::string>("body"), "Code 482913");
  EXPECT_EQ(json("sms inbox --identity " + ann + " --unread")->getArray("results")->size(), 0u);
  EXPECT_EQ(json("sms inbox --identity " + ann)
                ->getArray("results")
                ->getObject(0)
                ->getValue<int>("unread_count"),
            0);
}

TEST_F(SvcctlSms, BadNumbersAndMissingIdentitiesAreRefusedClearly) {
  const std::string ann = identity("Ann");
  ctl("phones provision " + ann);
  auto [bad_rc, bad] = ctl("sms send --to 12345 --identity " + ann + " hello");
  EXPECT_EQ(bad_rc, 1);
  EXPECT_NE(bad.find("svcctl: 400 "), std::string::npos) << bad;
  EXPECT_NE(bad.find("to_number"), std::string::npos) << bad;
  auto [no_identity_rc, no_identity] = ctl("sms send --to +12025550199 hello");
  EXPECT_EQ(no_identity_rc, 1);
  EXPECT_NE(no_identity.find("svcctl: 400 identity_required: name the identity with --identity "
                             "UUID"),
            std::string::npos)
      << no_identity;
  EXPECT_EQ(no_identity.find("X-Svc-Identity"), std::string::npos) << no_identity;
  auto [no_to_rc, no_to] = ctl("sms send --identity " + ann + " hello");
  EXPECT_EQ(no_to_rc, 2) << no_to;
  auto [bad_id_rc, bad_id] = ctl("sms read nonsense_x --identity " + ann);
  EXPECT_EQ(bad_id_rc, 1);
  EXPECT_NE(bad_id.find("svcctl: 400 invalid_conversation_id: "), std::string::npos) << bad_id;
  EXPECT_EQ(json("sms inbox --identity " + ann)->getValue<int>("count"), 0) << "nothing was sent";
}

// The contacts plugin's commands: add, find in any case, search, edit (and clear), list, delete;
// other people's text printed without what could take over the terminal.
class SvcctlContacts : public Svcctl {
 protected:
  Svcd::Options options() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "contacts"};
    return o;
  }
};

TEST_F(SvcctlContacts, AddFindSearchEditAndDelete) {
  const std::string ada = json("identities create Agent")->getValue<std::string>("uuid"),
                    id = " --identity " + ada;
  auto [rc, added] =
      ctl("contacts add --email Ada@Example.com --name 'Ada Lovelace' --phone "
          "'+1 202 555 0177'" +
          id);
  ASSERT_EQ(rc, 0) << added;
  std::smatch line;
  ASSERT_TRUE(std::regex_search(added, line, std::regex(R"(^([0-9a-f-]{36})\n)"))) << added;
  const std::string uuid = line[1];
  EXPECT_NE(added.find("  display_name: Ada Lovelace\n"), std::string::npos) << added;
  EXPECT_NE(added.find("  phone_number: +12025550177\n"), std::string::npos) << added;

  EXPECT_EQ(json("contacts find ada@EXAMPLE.com" + id)->getValue<std::string>("uuid"), uuid);
  EXPECT_EQ(json("contacts find +12025550177" + id)->getValue<std::string>("uuid"), uuid);
  auto [search_rc, table] = ctl("contacts search lovelace" + id);
  EXPECT_EQ(search_rc, 0) << table;
  EXPECT_NE(table.find(uuid + "  Ada Lovelace  Ada@Example.com  +12025550177"), std::string::npos)
      << table;
  EXPECT_EQ(json("contacts search 'ada lo'" + id)->getValue<int>("count"), 1) << "a space in q";

  // A bidirectional override in a name is stored as given, and never reaches the terminal.
  auto [edit_rc, edited] =
      ctl("contacts edit " + uuid + " --nickname 'Eve\u202eevil' --clear phone_number" + id);
  EXPECT_EQ(edit_rc, 0) << edited;
  EXPECT_EQ(edited.find("\u202e"), std::string::npos) << edited;
  EXPECT_NE(edited.find("  nickname: Eve\ufffdevil\n"), std::string::npos) << edited;
  EXPECT_EQ(edited.find("phone_number"), std::string::npos) << edited;
  auto stored = json("contacts find ada@example.com" + id);
  EXPECT_EQ(stored->getValue<std::string>("nickname"), "Eve\u202eevil");
  EXPECT_TRUE(stored->isNull("phone_number"));

  auto [dup_rc, dup] = ctl("contacts add --email ada@example.com" + id);
  EXPECT_EQ(dup_rc, 1);
  EXPECT_NE(dup.find("svcctl: 409 conflict: "), std::string::npos) << dup;
  auto [bad_rc, bad] = ctl("contacts add --email nope" + id);
  EXPECT_EQ(bad_rc, 1);
  EXPECT_NE(bad.find("svcctl: 400 "), std::string::npos) << bad;
  EXPECT_EQ(json("contacts list" + id)->getValue<int>("count"), 1);

  auto [del_rc, deleted] = ctl("contacts delete " + uuid + id);
  EXPECT_EQ(del_rc, 0) << deleted;
  EXPECT_EQ(json("contacts list" + id)->getValue<int>("count"), 0);
  auto [gone_rc, gone] = ctl("contacts find ada@example.com" + id);
  EXPECT_EQ(gone_rc, 1);
  EXPECT_NE(gone.find("svcctl: 404 "), std::string::npos) << gone;
}

// The secrets plugin's commands: a value set from stdin (created, then changed), shown only with
// --reveal, listed by key and deleted.
class SvcctlSecrets : public Svcctl {
 protected:
  Svcd::Options options() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault", "secrets"};
    return o;
  }
  // Runs `svcctl secrets ARGS` with `value` on stdin.
  std::pair<int, std::string> withInput(const std::string& value, const std::string& args) {
    const std::string file = svcd_->dataDir() + "/stdin.txt";
    std::ofstream(file, std::ios::binary) << value;
    return ctl(args + " < '" + file + "'");
  }
};

TEST_F(SvcctlSecrets, SetFromStdinThenGetRevealsOnlyWhenAsked) {
  const std::string uuid = json("identities create 'Deploy Bot'")->getValue<std::string>("uuid");
  auto [rc, out] = withInput("sk-first\n", "secrets set OPENAI_API_KEY --identity " + uuid);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(std::regex_match(out, std::regex("created OPENAI_API_KEY [0-9a-f-]{36}\n"))) << out;

  // Without --reveal the value is not printed, not even under --json.
  auto [hidden_rc, hidden] = ctl("secrets get OPENAI_API_KEY --identity " + uuid);
  EXPECT_EQ(hidden_rc, 0) << hidden;
  EXPECT_NE(hidden.find("OPENAI_API_KEY is set"), std::string::npos) << hidden;
  EXPECT_EQ(hidden.find("sk-first"), std::string::npos) << hidden;
  auto hidden_json = json("secrets get OPENAI_API_KEY --identity " + uuid);
  EXPECT_FALSE(hidden_json->has("value"));
  EXPECT_EQ(hidden_json->getValue<std::string>("key"), "OPENAI_API_KEY");
  auto [reveal_rc, revealed] =
      ctl("secrets get OPENAI_API_KEY --identity " + uuid + " --reveal", true);
  EXPECT_EQ(reveal_rc, 0) << revealed;
  EXPECT_EQ(revealed, "sk-first\n") << "the value as set, without stdin's line break";

  // Setting the key again changes that secret; a multi-line value keeps its inner breaks.
  auto [again_rc, again] =
      withInput("line one\nline two\n", "secrets set OPENAI_API_KEY --identity " + uuid);
  ASSERT_EQ(again_rc, 0) << again;
  EXPECT_NE(again.find("updated OPENAI_API_KEY"), std::string::npos) << again;
  EXPECT_EQ(json("secrets get OPENAI_API_KEY --reveal --identity " + uuid)
                ->getValue<std::string>("value"),
            "line one\nline two");
  auto [list_rc, listed] = ctl("secrets list --identity " + uuid);
  EXPECT_EQ(list_rc, 0) << listed;
  EXPECT_NE(listed.find("OPENAI_API_KEY"), std::string::npos) << listed;
  EXPECT_EQ(listed.find("line one"), std::string::npos) << listed;
  EXPECT_EQ(json("secrets list")->getValue<int>("count"), 1);

  // Refusals: no such key; an empty value (the server's 400 naming it).
  auto [missing_rc, missing] = ctl("secrets get NOPE --identity " + uuid + " --reveal");
  EXPECT_EQ(missing_rc, 1);
  EXPECT_NE(missing.find("no secret has the key"), std::string::npos) << missing;
  auto [empty_rc, empty] = withInput("", "secrets set EMPTY --identity " + uuid);
  EXPECT_EQ(empty_rc, 1);
  EXPECT_NE(empty.find("svcctl: 400 "), std::string::npos) << empty;
  EXPECT_NE(empty.find("value"), std::string::npos) << empty;

  auto [delete_rc, deleted] = ctl("secrets delete OPENAI_API_KEY --identity " + uuid);
  EXPECT_EQ(delete_rc, 0) << deleted;
  EXPECT_EQ(json("secrets list")->getValue<int>("count"), 0);
}

// Commands come from the libraries in --plugins-dir; one built for another SDK version is refused
// in one line naming it, and the rest of svcctl works.
TEST(SvcctlModules, APluginAddsCommandsAndAModuleForAnotherSdkIsRefused) {
  const std::string svcctl =
      "'" + binDir() + "/svcctl' --plugins-dir '" + testPluginDir() + "/cli/";
  auto [rc, pong] = runCommand(svcctl + "good' clifixture ping hi");
  EXPECT_EQ(rc, 0) << pong;
  EXPECT_EQ(pong, "pong hi\n");
  auto [help_rc, help] = runCommand(svcctl + "good' --help");
  EXPECT_NE(help.find("commands of plugin clifixture:\n  clifixture  a test fixture's commands"),
            std::string::npos)
      << help;
  EXPECT_EQ(help.find("  identities "), std::string::npos) << "only that directory's plugins";

  auto [newer_rc, newer] = runCommand(svcctl + "newer' --help");
  EXPECT_EQ(newer_rc, 0) << newer;
  EXPECT_NE(newer.find("svcctl: the commands in "), std::string::npos) << newer;
  EXPECT_NE(newer.find("svc_plugin_clinewer.so are refused: SDK minor version mismatch (built for "
                       "a newer SDK"),
            std::string::npos)
      << newer;
  EXPECT_EQ(newer.find("clifixture  "), std::string::npos) << newer;
  EXPECT_NE(newer.find("  plugins "), std::string::npos) << "the kernel's commands remain";
  auto [gone_rc, gone] = runCommand(svcctl + "newer' clifixture ping");
  EXPECT_EQ(gone_rc, 2) << gone;

  // By default svcctl looks where svcd does: build/lib/svc/plugins, beside build/bin.
  auto [bundled_rc, bundled] = runCommand("'" + binDir() + "/svcctl' --help");
  EXPECT_NE(bundled.find("commands of plugin identities:"), std::string::npos) << bundled;
  auto [env_rc, env] = runCommand("SVC_PLUGINS_DIR='" + testPluginDir() + "/cli/good' '" +
                                  binDir() + "/svcctl' clifixture ping");
  EXPECT_EQ(env, "pong\n");
}

// Groups of one name merge: a plugin adds a subcommand to another plugin's group.
TEST(SvcctlModules, APluginAddsASubcommandToAnotherPluginsGroup) {
  // The fixture beside the bundled email plugin, whose `mail` group gains `mail ping`.
  const std::string dir = ::testing::TempDir() + "svcctl-merge";
  runCommand("rm -rf '" + dir + "' && mkdir -p '" + dir + "' && ln -s '" + testPluginDir() +
             "/cli/good/svc_plugin_clifixture.so' '" + dir + "/' && ln -s '" + binDir() +
             "/../lib/svc/plugins/svc_plugin_email.so' '" + dir + "/'");
  auto [rc, help] = runCommand("'" + binDir() + "/svcctl' --plugins-dir '" + dir + "' mail --help");
  EXPECT_EQ(rc, 0) << help;
  EXPECT_NE(help.find("  send "), std::string::npos) << help;
  EXPECT_NE(help.find("  ping "), std::string::npos) << help;
  EXPECT_EQ(runCommand("'" + binDir() + "/svcctl' --plugins-dir '" + dir + "' mail ping").second,
            "pong\n");
  runCommand("rm -rf '" + dir + "'");
}

}  // namespace
}  // namespace svc::testing
