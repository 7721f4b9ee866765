// The secrets plugin's svcctl commands: `svcctl secrets list|get|set|delete`, through the routes,
// naming a secret by its key. A value is printed only with --reveal (`--json` too leaves values
// and notes out without it). With end-to-end encryption set up for the account, `set` seals the
// value and notes on this machine and `get --reveal` opens them (the passphrase from
// --passphrase-file, SVC_VAULT_PASSPHRASE_FILE or the terminal); without it values pass as given.
#include <svc/sdk/cli.h>
#include <svc/sdk/e2e_cli.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/URI.h>

#include <unistd.h>

#include <iostream>

namespace svc::plugins::secrets {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
using sdk::identityQuery;

const std::vector<std::string> kProtected = {"value", "notes"};

// What is printed of a secret, or of a page of them, unless the value was asked for.
void hideValues(Poco::JSON::Object& o) {
  o.remove("value");
  o.remove("notes");
}

// Prints a secret (or a page) as --json or `human`, without values unless `reveal`.
void printHidden(CliContext& cli, const sdk::CliReply& reply, bool reveal,
                 const std::function<void(const Poco::JSON::Object&)>& human) {
  if (reveal || !cli.json()) return cli.print(reply, human);
  auto o = reply.json();
  hideValues(*o);
  if (auto results = o->getArray("results")) {
    for (std::size_t i = 0; i < results->size(); ++i) {
      hideValues(*results->getObject(static_cast<unsigned>(i)));
    }
  }
  sdk::CliReply hidden = reply;
  hidden.body = sdk::jsonText(*o);
  cli.print(hidden, human);
}

std::string query(const CliArgs& args, const std::string& key) {
  return "?limit=200&key=" + sdk::urlComponent(key) + identityQuery(args, '&');
}

// The secret with that key, in the identity given (or the key's, or the only one): nullptr when
// there is none. @throws CliError when the key is in several identities of the account.
Poco::JSON::Object::Ptr lookUp(CliContext& cli, const CliArgs& args, const std::string& key) {
  auto reply = cli.api("GET", "/api/secrets/" + query(args, key));
  cli.expect(reply, 200);
  auto results = reply.json()->getArray("results");
  if (!results || results->size() == 0) return nullptr;
  if (results->size() > 1) {
    throw sdk::CliError("the key " + sdk::quoteForDetail(key) +
                        " is in several identities; give --identity UUID");
  }
  return results->getObject(0);
}

Poco::JSON::Object::Ptr mustFind(CliContext& cli, const CliArgs& args, const std::string& key) {
  auto found = lookUp(cli, args, key);
  if (!found) throw sdk::CliError("no secret has the key " + sdk::quoteForDetail(key));
  return found;
}

// A revealed value as stored, for a script (`$(svcctl secrets get KEY --reveal)`); on a
// terminal, without the escape sequences it might hold.
void printValue(CliContext& cli, const std::string& value) {
  const bool terminal = &cli.out() == &std::cout && ::isatty(STDOUT_FILENO);
  cli.out() << (terminal ? sdk::safeForTerminal(value) : value) << "\n";
}

std::string path(const Poco::JSON::Object& secret, const CliArgs& args) {
  return "/api/secrets/" + secret.getValue<std::string>("uuid") + "/" + identityQuery(args);
}

int list(CliContext& cli, const CliArgs& args) {
  std::string q = "?limit=200" + identityQuery(args, '&');
  if (args.count() > 0) q += "&key=" + sdk::urlComponent(args.arg(0));
  auto reply = cli.api("GET", "/api/secrets/" + q);
  cli.expect(reply, 200);
  printHidden(cli, reply, false, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"KEY", "UPDATED", "IDENTITY", "UUID"});
    auto results = page.getArray("results");
    for (std::size_t i = 0; results && i < results->size(); ++i) {
      auto s = results->getObject(static_cast<unsigned>(i));
      table.row({s->getValue<std::string>("key"),
                 s->getValue<std::string>("updated_dt").substr(0, 19),
                 s->getValue<std::string>("identity"), s->getValue<std::string>("uuid")});
    }
    table.print(cli.out());
  });
  return 0;
}

int get(CliContext& cli, const CliArgs& args) {
  auto secret = mustFind(cli, args, args.arg(0));
  const bool reveal = args.has("--reveal");
  if (reveal) sdk::e2e::CliVault(cli, args).openFields(*secret, kProtected);
  sdk::CliReply reply;
  reply.status = 200;
  reply.content_type = "application/json";
  reply.body = sdk::jsonText(*secret);
  printHidden(cli, reply, reveal, [&](const Poco::JSON::Object& s) {
    if (!reveal) {
      cli.out() << s.getValue<std::string>("key") << " is set (identity "
                << s.getValue<std::string>("identity") << ", updated "
                << s.getValue<std::string>("updated_dt").substr(0, 19)
                << "); --reveal prints its value\n";
      return;
    }
    printValue(cli, s.getValue<std::string>("value"));
  });
  return 0;
}

