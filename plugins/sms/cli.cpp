// The sms plugin's svcctl commands: `svcctl phones ...` and `svcctl sms ...`, through the routes.
#include <svc/sdk/cli.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

namespace svc::plugins::sms {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
using sdk::identityQuery;

std::string bodyText(CliContext& cli, const CliArgs& args, std::size_t index) {
  if (args.count() > index) return args.arg(index);
  std::string text = cli.readInput();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

void printMessageLine(CliContext& cli, const Poco::JSON::Object& m) {
  cli.out() << m.getValue<std::string>("id") << " " << m.getValue<std::string>("status") << "\n";
}

int phonesList(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/phone/?limit=200" + identityQuery(args, '&'));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"ID", "NUMBER", "COUNTRY", "IDENTITY"});
    auto list = page.getArray("results");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto p = list->getObject(static_cast<unsigned>(i));
      table.row({p->getValue<std::string>("id"), p->getValue<std::string>("number"),
                 p->getValue<std::string>("country_code"), p->getValue<std::string>("identity")});
    }
    table.print(cli.out());
  });
  return 0;
}

int phonesProvision(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  if (args.has("--country")) body.set("country_code", args.value("--country"));
  auto reply =
      cli.api("POST", "/api/identities/" + args.arg(0) + "/provision-phone/", sdk::jsonText(body));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& i) {
    cli.out() << i.getObject("phone")->getValue<std::string>("number") << "\n";
  });
  return 0;
}

int send(CliContext& cli, const CliArgs& args) {
  if (!args.has("--to")) throw sdk::CliUsageError("give --to NUMBER");
  Poco::JSON::Object body;
  body.set("to_number", args.value("--to"));
  body.set("body", bodyText(cli, args, 0));
  auto reply = cli.api("POST", "/api/messages/send/" + identityQuery(args), sdk::jsonText(body));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& m) { printMessageLine(cli, m); });
  return 0;
}

int inbox(CliContext& cli, const CliArgs& args) {
  std::string query = "?limit=200" + identityQuery(args, '&');
  if (args.has("--unread")) query += "&has_unread=true";
  auto reply = cli.api("GET", "/api/sms-inbox/" + query);
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"CONVERSATION", "LATEST", "UNREAD", "WITH", "PREVIEW"});
    auto list = page.getArray("results");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto c = list->getObject(static_cast<unsigned>(i));
      table.row({c->getValue<std::string>("conversation_id"),
                 c->getValue<std::string>("latest_dt").substr(0, 19),
                 std::to_string(c->getValue<int>("unread_count")) + "/" +
                     std::to_string(c->getValue<int>("message_count")),
                 sdk::quoteForDetail(c->getValue<std::string>("phone_number"), 32),
                 // Cut by characters, never inside one; a newline or escape in an SMS must not
                 // break the table or reach the terminal.
                 sdk::quoteForDetail(c->getValue<std::string>("preview"), 40)});
    }
    table.print(cli.out());
  });
  return 0;
}

// A conversation (or one message) in full; then marks what was unread read.
int read(CliContext& cli, const CliArgs& args) {
  const std::string& id = args.arg(0);
  std::vector<Poco::JSON::Object::Ptr> messages;
  const bool conversation = id.find('_') != std::string::npos;
  auto reply = cli.api("GET", std::string(conversation ? "/api/sms-inbox/" : "/api/messages/") +
                                  id + "/" + identityQuery(args));
  cli.expect(reply, 200);
  if (conversation) {
    auto list = reply.json()->getArray("messages");
    for (std::size_t i = 0; i < list->size(); ++i) {
      messages.push_back(list->getObject(static_cast<unsigned>(i)));
    }
  } else {
    messages.push_back(reply.json());
  }
  cli.print(reply, [&](const Poco::JSON::Object&) {
    for (const auto& m : messages) {
      // Someone else wrote these: no escape sequence reaches the terminal.
      cli.out() << m->getValue<std::string>("created_dt").substr(0, 19) << "  "
                << sdk::safeForTerminal(m->getValue<std::string>("from_number")) << " -> "
                << sdk::safeForTerminal(m->getValue<std::string>("to_number")) << "\n"
                << sdk::safeForTerminal(m->getValue<std::string>("body")) << "\n\n";
    }
  });
  for (const auto& m : messages) {
    if (m->getValue<bool>("is_read")) continue;
    cli.expect(
        cli.api("PATCH",
                "/api/messages/" + m->getValue<std::string>("id") + "/" + identityQuery(args),
                R"({"is_read":true})"),
        200);
  }
  return 0;
}

int inject(CliContext& cli, const CliArgs& args) {
  if (!args.has("--to") || !args.has("--from")) {
    throw sdk::CliUsageError("give --to NUMBER and --from NUMBER");
  }
  Poco::JSON::Object body;
  body.set("to", args.value("--to"));
  body.set("from", args.value("--from"));
  body.set("body", bodyText(cli, args, 0));
  auto reply = cli.admin("POST", "/admin/sms/inject/", sdk::jsonText(body));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& m) {
    cli.out() << m.getValue<std::string>("id") << " delivered to identity "
              << m.getValue<std::string>("identity") << "\n";
  });
  return 0;
}

std::vector<CliCommand> commands() {
  const sdk::CliOption identity{"--identity", "UUID", "the identity (needed with an account key)"};
  return {
      CliCommand::group(
          "phones", "phone numbers of identities",
          {CliCommand::leaf("list", "the account's numbers", {}, {identity}, phonesList),
           CliCommand::leaf("provision", "give an identity a number; prints it", {"IDENTITY"},
                            {{"--country", "CC", "ISO 3166 alpha-2 country (default US)"}},
                            phonesProvision)}),
      CliCommand::group(
          "sms", "an identity's SMS: send, list, read; inject (operator)",
          {CliCommand::leaf("send", "send an SMS; prints its id and status", {"[BODY]"},
                            {identity, {"--to", "NUMBER", "the recipient, E.164 (required)"}}, send,
                            "Without BODY the text is read from stdin."),
           CliCommand::leaf("inbox", "conversations, newest first", {},
                            {identity, {"--unread", "", "only conversations with unread messages"}},
                            inbox),
           CliCommand::leaf("read", "a conversation or a message in full (marks it read)",
                            {"CONVERSATION_OR_MESSAGE_ID"}, {identity}, read),
           CliCommand::leaf(
               "inject", "deliver an inbound SMS to a number of this server (operator)", {"[BODY]"},
               {{"--to", "NUMBER", "a number of this server (required)"},
                {"--from", "NUMBER", "the sender (required)"}},
               inject, "Without BODY the text is read from stdin.")})};
}

}  // namespace

}  // namespace svc::plugins::sms

SVC_CLI_COMMANDS(svc::plugins::sms::commands)
