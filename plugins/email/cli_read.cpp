// `svcctl mail inbox|read|list|mark|wait`: reading mail, through the email routes.
#include "cli_commands.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/URI.h>

namespace svc::plugins::email {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
using sdk::identityQuery;

int inbox(CliContext& cli, const CliArgs& args) {
  std::string query = "?limit=200" + identityQuery(args, '&');
  if (args.has("--unread")) query += "&has_unread=true";
  auto reply = cli.api("GET", "/api/email-inbox/" + query);
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"THREAD", "LATEST", "UNREAD", "WITH", "SUBJECT"});
    auto list = page.getArray("results");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto t = list->getObject(static_cast<unsigned>(i));
      auto people = t->getArray("participants");
      std::string with = people->size() > 0 ? people->getElement<std::string>(0) : "";
      if (people->size() > 1) with += " +" + std::to_string(people->size() - 1);
      table.row({t->getValue<std::string>("thread_id"),
                 t->getValue<std::string>("latest_dt").substr(0, 19),
                 std::to_string(t->getValue<int>("unread_count")) + "/" +
                     std::to_string(t->getValue<int>("message_count")),
                 with, t->getValue<std::string>("subject")});
    }
    table.print(cli.out());
  });
  return 0;
}

void printMessage(std::ostream& out, const Poco::JSON::Object::Ptr& m) {
  auto join = [](const Poco::JSON::Array::Ptr& a) {
    std::string text;
    for (std::size_t i = 0; a && i < a->size(); ++i) {
      text += (i ? ", " : "") + a->getElement<std::string>(static_cast<unsigned>(i));
    }
    return text;
  };
  out << "Message: " << m->getValue<std::string>("id") << "\n"
      << "Date:    " << m->getValue<std::string>("created_dt") << "\n"
      << "From:    " << m->getValue<std::string>("from_email") << "\n"
      << "To:      " << join(m->getArray("to_email")) << "\n";
  if (m->getArray("cc")->size() > 0) out << "Cc:      " << join(m->getArray("cc")) << "\n";
  out << "Subject: " << m->getValue<std::string>("subject") << "\n";
  if (!m->isNull("status")) out << "Status:  " << m->getValue<std::string>("status") << "\n";
  // Each recipient that bounced, with the remote server's words.
  auto bounce = m->isNull("bounce") ? nullptr : m->getObject("bounce");
  auto bounced = bounce ? bounce->getArray("recipients") : nullptr;
  for (std::size_t i = 0; bounced && i < bounced->size(); ++i) {
    auto b = bounced->getObject(static_cast<unsigned>(i));
    out << "Bounced: " << b->getValue<std::string>("recipient") << " ("
        << b->getValue<std::string>("status") << ", " << b->getValue<std::string>("source") << ", "
        << b->getValue<std::string>("bounced_dt").substr(0, 19)
        << "): " << b->getValue<std::string>("reason") << "\n";
  }
  auto attachments = m->getArray("attachments");
  for (std::size_t i = 0; attachments && i < attachments->size(); ++i) {
    auto a = attachments->getObject(static_cast<unsigned>(i));
    out << "Attached: " << a->getValue<std::string>("filename") << " (" << a->getValue<long>("size")
        << " bytes, " << a->getValue<std::string>("uuid") << ")\n";
  }
  out << "\n" << m->getValue<std::string>("content") << "\n";
}