int set(CliContext& cli, const CliArgs& args) {
  const std::string& key = args.arg(0);
  std::string value = cli.readInput();
  // `echo VALUE |` and a file's last line end with a line break that is not the value's.
  if (!value.empty() && value.back() == '\n') value.pop_back();
  if (!value.empty() && value.back() == '\r') value.pop_back();
  Poco::JSON::Object body;
  body.set("value", value);
  sdk::e2e::wipe(value);
  if (args.has("--notes")) body.set("notes", args.value("--notes"));
  sdk::e2e::CliVault vault(cli, args);
  vault.sealFields(body, kProtected);
  const sdk::CliHeaders sealed_to = vault.sealedToHeaders();
  // PATCH changes what is given; --replace sends PUT, which replaces (notes absent: none).
  const bool replace = args.has("--replace");
  auto update = [&](const Poco::JSON::Object& existing) {
    Poco::JSON::Object sent(body);
    if (replace) sent.set("key", key);
    return cli.api(replace ? "PUT" : "PATCH", path(existing, args), sdk::jsonText(sent),
                   "application/json", sealed_to);
  };
  sdk::CliReply reply;
  std::string done = "updated";
  if (auto existing = lookUp(cli, args, key)) {
    reply = update(*existing);
  } else {
    body.set("key", key);
    reply = cli.api("POST", "/api/secrets/" + identityQuery(args), sdk::jsonText(body),
                    "application/json", sealed_to);
    done = "created";
    if (reply.status == 409) {  // another writer created it meanwhile: change that one
      body.remove("key");
      reply = update(*mustFind(cli, args, key));
      done = "updated";
    }
  }
  cli.expect(reply);
  printHidden(cli, reply, false, [&](const Poco::JSON::Object& s) {
    cli.out() << done << " " << s.getValue<std::string>("key") << " "
              << s.getValue<std::string>("uuid") << "\n";
  });
  return 0;
}

// A secret by its uuid (as events and lists name it), shown as `get` shows one.
int show(CliContext& cli, const CliArgs& args) {
  auto reply =
      cli.api("GET", "/api/secrets/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args));
  cli.expect(reply, 200);
  auto secret = reply.json();
  const bool reveal = args.has("--reveal");
  if (reveal) sdk::e2e::CliVault(cli, args).openFields(*secret, kProtected);
  reply.body = sdk::jsonText(*secret);
  printHidden(cli, reply, reveal, [&](const Poco::JSON::Object& s) {
    cli.out() << s.getValue<std::string>("key") << " (identity "
              << s.getValue<std::string>("identity") << ", updated "
              << s.getValue<std::string>("updated_dt").substr(0, 19) << ")\n";
    if (reveal) printValue(cli, s.getValue<std::string>("value"));
  });
  return 0;
}

int remove(CliContext& cli, const CliArgs& args) {
  auto secret = mustFind(cli, args, args.arg(0));
  cli.expect(cli.api("DELETE", path(*secret, args)), 204);
  if (!cli.json()) {
    cli.out() << "deleted " << secret->getValue<std::string>("key") << " "
              << secret->getValue<std::string>("uuid") << "\n";
  }
  return 0;
}

std::vector<CliCommand> commands() {
  const sdk::CliOption identity{"--identity", "UUID", "the identity (needed with an account key)"};
  const sdk::CliOption passphrase = sdk::e2e::passphraseFileOption();
  return {CliCommand::group(
      "secrets", "an identity's key-value secrets: list, get, set, delete",
      {CliCommand::leaf("list", "secrets by key, newest first (never their values)", {"[KEY]"},
                        {identity}, list, "With KEY, only the secret of that key.")
           .calls({"GET /api/secrets/"}),
       CliCommand::leaf("get", "whether a secret is set; its value with --reveal", {"KEY"},
                        {identity, {"--reveal", "", "print the value"}, passphrase}, get,
                        "With --reveal the value is printed as stored, then a line break (on a "
                        "terminal, without control characters). With end-to-end encryption set "
                        "up it is opened here, with the vault passphrase.")
           .calls({"GET /api/secrets/", "GET /api/encryption/"}),
       CliCommand::leaf("show", "a secret by its uuid; its value with --reveal", {"UUID"},
                        {identity, {"--reveal", "", "print the value"}, passphrase}, show)
           .calls({"GET /api/secrets/{uuid}/", "GET /api/encryption/"}),
       CliCommand::leaf("set", "create a secret, or change the one with that key", {"KEY"},
                        {identity,
                         {"--notes", "TEXT", "its notes"},
                         passphrase,
                         {"--replace", "",
                          "change it with PUT (notes not given: none) instead "
                          "of PATCH"}},
                        set,
                        "The value is read from stdin, without its final line break. With "
                        "end-to-end encryption set up, value and notes are sealed here to the "
                        "account's key (checked against the vault passphrase first): the server "
                        "never sees them.")
           .calls({"GET /api/secrets/", "POST /api/secrets/", "PATCH /api/secrets/{uuid}/",
                   "PUT /api/secrets/{uuid}/", "GET /api/encryption/"}),
       CliCommand::leaf("delete", "delete a secret", {"KEY"}, {identity}, remove)
           .calls({"GET /api/secrets/", "DELETE /api/secrets/{uuid}/"})})};
}

}  // namespace

}  // namespace svc::plugins::secrets

SVC_CLI_COMMANDS(svc::plugins::secrets::commands)
