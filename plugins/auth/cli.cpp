// The auth plugin's svcctl commands: the operator's (users, device, accounts, on the operator
// listener) and the agent's (login by device flow, keys), all through svcd's HTTP routes.
#include "cli_tokens.h"

#include <svc/sdk/cli.h>

#include <Poco/File.h>
#include <Poco/JSON/Array.h>
#include <Poco/Process.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <sstream>
#include <thread>

namespace svc::plugins::auth {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;

// Posts to an operator route and prints its answer (JSON either way).
int operatorPost(CliContext& cli, const std::string& path, const Poco::JSON::Object& body) {
  auto reply = cli.admin("POST", path, sdk::jsonText(body));
  cli.expect(reply);
  cli.out() << reply.body << "\n";
  return 0;
}

int usersAdd(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  body.set("email", args.arg(0));
  std::string password;
  std::getline(cli.in(), password);
  body.set("password", password);
  if (args.has("--name")) body.set("name", args.value("--name"));
  return operatorPost(cli, "/admin/auth/users/", body);
}

int deviceApprove(CliContext& cli, const CliArgs& args) {
  if (args.value("--user").empty()) throw sdk::CliUsageError("give --user EMAIL");
  Poco::JSON::Object body;
  body.set("user_code", args.arg(0));
  body.set("user", args.value("--user"));
  return operatorPost(cli, "/admin/auth/device/approve/", body);
}

int deviceDeny(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  body.set("user_code", args.arg(0));
  return operatorPost(cli, "/admin/auth/device/deny/", body);
}

int accountsPlan(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  body.set("plan", args.arg(1));
  return operatorPost(cli, "/admin/auth/accounts/" + sdk::urlComponent(args.arg(0)) + "/plan/",
                      body);
}

// A QR code of the URL for a phone, when qrencode is installed (run without a shell).
void printQr(const std::string& url) {
  for (const std::string dir : {"/usr/bin/", "/usr/local/bin/", "/bin/"}) {
    if (!Poco::File(dir + "qrencode").exists()) continue;
    try {
      Poco::ProcessHandle h =
          Poco::Process::launch(dir + "qrencode", {"-t", "UTF8", "-m", "1", url});
      h.wait();
    } catch (const Poco::Exception&) {
    }
    return;
  }
}

// RFC 8628 from a terminal: show the code and URL, wait (long-polling) with a countdown, and keep
// the management key in the key file.
int login(CliContext& cli, const CliArgs& args) {
  std::string client_id = args.value("--client-id");
  if (client_id.empty()) {
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    client_id = std::string("svcctl on ") + host;
  }
  Poco::JSON::Object start;
  start.set("client_id", client_id);
  auto reply = cli.anonymous("POST", "/api/auth/device/", sdk::jsonText(start));
  cli.expect(reply, 200);
  auto device = reply.json();
  const std::string user_code = device->getValue<std::string>("user_code");
  const std::string complete = device->getValue<std::string>("verification_uri_complete");
  const int expires_in = device->getValue<int>("expires_in");
  cli.out() << "To sign in, open this page and approve the code " << user_code << ":\n\n  "
            << complete << "\n\n(or open " << device->getValue<std::string>("verification_uri")
            << " and enter " << user_code << ")\n"
            << std::flush;
  printQr(complete);

  Poco::JSON::Object poll;
  poll.set("device_code", device->getValue<std::string>("device_code"));
  poll.set("wait", true);
  const std::string poll_body = sdk::jsonText(poll);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(expires_in);
  const bool tty = ::isatty(STDERR_FILENO);
  sdk::CliReply answer;
  while (true) {
    auto pending = std::async(std::launch::async, [&] {
      return cli.anonymous("POST", "/api/auth/device/token/", poll_body);
    });
    while (pending.wait_for(std::chrono::seconds(1)) != std::future_status::ready) {
      if (!tty) continue;
      auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline -
                                                                   std::chrono::steady_clock::now())
                      .count();
      if (left < 0) left = 0;
      std::fprintf(stderr, "\rWaiting for approval... %ld:%02ld left ",
                   static_cast<long>(left / 60), static_cast<long>(left % 60));
    }
    answer = pending.get();
    std::string error;
    try {
      error = answer.json()->optValue<std::string>("error", "");
    } catch (const sdk::CliError&) {
    }
    if (answer.status == 400 && (error == "authorization_pending" || error == "slow_down")) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (tty) std::fprintf(stderr, "\r%40s\r", "");
    if (answer.status == 200) break;
    if (error == "access_denied") throw sdk::CliError("the code was denied");
    if (error == "expired_token") throw sdk::CliError("the code expired; run svcctl login again");
    cli.expect(answer, 200);
  }
  auto tokens = answer.json();
  cli.saveKey(tokens->getValue<std::string>("management_key"));
  cli.out() << "Signed in as " << tokens->getObject("user")->getValue<std::string>("email")
            << "; the management key is in " << cli.keyFile() << " (readable only by you).\n";
  return 0;
}