// A message, or a thread's messages, in full; then marks them read as a mail client would.
int read(CliContext& cli, const CliArgs& args) {
  const std::string id = sdk::urlComponent(args.arg(0));
  std::vector<Poco::JSON::Object::Ptr> messages;
  auto reply =
      cli.api("GET", "/api/email-messages/" + sdk::urlComponent(id) + "/" + identityQuery(args));
  if (reply.status == 200) {
    messages.push_back(reply.json());
  } else if (reply.status == 404) {  // not a message: a thread?
    reply = cli.api("GET", "/api/email-inbox/" + sdk::urlComponent(id) + "/" + identityQuery(args));
    cli.expect(reply, 200);
    auto list = reply.json()->getArray("messages");
    for (std::size_t i = 0; i < list->size(); ++i) {
      messages.push_back(list->getObject(static_cast<unsigned>(i)));
    }
  } else {
    cli.expect(reply, 200);
  }
  cli.print(reply, [&](const Poco::JSON::Object&) {
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (i) cli.out() << "\n" << std::string(72, '-') << "\n";
      printMessage(cli.out(), messages[i]);
    }
  });
  // What was printed stays printed (stdout holds one document under --json): a failure to
  // mark is said on stderr and in the exit status.
  int status = 0;
  for (const auto& m : messages) {
    if (m->getValue<bool>("is_read")) continue;
    const std::string id = m->getValue<std::string>("id");
    auto marked =
        cli.api("PATCH", "/api/email-messages/" + sdk::urlComponent(id) + "/" + identityQuery(args),
                R"({"is_read":true})");
    if (marked.status != 200) {
      cli.err() << "svcctl: could not mark " << id << " read (HTTP " << marked.status << ")\n";
      status = 1;
    }
  }
  return status;
}

// The authentication verdict as the list shows it: pass, fail, none, "quarantined" when DMARC
// asked for it, "-" for mail that has none (outgoing, or older than the checks).
std::string verdictOf(const Poco::JSON::Object& m) {
  if (m.optValue("quarantined", false)) return "quarantined";
  auto a = m.getObject("authentication");
  return a ? a->optValue<std::string>("verdict", "-") : "-";
}

// Messages oldest first, without bodies: the list an agent polls with --created-after.
int list(CliContext& cli, const CliArgs& args) {
  if (args.has("--read") && args.has("--unread")) {
    throw sdk::CliUsageError("give --read or --unread, not both");
  }
  std::string query = sdk::queryFrom(args, {{"--created-after", "created_after"},
                                            {"--direction", "direction"},
                                            {"--thread", "thread_id"},
                                            {"--from", "from_email"},
                                            {"--inbox", "inbox"},
                                            {"--quarantined", "quarantined"},
                                            {"--limit", "limit"},
                                            {"--offset", "offset"}});
  if (args.has("--read") || args.has("--unread")) {
    query += std::string(query.empty() ? "?" : "&") +
             "is_read=" + (args.has("--read") ? "true" : "false");
  }
  if (args.has("--authenticated")) {
    query += std::string(query.empty() ? "?" : "&") + "authenticated=true";
  }
  auto reply = cli.api("GET", "/api/email-messages/" + query);
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table(
        {"ID", "DATE", "DIRECTION", "STATUS", "FROM", "VERDICT", "CODE", "SUBJECT"});
    auto results = page.getArray("results");
    for (std::size_t i = 0; results && i < results->size(); ++i) {
      auto m = results->getObject(static_cast<unsigned>(i));
      table.row({m->getValue<std::string>("id"),
                 m->getValue<std::string>("created_dt").substr(0, 19),
                 m->getValue<std::string>("direction"),
                 m->isNull("status") ? "-" : m->getValue<std::string>("status"),
                 sdk::quoteForDetail(m->getValue<std::string>("from_email"), 40), verdictOf(*m),
                 m->isNull("extracted_code") ? "-" : m->getValue<std::string>("extracted_code"),
                 sdk::quoteForDetail(m->getValue<std::string>("subject"), 60)});
    }
    table.print(cli.out());
  });
  return 0;
}

// Read or unread: PATCH changes is_read; --replace sends it as PUT, the whole mutable state.
int mark(CliContext& cli, const CliArgs& args) {
  if (args.has("--read") == args.has("--unread")) {
    throw sdk::CliUsageError("give --read or --unread");
  }
  Poco::JSON::Object body;
  body.set("is_read", args.has("--read"));
  auto reply =
      cli.api(args.has("--replace") ? "PUT" : "PATCH",
              "/api/email-messages/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args),
              sdk::jsonText(body));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& m) {
    cli.out() << m.getValue<std::string>("id")
              << (m.getValue<bool>("is_read") ? " read" : " unread") << "\n";
  });
  return 0;
}

