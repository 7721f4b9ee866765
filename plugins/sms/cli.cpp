// The sms plugin's svcctl commands: `svcctl sms ...` here, `svcctl phones ...` in cli_phones.cpp,
// through the routes.
#include "cli_phones.h"

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

int send(CliContext& cli, const CliArgs& args) {
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
                                  sdk::urlComponent(id) + "/" + identityQuery(args));
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
  // What was printed stays printed (stdout holds one document under --json): a failure to
  // mark is said on stderr and in the exit status.
  int status = 0;
  for (const auto& m : messages) {
    if (m->getValue<bool>("is_read")) continue;
    const std::string id = m->getValue<std::string>("id");
    auto marked =
        cli.api("PATCH", "/api/messages/" + sdk::urlComponent(id) + "/" + identityQuery(args),
                R"({"is_read":true})");
    if (marked.status != 200) {
      cli.err() << "svcctl: could not mark " << id << " read (HTTP " << marked.status << ")\n";
      status = 1;
    }
  }
  return status;
}

// Messages without the conversation grouping: newest first, or oldest first after a cursor.
int list(CliContext& cli, const CliArgs& args) {
  if (args.has("--read") && args.has("--unread")) {
    throw sdk::CliUsageError("give --read or --unread, not both");
  }
  std::string query = sdk::queryFrom(args, {{"--created-after", "created_after"},
                                            {"--direction", "direction"},
                                            {"--phone", "phone"},
                                            {"--limit", "limit"},
                                            {"--offset", "offset"}});
  if (args.has("--read") || args.has("--unread")) {
    query += std::string(query.empty() ? "?" : "&") +
             "is_read=" + (args.has("--read") ? "true" : "false");
  }
  auto reply = cli.api("GET", "/api/messages/" + query);
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"ID", "DATE", "DIRECTION", "FROM", "TO", "CODE", "BODY"});
    auto results = page.getArray("results");
    for (std::size_t i = 0; results && i < results->size(); ++i) {
      auto m = results->getObject(static_cast<unsigned>(i));
      table.row({m->getValue<std::string>("id"),
                 m->getValue<std::string>("created_dt").substr(0, 19),
                 m->getValue<std::string>("direction"),
                 sdk::quoteForDetail(m->getValue<std::string>("from_number"), 20),
                 sdk::quoteForDetail(m->getValue<std::string>("to_number"), 20),
                 m->isNull("extracted_code") ? "-" : m->getValue<std::string>("extracted_code"),
                 sdk::quoteForDetail(m->optValue<std::string>("body", ""), 40)});
    }
    table.print(cli.out());
  });
  return 0;
}

// Read or unread: PATCH changes is_read; --replace sends it as PUT, the whole mutable state.
int mark(CliContext& cli, const CliArgs& args) {
  if (args.has("--read") == args.has("--unread"))
    throw sdk::CliUsageError("give --read or --unread");
  Poco::JSON::Object body;
  body.set("is_read", args.has("--read"));
  auto reply =
      cli.api(args.has("--replace") ? "PUT" : "PATCH",
              "/api/messages/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args),
              sdk::jsonText(body));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& m) {
    cli.out() << m.getValue<std::string>("id")
              << (m.getValue<bool>("is_read") ? " read" : " unread") << "\n";
  });
  return 0;
}

int wait(CliContext& cli, const CliArgs& args) {
  return sdk::printWaited(
      cli, cli.api("GET", "/api/messages/wait/" +
                              sdk::queryFrom(args, {{"--created-after", "created_after"},
                                                    {"--from", "from"},
                                                    {"--body", "body"},
                                                    {"--timeout", "timeout"}})));
}

int inject(CliContext& cli, const CliArgs& args) {
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
      phonesCommand(identity),
      CliCommand::group(
          "sms", "an identity's SMS: send, list, read, wait; inject (operator)",
          {CliCommand::leaf("send", "send an SMS; prints its id and status", {"[BODY]"},
                            {identity,
                             {"--to", "NUMBER", "the recipient, E.164", /*repeatable=*/false,
                              /*required=*/true}},
                            send, "Without BODY the text is read from stdin.")
               .calls({"POST /api/messages/send/"}),
           CliCommand::leaf("inbox", "conversations, newest first", {},
                            {identity, {"--unread", "", "only conversations with unread messages"}},
                            inbox)
               .calls({"GET /api/sms-inbox/"}),
           CliCommand::leaf("read", "a conversation or a message in full (marks it read)",
                            {"CONVERSATION_OR_MESSAGE_ID"}, {identity}, read)
               .calls({"GET /api/sms-inbox/{id}/", "GET /api/messages/{id}/",
                       "PATCH /api/messages/{id}/"}),
           CliCommand::leaf("list", "messages, newest first (oldest first after --created-after)",
                            {},
                            {identity,
                             {"--created-after", "TIME", "only newer than this ISO 8601 time"},
                             {"--direction", "incoming|outgoing", "only this direction"},
                             {"--phone", "PHONE_ID", "only this number's"},
                             {"--read", "", "only read messages"},
                             {"--unread", "", "only unread messages"},
                             {"--limit", "N", "page size (default 50, at most 200)"},
                             {"--offset", "N", "skip N"}},
                            list)
               .calls({"GET /api/messages/"}),
           CliCommand::leaf("mark", "mark a message read or unread", {"MESSAGE_ID"},
                            {identity,
                             {"--read", "", "mark it read"},
                             {"--unread", "", "mark it unread"},
                             {"--replace", "", "send PUT (every mutable field) instead of PATCH"}},
                            mark)
               .calls({"PATCH /api/messages/{id}/", "PUT /api/messages/{id}/"}),
           CliCommand::leaf(
               "wait", "wait for the next incoming SMS; prints its code", {},
               {identity,
                {"--created-after", "TIME", "an SMS newer than this (default: from now on)"},
                {"--from", "NUMBER", "only from this number, or its last 4+ digits"},
                {"--body", "TEXT", "only with TEXT in the body"},
                {"--timeout", "SECONDS",
                 "how long to wait, 1-120 (the server's default otherwise)"}},
               wait,
               "One call (GET /api/messages/wait/): answers at once when such an SMS is there,\n"
               "else when it arrives. Prints its extracted_code (--json: the message). Exits 124\n"
               "when nothing came within the timeout, 1 when the SMS carries no code.")
               .calls({"GET /api/messages/wait/"}),
           CliCommand::leaf(
               "inject", "deliver an inbound SMS to a number of this server (operator)", {"[BODY]"},
               {{"--to", "NUMBER", "a number of this server", /*repeatable=*/false,
                 /*required=*/true},
                {"--from", "NUMBER", "the sender", /*repeatable=*/false, /*required=*/true}},
               inject, "Without BODY the text is read from stdin.")
               .calls({"POST /admin/sms/inject/"})})};
}

}  // namespace

}  // namespace svc::plugins::sms

SVC_CLI_COMMANDS(svc::plugins::sms::commands)
