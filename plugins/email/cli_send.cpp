// `svcctl mail send|reply|forward` and the attachments they carry (`attach`, `attachment`,
// `download`), through the email routes.
#include "cli_commands.h"

#include <svc/sdk/util.h>

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

// Uploads a file. @return the attachment's record, as the server answered it.
sdk::CliReply upload(CliContext& cli, const CliArgs& args, const std::string& path) {
  std::string bytes;
  try {
    Poco::FileInputStream in(path);
    std::ostringstream all;
    all << in.rdbuf();
    bytes = all.str();
  } catch (const Poco::Exception& e) {
    throw sdk::CliError("cannot read " + path + ": " + e.displayText());
  }
  auto reply = cli.api(
      "POST",
      "/api/email-attachments/?filename=" + sdk::urlComponent(Poco::Path(path).getFileName()) +
          identityQuery(args, '&'),
      bytes, "application/octet-stream");
  cli.expect(reply, 201);
  return reply;
}

// The fields a new message shares (send, reply, forward): the text (--body, else stdin), copies
// and attachments uploaded first.
Poco::JSON::Object outgoing(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  body.set("content", args.has("--body") ? args.value("--body") : cli.readInput());
  if (auto cc = addresses(args.values("--cc")); cc->size() > 0) body.set("cc", cc);
  if (auto bcc = addresses(args.values("--bcc")); bcc->size() > 0) body.set("bcc", bcc);
  Poco::JSON::Array::Ptr attachments = new Poco::JSON::Array;
  for (const auto& path : args.values("--attach")) {
    attachments->add(upload(cli, args, path).json()->getValue<std::string>("uuid"));
  }
  if (attachments->size() > 0) body.set("attachment_uuids", attachments);
  return body;
}

int posted(CliContext& cli, const std::string& path, const Poco::JSON::Object& body) {
  auto reply = cli.api("POST", path, sdk::jsonText(body));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& m) {
    cli.out() << m.getValue<std::string>("id") << " " << m.getValue<std::string>("status") << "\n";
  });
  return 0;
}

int send(CliContext& cli, const CliArgs& args) {
  auto to = addresses(args.values("--to"));
  if (to->size() == 0) throw sdk::CliUsageError("give --to ADDR");
  Poco::JSON::Object body = outgoing(cli, args);
  body.set("to_email", to);
  body.set("subject", args.value("--subject"));
  return posted(cli, "/api/email-messages/compose/" + identityQuery(args), body);
}

int reply(CliContext& cli, const CliArgs& args) {
  const std::string route = args.has("--all") ? "/reply-all/" : "/reply/";
  return posted(
      cli, "/api/email-messages/" + sdk::urlComponent(args.arg(0)) + route + identityQuery(args),
      outgoing(cli, args));
}

int forward(CliContext& cli, const CliArgs& args) {
  auto to = addresses(args.values("--to"));
  if (to->size() == 0) throw sdk::CliUsageError("give --to ADDR");
  Poco::JSON::Object body = outgoing(cli, args);
  body.set("to_email", to);
  return posted(
      cli,
      "/api/email-messages/" + sdk::urlComponent(args.arg(0)) + "/forward/" + identityQuery(args),
      body);
}

void printAttachment(CliContext& cli, const Poco::JSON::Object& a) {
  cli.out() << a.getValue<std::string>("uuid") << " "
            << sdk::safeForTerminal(a.getValue<std::string>("filename")) << " ("
            << a.getValue<long>("size") << " bytes, " << a.getValue<std::string>("content_type")
            << ")\n";
}

int attach(CliContext& cli, const CliArgs& args) {
  auto reply = upload(cli, args, args.arg(0));
  cli.print(reply, [&](const Poco::JSON::Object& a) { printAttachment(cli, a); });
  return 0;
}

int attachment(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/email-attachments/" + sdk::urlComponent(args.arg(0)) + "/" +
                                  identityQuery(args));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& a) { printAttachment(cli, a); });
  return 0;
}

// The bytes, as they are, to --output or stdout (never through --json: they are not JSON).
int download(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/email-attachments/" + sdk::urlComponent(args.arg(0)) +
                                  "/download/" + identityQuery(args));
  cli.expect(reply, 200);
  if (!args.has("--output")) {
    cli.out() << reply.body;
    return 0;
  }
  try {
    Poco::FileOutputStream out(args.value("--output"));
    out << reply.body;
  } catch (const Poco::Exception& e) {
    throw sdk::CliError("cannot write " + args.value("--output") + ": " + e.displayText());
  }
  return 0;
}

}  // namespace

std::vector<CliCommand> sendCommands(const sdk::CliOption& identity) {
  const sdk::CliOption body{"--body", "TEXT", "the text (else read from stdin)"};
  const sdk::CliOption cc{"--cc", "ADDR[,ADDR]", "copy to", true};
  const sdk::CliOption bcc{"--bcc", "ADDR[,ADDR]", "blind copy to", true};
  const sdk::CliOption attach_file{"--attach", "FILE", "attach a file (uploaded first)", true};
  const char* prints = "Prints the new message's id and status (--json: the message).";
  return {
      CliCommand::leaf(
          "send", "send a message; prints its id and status", {},
          {identity,
           {"--to", "ADDR[,ADDR]", "recipients", /*repeatable=*/true, /*required=*/true},
           {"--subject", "S", "the subject", /*repeatable=*/false, /*required=*/true},
           cc,
           bcc,
           body,
           attach_file},
          send, prints)
          .calls({"POST /api/email-messages/compose/", "POST /api/email-attachments/"}),
      CliCommand::leaf(
          "reply", "reply to a message (to its Reply-To, else its From)", {"MESSAGE_ID"},
          {identity,
           {"--all", "", "reply to all: the sender, the message's To and Cc"},
           cc,
           bcc,
           body,
           attach_file},
          reply,
          std::string("The subject gets one Re: and the reply is threaded (In-Reply-To, "
                      "References). ") +
              prints)
          .calls({"POST /api/email-messages/{id}/reply/",
                  "POST /api/email-messages/{id}/reply-all/", "POST /api/email-attachments/"}),
      CliCommand::leaf(
          "forward", "forward a message, with its attachments", {"MESSAGE_ID"},
          {identity,
           {"--to", "ADDR[,ADDR]", "recipients", /*repeatable=*/true, /*required=*/true},
           cc,
           bcc,
           body,
           attach_file},
          forward,
          std::string("The subject gets one Fwd:; --body is the text above the "
                      "forwarded message. ") +
              prints)
          .calls({"POST /api/email-messages/{id}/forward/", "POST /api/email-attachments/"}),
      CliCommand::leaf("attach", "upload a file to attach later; prints its uuid", {"FILE"},
                       {identity}, attach,
                       "Prints `UUID NAME (SIZE bytes, TYPE)`; give the uuid in a body's "
                       "attachment_uuids. send, reply and forward --attach do this for you.")
          .calls({"POST /api/email-attachments/"}),
      CliCommand::leaf("attachment", "an attachment's name, size and type", {"UUID"}, {identity},
                       attachment)
          .calls({"GET /api/email-attachments/{uuid}/"}),
      CliCommand::leaf("download", "an attachment's bytes, to stdout or --output", {"UUID"},
                       {identity, {"--output", "FILE", "write the bytes to FILE"}}, download)
          .calls({"GET /api/email-attachments/{uuid}/download/"}),
  };
}

}  // namespace svc::plugins::email
