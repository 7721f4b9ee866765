// The passwords plugin's svcctl commands: `svcctl passwords ...`, through the routes. Values
// pass as given and print as the server returns them (sealing and opening `e2e::` values on this
// side is the vault's passphrase work, not done here yet).
#include <svc/sdk/cli.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/URI.h>

namespace svc::plugins::passwords {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
using sdk::identityQuery;

std::string encoded(const std::string& value) {
  std::string out;
  Poco::URI::encode(value, "&=+?#/;", out);
  return out;
}

// A password from stdin, one line (a trailing line break is not part of it).
std::string passwordFromStdin(CliContext& cli) {
  std::string text = cli.readInput();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) throw sdk::CliError("no password on stdin");
  return text;
}

// Someone else may have written any of these: no escape sequence reaches the terminal.
void printEntry(CliContext& cli, const Poco::JSON::Object& e) {
  auto line = [&](const char* label, const std::string& field) {
    cli.out() << label << sdk::safeForTerminal(e.optValue<std::string>(field, "")) << "\n";
  };
  line("uuid:     ", "uuid");
  line("identity: ", "identity");
  line("domain:   ", "domain");
  line("username: ", "username");
  line("password: ", "password");
  line("created:  ", "created_dt");
  line("updated:  ", "updated_dt");
  const std::string notes = e.optValue<std::string>("notes", "");
  if (!notes.empty()) cli.out() << "notes:\n" << sdk::safeForTerminal(notes) << "\n";
}

int list(CliContext& cli, const CliArgs& args) {
  std::string query = "?limit=200" + identityQuery(args, '&');
  if (args.has("--domain")) query += "&domain=" + encoded(args.value("--domain"));
  if (args.has("--search")) query += "&search=" + encoded(args.value("--search"));
  auto reply = cli.api("GET", "/api/passwords/" + query);
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"UUID", "DOMAIN", "USERNAME", "UPDATED"});
    auto list = page.getArray("results");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto e = list->getObject(static_cast<unsigned>(i));
      table.row({e->getValue<std::string>("uuid"),
                 sdk::quoteForDetail(e->getValue<std::string>("domain"), 48),
                 sdk::quoteForDetail(e->getValue<std::string>("username"), 32),
                 e->getValue<std::string>("updated_dt").substr(0, 19)});
    }
    table.print(cli.out());
  });
  return 0;
}

// The body of add and edit: the fields the options give.
Poco::JSON::Object entryBody(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  for (const char* field : {"domain", "username", "notes"}) {
    const std::string option = std::string("--") + field;
    if (args.has(option)) body.set(field, args.value(option));
  }
  if (args.has("--password-stdin")) body.set("password", passwordFromStdin(cli));
  return body;
}

int add(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body = entryBody(cli, args);
  body.set("domain", args.arg(0));
  auto reply = cli.api("POST", "/api/passwords/" + identityQuery(args), sdk::jsonText(body));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& e) { printEntry(cli, e); });
  return 0;
}

int get(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/passwords/" + encoded(args.arg(0)) + "/" + identityQuery(args));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& e) { printEntry(cli, e); });
  return 0;
}

int edit(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body = entryBody(cli, args);
  if (body.size() == 0) {
    throw sdk::CliUsageError("give --domain, --username, --notes or --password-stdin");
  }
  auto reply =
      cli.api("PATCH", "/api/passwords/" + encoded(args.arg(0)) + "/" + identityQuery(args),
              sdk::jsonText(body));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& e) { printEntry(cli, e); });
  return 0;
}

int remove(CliContext& cli, const CliArgs& args) {
  auto reply =
      cli.api("DELETE", "/api/passwords/" + encoded(args.arg(0)) + "/" + identityQuery(args));
  cli.expect(reply, 204);
  if (!cli.json()) cli.out() << "deleted " << sdk::safeForTerminal(args.arg(0)) << "\n";
  return 0;
}

int generate(CliContext& cli, const CliArgs& args) {
  std::string query = "?length=" + encoded(args.value("--length", "16"));
  for (const char* cls : {"digits", "lowercase", "uppercase", "special"}) {
    if (args.has(std::string("--no-") + cls)) query += std::string("&") + cls + "=false";
  }
  if (args.has("--exclude")) query += "&exclude_chars=" + encoded(args.value("--exclude"));
  auto reply = cli.api("GET", "/api/passwords/generate-password/" + query);
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& o) {
    cli.out() << sdk::safeForTerminal(o.getValue<std::string>("password")) << "\n";
  });
  return 0;
}

std::vector<CliCommand> commands() {
  const sdk::CliOption identity{"--identity", "UUID", "the identity (needed with an account key)"};
  const std::vector<sdk::CliOption> fields = {
      {"--username", "NAME", "the account name at that domain"},
      {"--notes", "TEXT", "free text"},
      {"--password-stdin", "", "read the password from stdin (one line)"}};
  auto with = [](std::vector<sdk::CliOption> a, const std::vector<sdk::CliOption>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  return {CliCommand::group(
      "passwords", "an identity's password entries, and a password generator",
      {CliCommand::leaf("list", "entries, newest first", {},
                        {identity,
                         {"--domain", "DOMAIN", "only this domain (exact)"},
                         {"--search", "TEXT", "only domains containing TEXT"}},
                        list),
       CliCommand::leaf("add", "store an entry; prints it", {"DOMAIN"}, with({identity}, fields),
                        add,
                        "Without --password-stdin the server generates the password (only for "
                        "accounts without end-to-end encryption) and prints it."),
       CliCommand::leaf("get", "one entry, with its password", {"UUID"}, {identity}, get),
       CliCommand::leaf("edit", "change the fields given; prints the entry", {"UUID"},
                        with({identity, {"--domain", "DOMAIN", "the new domain"}}, fields), edit),
       CliCommand::leaf("delete", "delete an entry", {"UUID"}, {identity}, remove),
       CliCommand::leaf("generate", "print a random password", {},
                        {{"--length", "N", "4-128 (default 16)"},
                         {"--no-digits", "", "no digits"},
                         {"--no-lowercase", "", "no lower-case letters"},
                         {"--no-uppercase", "", "no upper-case letters"},
                         {"--no-special", "", "no punctuation"},
                         {"--exclude", "CHARS", "characters never to use"}},
                        generate)})};
}

}  // namespace

}  // namespace svc::plugins::passwords

SVC_CLI_COMMANDS(svc::plugins::passwords::commands)