int wait(CliContext& cli, const CliArgs& args) {
  std::string query = sdk::queryFrom(args, {{"--created-after", "created_after"},
                                            {"--from", "from"},
                                            {"--subject", "subject"},
                                            {"--body", "body"},
                                            {"--timeout", "timeout"}});
  if (args.has("--authenticated")) {
    query += std::string(query.empty() ? "?" : "&") + "authenticated=true";
  }
  return sdk::printWaited(cli, cli.api("GET", "/api/email-messages/wait/" + query));
}

}  // namespace

std::vector<CliCommand> readCommands(const sdk::CliOption& identity) {
  return {
      CliCommand::leaf("inbox", "threads, newest first", {},
                       {identity, {"--unread", "", "only threads with unread messages"}}, inbox)
          .calls({"GET /api/email-inbox/"}),
      CliCommand::leaf("read", "a thread or a message in full (marks it read)",
                       {"THREAD_OR_MESSAGE_ID"}, {identity}, read,
                       "Under --json prints the message, or the thread {thread_id, subject, "
                       "messages}.")
          .calls({"GET /api/email-messages/{id}/", "GET /api/email-inbox/{id}/",
                  "PATCH /api/email-messages/{id}/"}),
      CliCommand::leaf("list",
                       "messages oldest first, without bodies (with their codes and, outgoing, "
                       "their delivery status)",
                       {},
                       {identity,
                        {"--created-after", "TIME", "only newer than this ISO 8601 time (strict)"},
                        {"--direction", "incoming|outgoing", "only this direction"},
                        {"--read", "", "only read messages"},
                        {"--unread", "", "only unread messages"},
                        {"--thread", "THREAD_ID", "only this thread's"},
                        {"--from", "ADDR", "only from this address"},
                        {"--inbox", "INBOX_ID", "only this inbox's"},
                        {"--authenticated", "", "only mail whose verdict is pass"},
                        {"--quarantined", "false|true|include",
                         "DMARC-quarantined mail: left out (default), only it, or with the rest"},
                        {"--limit", "N", "page size (default 50, at most 200)"},
                        {"--offset", "N", "skip N"}},
                       list)
          .calls({"GET /api/email-messages/"}),
      CliCommand::leaf("mark", "mark a message read or unread", {"MESSAGE_ID"},
                       {identity,
                        {"--read", "", "mark it read"},
                        {"--unread", "", "mark it unread"},
                        {"--replace", "", "send PUT (every mutable field) instead of PATCH"}},
                       mark)
          .calls({"PATCH /api/email-messages/{id}/", "PUT /api/email-messages/{id}/"}),
      CliCommand::leaf(
          "wait", "wait for the next incoming message; prints its code", {},
          {identity,
           {"--created-after", "TIME", "a message newer than this (default: from now on)"},
           {"--from", "ADDR", "only from this address, or this domain (and its subdomains)"},
           {"--subject", "TEXT", "only with TEXT in the subject"},
           {"--body", "TEXT", "only with TEXT in the body"},
           {"--authenticated", "", "only mail whose verdict is pass (SPF/DKIM/DMARC)"},
           {"--timeout", "SECONDS", "how long to wait, 1-120 (the server's default otherwise)"}},
          wait,
          "One call (GET /api/email-messages/wait/): answers at once when such a message is\n"
          "there, else when it arrives. Prints its extracted_code (--json: the message). Exits\n"
          "124 when nothing came within the timeout, 1 when the message carries no code.")
          .calls({"GET /api/email-messages/wait/"}),
  };
}

}  // namespace svc::plugins::email
