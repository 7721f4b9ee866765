// The passwords plugin's svcctl commands: `svcctl passwords ...`, through the routes. With
// end-to-end encryption set up for the account, add and edit seal the protected fields on this
// machine and get opens them (the passphrase from --passphrase-file, SVC_VAULT_PASSPHRASE_FILE or
// the terminal); without it they pass as given. An entry's protected fields are printed to a
// terminal, or with --reveal (`--json` only with --reveal).
#include <svc/sdk/cli.h>
#include <svc/sdk/e2e_cli.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/URI.h>

#include <algorithm>

namespace svc::plugins::passwords {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
using sdk::identityQuery;

const std::vector<std::string> kProtected = {"username", "password", "notes"};

// A password from stdin, one line (a trailing line break is not part of it).
std::string passwordFromStdin(CliContext& cli) {
  std::string text = cli.readInput();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) throw sdk::CliError("no password on stdin");
  return text;
}

// Someone else may have written any of these: no escape sequence reaches the terminal.
void printEntry(CliContext& cli, const Poco::JSON::Object& e, bool reveal) {
  auto line = [&](const char* label, const std::string& field) {
    const bool hidden = !reveal && std::count(kProtected.begin(), kProtected.end(), field);
    cli.out() << label
              << (hidden ? "(hidden: --reveal prints it)"
                         : sdk::safeForTerminal(e.optValue<std::string>(field, "")))
              << "\n";
  };
  line("uuid:     ", "uuid");
  line("identity: ", "identity");
  line("domain:   ", "domain");
  line("username: ", "username");
  line("password: ", "password");
  line("created:  ", "created_dt");
  line("updated:  ", "updated_dt");
  const std::string notes = e.optValue<std::string>("notes", "");
  if (reveal && !notes.empty()) cli.out() << "notes:\n" << sdk::safeForTerminal(notes) << "\n";
}

// Prints an entry the server answered: its protected fields opened when they are to be shown (on
// a terminal or with --reveal; under --json only with --reveal), else left out.
void showEntry(CliContext& cli, const CliArgs& args, sdk::e2e::CliVault& vault,
               const sdk::CliReply& reply) {
  const bool reveal = args.has("--reveal") || (!cli.json() && sdk::e2e::printsToTerminal(cli));
  auto entry = reply.json();
  if (reveal) {
    vault.openFields(*entry, kProtected);
  } else {
    for (const auto& field : kProtected) entry->remove(field);
  }
  sdk::CliReply shown = reply;
  shown.body = sdk::jsonText(*entry);
  cli.print(shown, [&](const Poco::JSON::Object& e) { printEntry(cli, e, reveal); });
}

int list(CliContext& cli, const CliArgs& args) {
  std::string query = "?limit=200" + identityQuery(args, '&');
  if (args.has("--domain")) query += "&domain=" + sdk::urlComponent(args.value("--domain"));
  if (args.has("--search")) query += "&search=" + sdk::urlComponent(args.value("--search"));
  auto reply = cli.api("GET", "/api/passwords/" + query);
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"UUID", "DOMAIN", "USERNAME", "UPDATED"});
    auto list = page.getArray("results");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto e = list->getObject(static_cast<unsigned>(i));
      const std::string username = e->optValue<std::string>("username", "");
      table.row({e->getValue<std::string>("uuid"),
                 sdk::quoteForDetail(e->getValue<std::string>("domain"), 48),
                 sdk::e2e::isSealed(username) ? "(sealed)" : sdk::quoteForDetail(username, 32),
                 e->getValue<std::string>("updated_dt").substr(0, 19)});
    }
    table.print(cli.out());
  });
  return 0;
}

// The body of add and edit: the fields the options give, the protected ones sealed when the
// account has end-to-end encryption.
Poco::JSON::Object entryBody(CliContext& cli, const CliArgs& args, sdk::e2e::CliVault& vault) {
  Poco::JSON::Object body;
  for (const char* field : {"domain", "username", "notes"}) {
    const std::string option = std::string("--") + field;
    if (args.has(option)) body.set(field, args.value(option));
  }
  if (args.has("--password-stdin")) {
    std::string password = passwordFromStdin(cli);
    body.set("password", password);
    sdk::e2e::wipe(password);
  }
  vault.sealFields(body, kProtected);
  return body;
}