int keysList(CliContext& cli, const CliArgs&) {
  auto reply = cli.api("GET", "/api/auth/keys/?limit=200");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& body) {
    sdk::CliTable table({"ID", "KIND", "PREFIX", "LAST USED", "LABEL"});
    auto list = body.getArray("results");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto k = list->getObject(static_cast<unsigned>(i));
      table.row({k->getValue<std::string>("id"), k->getValue<std::string>("kind"),
                 k->getValue<std::string>("prefix"),
                 k->optValue<std::string>("last_used_dt", "never"),
                 k->getValue<std::string>("label")});
    }
    table.print(cli.out());
  });
  return 0;
}

int keysCreate(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  body.set("label", args.value("--label"));
  const std::string identity = args.value("--identity");
  if (!identity.empty()) body.set("identity", identity);
  auto reply = cli.api("POST", identity.empty() ? "/api/auth/keys/" : "/api/auth/keys/identity/",
                       sdk::jsonText(body));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& key) {
    cli.out() << key.getValue<std::string>("key") << "\n";
  });
  return 0;
}

int keysRevoke(CliContext& cli, const CliArgs& args) {
  cli.expect(cli.api("DELETE", "/api/auth/keys/" + sdk::urlComponent(args.arg(0)) + "/"), 204);
  return 0;
}

std::vector<CliCommand> commands() {
  const sdk::CliOption identity{"--identity", "UUID", "for an identity: its own key"};
  std::vector<CliCommand> all = {
      CliCommand::group(
          "users", "local users (operator)",
          {CliCommand::leaf(
               "add", "add a local user (prints the user as JSON)", {"EMAIL"},
               {{"--password-stdin", "", "read the password from the first line of stdin",
                 /*repeatable=*/false, /*required=*/true},
                {"--name", "NAME", "the user's display name"}},
               usersAdd)
               .calls({"POST /admin/auth/users/"})}),
      CliCommand::group(
          "device", "device logins waiting for approval (operator)",
          {CliCommand::leaf("approve",
                            "approve a device login as a user (prints the answer as JSON)",
                            {"USER_CODE"},
                            {{"--user", "EMAIL", "the user who signs in", /*repeatable=*/false,
                              /*required=*/true}},
                            deviceApprove)
               .calls({"POST /admin/auth/device/approve/"}),
           CliCommand::leaf("deny", "deny a device login", {"USER_CODE"}, {}, deviceDeny)
               .calls({"POST /admin/auth/device/deny/"})}),
      CliCommand::group("accounts", "accounts (operator)",
                        {CliCommand::leaf("plan", "set an account's plan",
                                          {"ACCOUNT_ID", "active|none"}, {}, accountsPlan)
                             .calls({"POST /admin/auth/accounts/{id}/plan/"})}),
      CliCommand::leaf(
          "login", "sign in by device login; writes the key file (0600)", {},
          {{"--client-id", "NAME", "what the approval page calls this terminal"}}, login,
          "Prints a code and a URL to approve it at (and a QR code when qrencode is installed),\n"
          "waits for the approval, and keeps the management key in the key file (--key-file).")
          .calls({"POST /api/auth/device/", "POST /api/auth/device/token/"}),
      CliCommand::group(
          "keys", "the account's API keys",
          {CliCommand::leaf("list", "the account's keys", {}, {}, keysList)
               .calls({"GET /api/auth/keys/"}),
           CliCommand::leaf("create", "create a key; prints it (it is shown once)", {},
                            {{"--label", "LABEL", "what the key is for"}, identity}, keysCreate,
                            "A management key for the account, or with --identity a key bound "
                            "to that identity.")
               .calls({"POST /api/auth/keys/", "POST /api/auth/keys/identity/"}),
           CliCommand::leaf("revoke", "revoke a key", {"KEY_ID"}, {}, keysRevoke)
               .calls({"DELETE /api/auth/keys/{id}/"})}),
  };
  for (auto& command : tokenCommands()) all.push_back(std::move(command));
  return all;
}

}  // namespace

}  // namespace svc::plugins::auth

SVC_CLI_COMMANDS(svc::plugins::auth::commands)
