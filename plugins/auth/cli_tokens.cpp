#include "cli_tokens.h"

#include <Poco/JSON/Array.h>

namespace svc::plugins::auth {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;

// A refresh token from stdin's first line: never on the command line, where `ps` shows it.
std::string refreshToken(CliContext& cli) {
  std::string token;
  std::getline(cli.in(), token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) throw sdk::CliUsageError("give the refresh token on standard input");
  return token;
}

int whoami(CliContext& cli, const CliArgs&) {
  auto reply = cli.api("GET", "/api/health/whoami/");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& who) {
    cli.out() << "kind:     " << who.getValue<std::string>("kind") << "\n"
              << "account:  " << who.getObject("account")->getValue<std::string>("id") << "\n";
    if (auto user = who.getObject("user")) {
      cli.out() << "user:     " << user->getValue<std::string>("email") << "\n";
    }
    if (auto identity = who.getObject("identity")) {
      cli.out() << "identity: " << identity->getValue<std::string>("uuid") << " "
                << identity->getValue<std::string>("name") << "\n";
    }
  });
  return 0;
}

int refresh(CliContext& cli, const CliArgs&) {
  Poco::JSON::Object body;
  body.set("refresh", refreshToken(cli));
  auto reply = cli.anonymous("POST", "/api/auth/token/refresh/", sdk::jsonText(body));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& tokens) {
    cli.out() << "access:  " << tokens.getValue<std::string>("access") << "\n"
              << "refresh: " << tokens.getValue<std::string>("refresh") << "\n";
  });
  return 0;
}

int revoke(CliContext& cli, const CliArgs&) {
  Poco::JSON::Object body;
  body.set("refresh", refreshToken(cli));
  cli.expect(cli.anonymous("POST", "/api/auth/logout/", sdk::jsonText(body)));
  if (!cli.json()) cli.out() << "revoked\n";
  return 0;
}

int jwks(CliContext& cli, const CliArgs&) {
  auto reply = cli.anonymous("GET", "/api/auth/jwks/");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& set) {
    auto keys = set.getArray("keys");
    for (std::size_t i = 0; keys && i < keys->size(); ++i) {
      auto key = keys->getObject(static_cast<unsigned>(i));
      cli.out() << key->optValue<std::string>("kid", "-") << " "
                << key->optValue<std::string>("kty", "") << " "
                << key->optValue<std::string>("alg", "") << "\n";
    }
  });
  return 0;
}

}  // namespace

std::vector<CliCommand> tokenCommands() {
  return {
      CliCommand::leaf("whoami", "who the key is: its kind, account, user or identity", {}, {},
                       whoami)
          .calls({"GET /api/health/whoami/"}),
      CliCommand::group(
          "tokens", "access and refresh tokens of a device login",
          {CliCommand::leaf("refresh", "exchange a refresh token (stdin) for new tokens", {}, {},
                            refresh,
                            "Reads the refresh token from the first line of stdin and prints the "
                            "new access and refresh tokens (the old refresh token is spent).")
               .calls({"POST /api/auth/token/refresh/"}),
           CliCommand::leaf("revoke", "revoke a refresh token (stdin) and those made from it", {},
                            {}, revoke,
                            "Reads the refresh token from the first line of stdin: a sign-out.")
               .calls({"POST /api/auth/logout/"}),
           CliCommand::leaf("jwks", "the public keys access tokens are signed with", {}, {}, jwks,
                            "Prints `KID KTY ALG` per key (--json: the JWK set).")
               .calls({"GET /api/auth/jwks/"})}),
  };
}

}  // namespace svc::plugins::auth