int add(CliContext& cli, const CliArgs& args) {
  sdk::e2e::CliVault vault(cli, args);
  if (!args.has("--password-stdin") && vault.endToEnd()) {
    throw sdk::CliError(
        "this account has end-to-end encryption: give the password with --password-stdin (the "
        "server must never know it, so it does not generate one)");
  }
  Poco::JSON::Object body = entryBody(cli, args, vault);
  body.set("domain", args.arg(0));
  auto reply = cli.api("POST", "/api/passwords/" + identityQuery(args), sdk::jsonText(body),
                       "application/json", vault.sealedToHeaders());
  cli.expect(reply, 201);
  showEntry(cli, args, vault, reply);
  return 0;
}

int get(CliContext& cli, const CliArgs& args) {
  sdk::e2e::CliVault vault(cli, args);
  auto reply = cli.api(
      "GET", "/api/passwords/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args));
  cli.expect(reply, 200);
  showEntry(cli, args, vault, reply);
  return 0;
}

int edit(CliContext& cli, const CliArgs& args) {
  sdk::e2e::CliVault vault(cli, args);
  Poco::JSON::Object body = entryBody(cli, args, vault);
  if (body.size() == 0) {
    throw sdk::CliUsageError("give --domain, --username, --notes or --password-stdin");
  }
  auto reply =
      cli.api(args.has("--replace") ? "PUT" : "PATCH",
              "/api/passwords/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args),
              sdk::jsonText(body), "application/json", vault.sealedToHeaders());
  cli.expect(reply, 200);
  showEntry(cli, args, vault, reply);
  return 0;
}

int remove(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api(
      "DELETE", "/api/passwords/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args));
  cli.expect(reply, 204);
  if (!cli.json()) cli.out() << "deleted " << sdk::safeForTerminal(args.arg(0)) << "\n";
  return 0;
}

int generate(CliContext& cli, const CliArgs& args) {
  std::string query = "?length=" + sdk::urlComponent(args.value("--length", "16"));
  for (const char* cls : {"digits", "lowercase", "uppercase", "special"}) {
    if (args.has(std::string("--no-") + cls)) query += std::string("&") + cls + "=false";
  }
  if (args.has("--exclude"))
    query += "&exclude_chars=" + sdk::urlComponent(args.value("--exclude"));
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
      {"--password-stdin", "", "read the password from stdin (one line)"},
      {"--reveal", "", "print the protected fields (else only on a terminal; --json only so)"},
      sdk::e2e::passphraseFileOption()};
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
                        list)
           .calls({"GET /api/passwords/"}),
       CliCommand::leaf("add", "store an entry; prints it", {"DOMAIN"}, with({identity}, fields),
                        add,
                        "Without --password-stdin the server generates the password (only for "
                        "accounts without end-to-end encryption). With end-to-end encryption set "
                        "up, username, password and notes are sealed here to the account's key "
                        "(checked against the vault passphrase first).")
           .calls({"POST /api/passwords/", "GET /api/encryption/"}),
       CliCommand::leaf("get", "one entry, with its password on a terminal or with --reveal",
                        {"UUID"},
                        {identity,
                         {"--reveal", "", "print the protected fields (--json only so)"},
                         sdk::e2e::passphraseFileOption()},
                        get,
                        "With end-to-end encryption set up the protected fields are opened here, "
                        "with the vault passphrase.")
           .calls({"GET /api/passwords/{uuid}/", "GET /api/encryption/"}),
       CliCommand::leaf("edit", "change the fields given; prints the entry", {"UUID"},
                        with({identity,
                              {"--domain", "DOMAIN", "the new domain"},
                              {"--replace", "",
                               "send PUT (every field: --domain, --username, --notes, "
                               "--password-stdin) instead of PATCH"}},
                             fields),
                        edit)
           .calls({"PATCH /api/passwords/{uuid}/", "PUT /api/passwords/{uuid}/",
                   "GET /api/encryption/"}),
       CliCommand::leaf("delete", "delete an entry", {"UUID"}, {identity}, remove)
           .calls({"DELETE /api/passwords/{uuid}/"}),
       CliCommand::leaf("generate", "print a random password", {},
                        {{"--length", "N", "4-128 (default 16)"},
                         {"--no-digits", "", "no digits"},
                         {"--no-lowercase", "", "no lower-case letters"},
                         {"--no-uppercase", "", "no upper-case letters"},
                         {"--no-special", "", "no punctuation"},
                         {"--exclude", "CHARS", "characters never to use"}},
                        generate)
           .calls({"GET /api/passwords/generate-password/"})})};
}

}  // namespace

}  // namespace svc::plugins::passwords

SVC_CLI_COMMANDS(svc::plugins::passwords::commands)
