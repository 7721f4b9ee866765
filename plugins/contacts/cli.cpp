// The contacts plugin's svcctl commands: `svcctl contacts list|add|find|search|edit|delete`,
// through the routes.
#include <svc/sdk/cli.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/URI.h>

namespace svc::plugins::contacts {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
using sdk::identityQuery;

std::string field(const Poco::JSON::Object& c, const std::string& name) {
  return c.isNull(name) ? "" : c.getValue<std::string>(name);
}

// Someone else wrote these: no escape sequence reaches the terminal.
void printContact(CliContext& cli, const Poco::JSON::Object& c) {
  cli.out() << c.getValue<std::string>("uuid") << "\n";
  for (const char* name : {"display_name", "nickname", "email", "phone_number"}) {
    if (!c.isNull(name)) {
      cli.out() << "  " << name << ": " << sdk::safeForTerminal(field(c, name)) << "\n";
    }
  }
}

void printTable(CliContext& cli, const sdk::CliReply& reply) {
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"UUID", "NAME", "EMAIL", "PHONE"});
    auto list = page.getArray("results");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto c = list->getObject(static_cast<unsigned>(i));
      // Cut by characters, never inside one; a newline or escape must not break the table.
      table.row({c->getValue<std::string>("uuid"),
                 sdk::quoteForDetail(field(*c, "display_name"), 32),
                 sdk::quoteForDetail(field(*c, "email"), 40),
                 sdk::quoteForDetail(field(*c, "phone_number"), 20)});
    }
    table.print(cli.out());
  });
}

// Each field's option: the API's names, in the command line's style.
const std::pair<const char*, const char*> kFieldOptions[] = {{"--email", "email"},
                                                             {"--phone", "phone_number"},
                                                             {"--name", "display_name"},
                                                             {"--nickname", "nickname"}};

// The body of add and edit: the options given; `--clear NAME` sets NAME to null.
std::string body(const CliArgs& args) {
  Poco::JSON::Object o;
  for (const auto& [option, name] : kFieldOptions) {
    if (args.has(option)) o.set(name, args.value(option));
  }
  if (args.has("--clear")) {
    for (const auto& name : args.values("--clear")) o.set(name, Poco::Dynamic::Var());
  }
  return sdk::jsonText(o);
}

int list(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/contacts/?limit=200" + identityQuery(args, '&'));
  cli.expect(reply, 200);
  printTable(cli, reply);
  return 0;
}

int add(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("POST", "/api/contacts/" + identityQuery(args), body(args));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& c) { printContact(cli, c); });
  return 0;
}

int find(CliContext& cli, const CliArgs& args) {
  const std::string& what = args.arg(0);
  const std::string key = what.find('@') != std::string::npos ? "email" : "phone_number";
  auto reply = cli.api("GET", "/api/contacts/find/?" + key + "=" + sdk::urlComponent(what) +
                                  identityQuery(args, '&'));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& c) { printContact(cli, c); });
  return 0;
}

int show(CliContext& cli, const CliArgs& args) {
  auto reply =
      cli.api("GET", "/api/contacts/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& c) { printContact(cli, c); });
  return 0;
}

int search(CliContext& cli, const CliArgs& args) {
  auto reply =
      cli.api("GET", "/api/contacts/search/?limit=200&q=" + sdk::urlComponent(args.arg(0)) +
                         identityQuery(args, '&'));
  cli.expect(reply, 200);
  printTable(cli, reply);
  return 0;
}

int edit(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api(
      "PATCH", "/api/contacts/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args),
      body(args));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& c) { printContact(cli, c); });
  return 0;
}

int remove(CliContext& cli, const CliArgs& args) {
  cli.expect(cli.api("DELETE",
                     "/api/contacts/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args)),
             204);
  cli.out() << "deleted " << args.arg(0) << "\n";
  return 0;
}

std::vector<CliCommand> commands() {
  const sdk::CliOption identity{"--identity", "UUID", "the identity (needed with an account key)"};
  const std::vector<sdk::CliOption> fields = {identity,
                                              {"--email", "ADDRESS", "the email address"},
                                              {"--phone", "NUMBER", "the phone number, E.164"},
                                              {"--name", "NAME", "the display name"},
                                              {"--nickname", "NAME", "the nickname"}};
  auto edit_fields = fields;
  edit_fields.push_back({"--clear", "FIELD",
                         "set FIELD (email, phone_number, display_name, nickname) to null", true});
  return {CliCommand::group(
      "contacts", "an identity's contacts: list, add, show, find, search, edit, delete",
      {CliCommand::leaf("list", "contacts, newest first", {}, {identity}, list)
           .calls({"GET /api/contacts/"}),
       CliCommand::leaf("add", "add a contact (an email or a phone number at least)", {}, fields,
                        add)
           .calls({"POST /api/contacts/"}),
       CliCommand::leaf("show", "one contact", {"UUID"}, {identity}, show)
           .calls({"GET /api/contacts/{uuid}/"}),
       CliCommand::leaf("find", "the contact with an email address or phone number",
                        {"EMAIL_OR_NUMBER"}, {identity}, find)
           .calls({"GET /api/contacts/find/"}),
       CliCommand::leaf("search", "contacts whose name, email or number contains TEXT", {"TEXT"},
                        {identity}, search)
           .calls({"GET /api/contacts/search/"}),
       CliCommand::leaf("edit", "change the fields given", {"UUID"}, edit_fields, edit)
           .calls({"PATCH /api/contacts/{uuid}/"}),
       CliCommand::leaf("delete", "delete a contact", {"UUID"}, {identity}, remove)
           .calls({"DELETE /api/contacts/{uuid}/"})})};
}

}  // namespace

}  // namespace svc::plugins::contacts

SVC_CLI_COMMANDS(svc::plugins::contacts::commands)
