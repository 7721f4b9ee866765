// svcctl's command table (sdk/include/svc/sdk/cli.h): parsing, dispatch, help, printing.
#include <svc/sdk/cli.h>

#include <gtest/gtest.h>

#include <sstream>

namespace svc::sdk {
namespace {

CliCommand sendCommand(std::vector<std::string>* seen = nullptr) {
  return CliCommand::leaf("send", "send a message", {"TO", "[FILE...]"},
                          {{"--subject", "S", "the subject"},
                           {"--cc", "ADDR", "copy to", true},
                           {"--unread", "", "a flag"}},
                          [seen](CliContext& cli, const CliArgs& args) {
                            if (seen) *seen = args.positional();
                            cli.out() << "subject=" << args.value("--subject", "-")
                                      << " cc=" << args.values("--cc").size()
                                      << " unread=" << args.has("--unread") << "\n";
                            return 7;
                          });
}

struct Run {
  int code;
  std::string out, err;
};

Run run(const CliCommandTable& table, const std::vector<std::string>& line) {
  CliOptions options;
  std::vector<std::string> rest = options.take(line);
  std::ostringstream out, err;
  std::istringstream in;
  CliContext context(options, out, err, in);
  int code = table.run(rest, context);
  return {code, out.str(), err.str()};
}

CliCommandTable table(std::vector<std::string>* seen = nullptr) {
  CliCommandTable t;
  t.add({CliCommand::leaf("health", "the API's health", {}, {},
                          [](CliContext& cli, const CliArgs&) {
                            cli.out() << "healthy\n";
                            return 0;
                          })},
        "kernel");
  t.add({CliCommand::group("mail", "email", {sendCommand(seen)})}, "plugin email");
  return t;
}

TEST(CliArgs, OptionsTakeValuesInEitherFormAndFlagsNone) {
  auto args = parseCliArgs(sendCommand(), {"a@x", "--subject=Hi there", "--cc", "b@x", "--unread",
                                           "--cc", "c@x", "f1", "f2"});
  EXPECT_EQ(args.positional(), (std::vector<std::string>{"a@x", "f1", "f2"}));
  EXPECT_EQ(args.value("--subject"), "Hi there");
  EXPECT_EQ(args.values("--cc"), (std::vector<std::string>{"b@x", "c@x"}));
  EXPECT_TRUE(args.has("--unread"));
  EXPECT_FALSE(parseCliArgs(sendCommand(), {"a@x"}).has("--unread"));
  EXPECT_EQ(parseCliArgs(sendCommand(), {"a@x"}).value("--subject", "none"), "none");
  // An empty value is a value.
  auto empty = parseCliArgs(sendCommand(), {"a@x", "--subject", ""});
  EXPECT_TRUE(empty.has("--subject"));
  EXPECT_EQ(empty.value("--subject", "x"), "");
  // After --, everything is positional.
  EXPECT_EQ(parseCliArgs(sendCommand(), {"--", "--unread"}).positional(),
            (std::vector<std::string>{"--unread"}));
}

TEST(CliArgs, WhatDoesNotFitTheDeclarationIsAUsageError) {
  EXPECT_THROW(parseCliArgs(sendCommand(), {"a@x", "--bogus"}), CliUsageError);
  EXPECT_THROW(parseCliArgs(sendCommand(), {"a@x", "--subject"}), CliUsageError);
  EXPECT_THROW(parseCliArgs(sendCommand(), {"a@x", "--unread=yes"}), CliUsageError);
  EXPECT_THROW(parseCliArgs(sendCommand(), {"a@x", "--subject", "a", "--subject", "b"}),
               CliUsageError);
  EXPECT_THROW(parseCliArgs(sendCommand(), {}), CliUsageError);  // TO is required
  auto one = CliCommand::leaf("revoke", "", {"ID"}, {}, nullptr);
  EXPECT_THROW(parseCliArgs(one, {"a", "b"}), CliUsageError);
  try {
    parseCliArgs(one, {});
    FAIL();
  } catch (const CliUsageError& e) {
    EXPECT_STREQ(e.what(), "missing ID");
    EXPECT_EQ(e.exit_code, 2);
  }
}

// `users add EMAIL --password-stdin`: an option the command cannot do without.
CliCommand addCommand() {
  return CliCommand::leaf("add", "add a user", {"EMAIL"},
                          {{"--password-stdin", "", "the password from stdin",
                            /*repeatable=*/false, /*required=*/true},
                           {"--name", "NAME", "a display name"}},
                          [](CliContext&, const CliArgs&) { return 0; });
}

TEST(CliArgs, ARequiredOptionIsInTheUsageLineListedApartAndMissingItIsAUsageError) {
  CliCommandTable t;
  t.add({CliCommand::group("users", "users", {addCommand()})}, "plugin auth");
  auto help = run(t, {"users", "add", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: svcctl users add [options] EMAIL --password-stdin\n"),
            std::string::npos)
      << help.out;
  EXPECT_NE(help.out.find("required options:\n  --password-stdin  the password from stdin\n\n"
                          "options:\n  --name NAME  a display name\n"),
            std::string::npos)
      << help.out;
  auto missing = run(t, {"users", "add", "a@example.com", "--name", "A"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err.rfind("svcctl: missing --password-stdin\nusage: svcctl users add", 0), 0u)
      << missing.err;
  EXPECT_EQ(run(t, {"users", "add", "a@example.com", "--password-stdin"}).code, 0);
  // Only required options: no `[options]`; a valued one shows what it takes.
  auto approve = CliCommand::leaf("approve", "", {"USER_CODE"},
                                  {{"--user", "EMAIL", "who", /*repeatable=*/false,
                                    /*required=*/true}},
                                  [](CliContext&, const CliArgs&) { return 0; });
  CliCommandTable only;
  only.add({approve}, "plugin auth");
  EXPECT_NE(
      run(only, {"approve", "--help"}).out.find("usage: svcctl approve USER_CODE --user EMAIL\n"),
      std::string::npos);
  try {
    parseCliArgs(approve, {"BCDF-GHJK"});
    FAIL();
  } catch (const CliUsageError& e) {
    EXPECT_STREQ(e.what(), "missing --user EMAIL");
  }
}

TEST(CliField, TheValueIsJsonWhenItParsesElseAString) {
  EXPECT_EQ(parseCliField("provision_phone=true").second.convert<bool>(), true);
  EXPECT_EQ(parseCliField("n=42").second.convert<int>(), 42);
  EXPECT_EQ(parseCliField("name=Ops Bot").second.toString(), "Ops Bot");
  EXPECT_EQ(parseCliField("quoted=\"7\"").second.toString(), "7");
  EXPECT_TRUE(parseCliField("x=null").second.isEmpty());
  auto [name, object] = parseCliField("voice={\"enabled\":false}");
  EXPECT_EQ(name, "voice");
  EXPECT_FALSE(object.extract<Poco::JSON::Object::Ptr>()->getValue<bool>("enabled"));
  EXPECT_EQ(parseCliField("a=b=c").second.toString(), "b=c");
  EXPECT_EQ(parseCliField("list=1,2").second.toString(), "1,2");
  EXPECT_EQ(parseCliField("empty=").second.toString(), "");
  EXPECT_THROW(parseCliField("no-equals"), CliUsageError);
  EXPECT_THROW(parseCliField("=value"), CliUsageError);
}

TEST(CliOptions, GlobalOptionsAreTakenWhereverTheyStand) {
  CliOptions o;
  auto rest = o.take({"--url", "http://u", "mail", "send", "--json", "--key=k", "a@x", "-h",
                      "--admin", "http://a", "--plugins-dir", "/p", "--admin-token", "t"});
  EXPECT_EQ(rest, (std::vector<std::string>{"mail", "send", "a@x"}));
  EXPECT_EQ(o.url, "http://u");
  EXPECT_EQ(o.key, "k");
  EXPECT_EQ(o.admin, "http://a");
  EXPECT_EQ(o.admin_token, "t");
  EXPECT_EQ(o.plugins_dir, "/p");
  EXPECT_TRUE(o.json);
  EXPECT_TRUE(o.help);
  CliOptions after_dashes;
  EXPECT_EQ(after_dashes.take({"x", "--", "--json"}),
            (std::vector<std::string>{"x", "--", "--json"}));
  EXPECT_FALSE(after_dashes.json);
  CliOptions missing;
  EXPECT_THROW(missing.take({"plugins", "--admin-token"}), CliUsageError);
}

TEST(CliCommandTable, RunsTheLeafTheWordsNameWithItsArguments) {
  std::vector<std::string> seen;
  auto t = table(&seen);
  auto r = run(t, {"mail", "send", "a@x", "--subject", "S", "--cc", "c@x", "f"});
  EXPECT_EQ(r.code, 7);  // the handler's
  EXPECT_EQ(r.out, "subject=S cc=1 unread=0\n");
  EXPECT_EQ(seen, (std::vector<std::string>{"a@x", "f"}));
  EXPECT_EQ(run(t, {"health"}).out, "healthy\n");
}

TEST(CliCommandTable, AnUnknownOrMissingCommandIsExitCodeTwoWithUsage) {
  auto t = table();
  auto unknown = run(t, {"bogus"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown command 'bogus'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("usage: svcctl"), std::string::npos) << unknown.err;
  auto sub = run(t, {"mail", "fetch"});
  EXPECT_EQ(sub.code, 2);
  EXPECT_NE(sub.err.find("unknown command 'mail fetch'"), std::string::npos) << sub.err;
  EXPECT_NE(sub.err.find("send"), std::string::npos) << "the group's usage lists its commands";
  EXPECT_EQ(run(t, {"bogus", "--help"}).code, 2);
  EXPECT_EQ(run(t, {"mail"}).code, 2);
  EXPECT_EQ(run(t, {}).code, 2);
  auto bad_option = run(t, {"mail", "send", "a@x", "--nope"});
  EXPECT_EQ(bad_option.code, 2);
  EXPECT_NE(bad_option.err.find("unknown option --nope"), std::string::npos) << bad_option.err;
  EXPECT_NE(bad_option.err.find("usage: svcctl mail send [options] TO [FILE...]"),
            std::string::npos)
      << bad_option.err;
  EXPECT_EQ(bad_option.out, "");
}

TEST(CliCommandTable, HelpWorksAtEveryLevelAndListsSubcommandsWithSummaries) {
  auto t = table();
  for (const auto& line : std::vector<std::vector<std::string>>{{"--help"}, {"-h"}, {"help"}}) {
    auto top = run(t, line);
    EXPECT_EQ(top.code, 0);
    EXPECT_NE(top.out.find("health  the API's health"), std::string::npos) << top.out;
    EXPECT_NE(top.out.find("commands of plugin email:\n  mail  email"), std::string::npos)
        << top.out;
    EXPECT_NE(top.out.find("--admin-token TOKEN"), std::string::npos) << "the global options";
  }
  for (const auto& line : std::vector<std::vector<std::string>>{
           {"mail", "--help"}, {"help", "mail"}, {"mail", "-h"}}) {
    auto group = run(t, line);
    EXPECT_EQ(group.code, 0);
    EXPECT_NE(group.out.find("usage: svcctl mail COMMAND"), std::string::npos) << group.out;
    EXPECT_NE(group.out.find("  send  send a message"), std::string::npos) << group.out;
  }
  auto leaf = run(t, {"mail", "send", "--help"});  // help even without the required TO
  EXPECT_EQ(leaf.code, 0);
  EXPECT_NE(leaf.out.find("usage: svcctl mail send [options] TO [FILE...]"), std::string::npos);
  EXPECT_NE(leaf.out.find("--cc ADDR ...  copy to"), std::string::npos) << leaf.out;
  EXPECT_EQ(run(t, {"help", "mail", "send"}).out, leaf.out);
  auto nothing = run(t, {"help", "mail", "fetch"});
  EXPECT_EQ(nothing.code, 2);
  EXPECT_NE(nothing.err.find("no command 'svcctl mail fetch'"), std::string::npos);
}

TEST(CliCommandTable, GroupsOfOneNameMergeAndTheFirstSourceKeepsACommand) {
  auto t = table();
  auto warnings =
      t.add({CliCommand::group("mail", "more mail",
                               {CliCommand::leaf("archive", "archive", {}, {},
                                                 [](CliContext&, const CliArgs&) { return 3; }),
                                sendCommand()}),
             CliCommand::leaf("health", "another health", {}, {}, nullptr)},
            "plugin other");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "command 'mail send' of plugin other is left out: plugin email has it");
  EXPECT_EQ(warnings[1], "command 'health' of plugin other is left out: kernel has it");
  EXPECT_EQ(run(t, {"mail", "archive"}).code, 3);
  EXPECT_EQ(run(t, {"health"}).out, "healthy\n");
}

TEST(CliCommandTable, ACommandDeclaringAGlobalOptionIsLeftOut) {
  // `--url` taken as a webhook's address would have sent the caller's key to that host.
  auto t = table();
  auto warnings =
      t.add({CliCommand::group("hooks", "hooks",
                               {CliCommand::leaf("edit", "edit", {}, {{"--url", "URL", "where"}},
                                                 [](CliContext&, const CliArgs&) { return 0; })}),
             CliCommand::leaf("ok", "fine", {}, {{"--uri", "URI", "fine"}},
                              [](CliContext&, const CliArgs&) { return 0; })},
            "plugin hooks");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "command 'hooks' of plugin hooks is left out: it declares --url, a global option");
  EXPECT_EQ(run(t, {"hooks", "edit"}).code, 2);
  EXPECT_EQ(run(t, {"ok"}).code, 0);
}

TEST(CliQuery, ValuesAreEncodedAndAnEmptyOneIsSentEmpty) {
  CliArgs args;
  args.addOption("--identity", "a b/c");
  args.addOption("--from", "");
  args.addOption("--subject", "x&y=z");
  EXPECT_EQ(queryFrom(args, {{"--from", "from"}, {"--subject", "subject"}}),
            "?identity=a%20b%2Fc&from=&subject=x%26y%3Dz");
}

TEST(CliCommandTable, AHandlersFailureIsItsMessageAndExitCode) {
  CliCommandTable t;
  t.add({CliCommand::leaf(
             "fail", "", {}, {},
             [](CliContext&, const CliArgs&) -> int { throw CliError("409 conflict: taken", 1); }),
         CliCommand::leaf(
             "misuse", "", {}, {},
             [](CliContext&, const CliArgs&) -> int { throw CliUsageError("give --user EMAIL"); })},
        "kernel");
  auto failed = run(t, {"fail"});
  EXPECT_EQ(failed.code, 1);
  EXPECT_EQ(failed.err, "svcctl: 409 conflict: taken\n");
  auto misused = run(t, {"misuse"});
  EXPECT_EQ(misused.code, 2);
  EXPECT_NE(misused.err.find("svcctl: give --user EMAIL\nusage: svcctl misuse"), std::string::npos)
      << misused.err;
}

TEST(CliCommandTable, AnIdentityRequiredRefusalNamesTheIdentityOptionOfACommandThatHasOne) {
  // The server's words are for HTTP clients; a command names its own option.
  const std::string server = R"({"detail":"Name the identity with ?identity=<uuid> or the )"
                             R"(X-Svc-Identity header, or use an identity key.",)"
                             R"("code":"identity_required"})";
  const auto refused = [server](CliContext&, const CliArgs&) -> int {
    CliContext::expect({400, server, "application/json"});
    return 0;
  };
  CliCommandTable t;
  t.add({CliCommand::leaf("send", "", {}, {{"--identity", "UUID", "the identity"}}, refused),
         CliCommand::leaf("other", "", {}, {}, refused)},
        "kernel");
  auto with_option = run(t, {"send"});
  EXPECT_EQ(with_option.code, 1);
  EXPECT_EQ(with_option.err,
            "svcctl: 400 identity_required: name the identity with --identity UUID (a management "
            "key acts for the whole account), or use an identity key.\n");
  // Under --json the server's error object, as it answered.
  auto json = run(t, {"--json", "send"});
  EXPECT_EQ(json.out, server + "\n");
  // A command without --identity relays the server's words.
  EXPECT_NE(run(t, {"other"}).err.find("?identity=<uuid> or the X-Svc-Identity header"),
            std::string::npos);
}

TEST(CliTable, ColumnsAlignToTheWidestCellAndDetailsIndent) {
  CliTable t({"NAME", "VERSION", "ROUTES"});
  t.row({"auth", "1.0.0", "2"}, {"GET /a", "POST /b"});
  t.row({"identities", "0.1", "0"});
  std::ostringstream out;
  t.print(out);
  EXPECT_EQ(out.str(),
            "NAME        VERSION  ROUTES\n"
            "auth        1.0.0    2\n"
            "    GET /a\n"
            "    POST /b\n"
            "identities  0.1      0\n");
}

TEST(CliContext, PrintShowsTheServersJsonUnderJsonElseTheHumanForm) {
  CliReply reply{200, R"({"name":"x"})", "application/json"};
  std::ostringstream out, err;
  std::istringstream in;
  CliOptions options;
  CliContext human(options, out, err, in);
  human.print(reply, [&](const Poco::JSON::Object& o) {
    out << "name is " << o.getValue<std::string>("name") << "\n";
  });
  EXPECT_EQ(out.str(), "name is x\n");
  options.json = true;
  std::ostringstream json_out;
  CliContext json(options, json_out, err, in);
  json.print(reply, [&](const Poco::JSON::Object&) { json_out << "not this"; });
  EXPECT_EQ(json_out.str(), "{\"name\":\"x\"}\n");
}

TEST(CliContext, ExpectNamesTheServersErrorOrTheStatus) {
  EXPECT_NO_THROW(CliContext::expect({204, "", ""}));
  EXPECT_NO_THROW(CliContext::expect({201, "{}", ""}, 201));
  try {
    CliContext::expect({409, R"({"code":"conflict","detail":"That email is taken."})", ""}, 201);
    FAIL();
  } catch (const CliError& e) {
    EXPECT_STREQ(e.what(), "409 conflict: That email is taken.");
  }
  try {
    CliContext::expect({502, "Bad Gateway", ""});
    FAIL();
  } catch (const CliError& e) {
    EXPECT_STREQ(e.what(), "HTTP 502: Bad Gateway");
  }
}

TEST(CliContext, TheOperatorTokenAndAKeyAreAskedForWhenMissing) {
  CliOptions options;
  options.key_file = "/nonexistent/svc/key";
  std::ostringstream out, err;
  std::istringstream in;
  CliContext cli(options, out, err, in);
  try {
    cli.admin("GET", "/admin/plugins");
    FAIL();
  } catch (const CliError& e) {
    EXPECT_NE(std::string(e.what()).find("--admin-token"), std::string::npos);
  }
  EXPECT_THROW(cli.key(), CliError);
  EXPECT_EQ(cli.keyFile(), "/nonexistent/svc/key");
}

}  // namespace
}  // namespace svc::sdk
