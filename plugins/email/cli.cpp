// The email plugin's svcctl commands (`svcctl mail ...`), through the email routes.
#include <svc/sdk/cli.h>

#include <Poco/FileStream.h>
#include <Poco/JSON/Array.h>
#include <Poco/Path.h>
#include <Poco/URI.h>

#include <sstream>

namespace svc::plugins::email {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
using sdk::identityQuery;

// --to a,b --to c → [a, b, c].
Poco::JSON::Array::Ptr addresses(const std::vector<std::string>& values) {
  Poco::JSON::Array::Ptr out = new Poco::JSON::Array;
  for (const auto& v : values) {
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (!item.empty()) out->add(item);
    }
  }
  return out;
}

int send(CliContext& cli, const CliArgs& args) {
  auto to = addresses(args.values("--to"));
  if (to->size() == 0) throw sdk::CliUsageError("give --to ADDR");
  if (!args.has("--subject")) throw sdk::CliUsageError("give --subject S");
  std::string content = args.value("--body");
  if (!args.has("--body")) {
    content = cli.readInput();
  }
  Poco::JSON::Array::Ptr attachments = new Poco::JSON::Array;
  for (const auto& path : args.values("--attach")) {
    Poco::FileInputStream in(path);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    std::string name;
    Poco::URI::encode(Poco::Path(path).getFileName(), "&=?#+/", name);
    auto reply =
        cli.api("POST", "/api/email-attachments/?filename=" + name + identityQuery(args, '&'),
                bytes.str(), "application/octet-stream");
    cli.expect(reply, 201);
    attachments->add(reply.json()->getValue<std::string>("uuid"));
  }
  Poco::JSON::Object body;
  body.set("to_email", to);
  body.set("subject", args.value("--subject"));
  body.set("content", content);
  if (auto cc = addresses(args.values("--cc")); cc->size() > 0) body.set("cc", cc);
  if (auto bcc = addresses(args.values("--bcc")); bcc->size() > 0) body.set("bcc", bcc);
  if (attachments->size() > 0) body.set("attachment_uuids", attachments);
  auto reply =
      cli.api("POST", "/api/email-messages/compose/" + identityQuery(args), sdk::jsonText(body));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& m) {
    cli.out() << m.getValue<std::string>("id") << " " << m.getValue<std::string>("status") << "\n";
  });
  return 0;
}

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
  const std::string& id = args.arg(0);
  std::vector<Poco::JSON::Object::Ptr> messages;
  auto reply = cli.api("GET", "/api/email-messages/" + id + "/" + identityQuery(args));
  if (reply.status == 200) {
    messages.push_back(reply.json());
  } else if (reply.status == 404) {  // not a message: a thread?
    reply = cli.api("GET", "/api/email-inbox/" + id + "/" + identityQuery(args));
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
  for (const auto& m : messages) {
    if (m->getValue<bool>("is_read")) continue;
    cli.api("PATCH",
            "/api/email-messages/" + m->getValue<std::string>("id") + "/" + identityQuery(args),
            R"({"is_read":true})");
  }
  return 0;
}

std::vector<CliCommand> commands() {
  const sdk::CliOption identity{"--identity", "UUID", "the identity (needed with an account key)"};
  return {CliCommand::group(
      "mail", "an identity's email: send, list, read",
      {CliCommand::leaf("send", "send a message; prints its id and status", {},
                        {identity,
                         {"--to", "ADDR[,ADDR]", "recipients (required)", true},
                         {"--subject", "S", "the subject (required)"},
                         {"--cc", "ADDR[,ADDR]", "copy to", true},
                         {"--bcc", "ADDR[,ADDR]", "blind copy to", true},
                         {"--body", "TEXT", "the text (else read from stdin)"},
                         {"--attach", "FILE", "attach a file", true}},
                        send),
       CliCommand::leaf("inbox", "threads, newest first", {},
                        {identity, {"--unread", "", "only threads with unread messages"}}, inbox),
       CliCommand::leaf("read", "a thread or a message in full (marks it read)",
                        {"THREAD_OR_MESSAGE_ID"}, {identity}, read)})};
}

}  // namespace

}  // namespace svc::plugins::email

SVC_CLI_COMMANDS(svc::plugins::email::commands)
