// `svcctl inboxes ...` (an identity's addresses) and `svcctl domains ...` (the platform's and
// the account's custom domains), through the email routes.
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

void printInbox(CliContext& cli, const Poco::JSON::Object& i) {
  cli.out() << i.getValue<std::string>("id") << " " << i.getValue<std::string>("address")
            << (i.getValue<bool>("is_primary") ? " (primary)" : "") << "\n";
}

int inboxesList(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/email/?limit=200" + identityQuery(args, '&'));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"ID", "ADDRESS", "PRIMARY", "IDENTITY"});
    auto results = page.getArray("results");
    for (std::size_t i = 0; results && i < results->size(); ++i) {
      auto inbox = results->getObject(static_cast<unsigned>(i));
      table.row({inbox->getValue<std::string>("id"), inbox->getValue<std::string>("address"),
                 inbox->getValue<bool>("is_primary") ? "yes" : "no",
                 inbox->getValue<std::string>("identity")});
    }
    table.print(cli.out());
  });
  return 0;
}

int inboxesAdd(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  if (args.has("--email")) body.set("email", args.value("--email"));
  auto reply = cli.api("POST", "/api/email/" + identityQuery(args), sdk::jsonText(body));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& i) { printInbox(cli, i); });
  return 0;
}

int inboxesShow(CliContext& cli, const CliArgs& args) {
  auto reply =
      cli.api("GET", "/api/email/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& i) { printInbox(cli, i); });
  return 0;
}

// Exits 0 when the address is free, 1 when it is taken: usable in a script's `if`.
int inboxesAvailable(CliContext& cli, const CliArgs& args) {
  auto reply =
      cli.api("GET", "/api/email/check-availability/?email=" + sdk::urlComponent(args.arg(0)) +
                         identityQuery(args, '&'));
  cli.expect(reply, 200);
  const bool available = reply.json()->getValue<bool>("available");
  cli.print(reply, [&](const Poco::JSON::Object& a) {
    cli.out() << a.getValue<std::string>("email") << (available ? " is available" : " is taken")
              << "\n";
  });
  return available ? 0 : 1;
}

void printDomain(CliContext& cli, const Poco::JSON::Object& d) {
  cli.out() << d.getValue<std::string>("name") << " " << d.getValue<std::string>("kind") << " "
            << d.getValue<std::string>("status") << "\n";
  if (auto record = d.getObject("dns_record");
      record && d.getValue<std::string>("status") != "verified") {
    cli.out() << "publish: " << record->getValue<std::string>("name") << " "
              << record->getValue<std::string>("type") << " \""
              << record->getValue<std::string>("value") << "\"\n";
  }
}

int domainsList(CliContext& cli, const CliArgs&) {
  auto reply = cli.api("GET", "/api/domains/?limit=200");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"NAME", "KIND", "STATUS"});
    auto results = page.getArray("results");
    for (std::size_t i = 0; results && i < results->size(); ++i) {
      auto d = results->getObject(static_cast<unsigned>(i));
      table.row({d->getValue<std::string>("name"), d->getValue<std::string>("kind"),
                 d->getValue<std::string>("status")});
    }
    table.print(cli.out());
  });
  return 0;
}

int domainsAdd(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  body.set("name", args.arg(0));
  auto reply = cli.api("POST", "/api/domains/", sdk::jsonText(body));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& d) { printDomain(cli, d); });
  return 0;
}

int domainsShow(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/domains/" + sdk::urlComponent(args.arg(0)) + "/");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& d) { printDomain(cli, d); });
  return 0;
}

int domainsVerify(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("POST", "/api/domains/" + sdk::urlComponent(args.arg(0)) + "/verify/", "{}");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& d) { printDomain(cli, d); });
  return 0;
}

int domainsDelete(CliContext& cli, const CliArgs& args) {
  cli.expect(cli.api("DELETE", "/api/domains/" + sdk::urlComponent(args.arg(0)) + "/"));
  if (!cli.json()) cli.out() << "deleted " << args.arg(0) << "\n";
  return 0;
}

}  // namespace

CliCommand inboxesCommand(const sdk::CliOption& identity) {
  return CliCommand::group(
      "inboxes", "an identity's email addresses: list, add, show, available",
      {CliCommand::leaf("list", "the inboxes, newest first", {}, {identity}, inboxesList)
           .calls({"GET /api/email/"}),
       CliCommand::leaf("add", "give an identity another address (an active plan)", {},
                        {identity,
                         {"--email", "ADDRESS",
                          "a local part, or a full address on a verified domain (else one is "
                          "generated)"}},
                        inboxesAdd, "Prints the new inbox's id and address.")
           .calls({"POST /api/email/"}),
       CliCommand::leaf("show", "one inbox", {"INBOX_ID"}, {identity}, inboxesShow)
           .calls({"GET /api/email/{id}/"}),
       CliCommand::leaf("available", "whether an address is free; exits 1 when it is taken",
                        {"ADDRESS"}, {identity}, inboxesAvailable)
           .calls({"GET /api/email/check-availability/"})});
}

CliCommand domainsCommand() {
  return CliCommand::group(
      "domains", "email domains: the platform's and the account's custom ones",
      {CliCommand::leaf("list", "every domain the account may use", {}, {}, domainsList)
           .calls({"GET /api/domains/"}),
       CliCommand::leaf("add", "add a custom domain; prints the TXT record to publish", {"DOMAIN"},
                        {}, domainsAdd,
                        "The domain stays pending until `svcctl domains verify DOMAIN` finds the "
                        "record.")
           .calls({"POST /api/domains/"}),
       CliCommand::leaf("show", "one domain and, while pending, its TXT record", {"DOMAIN"}, {},
                        domainsShow)
           .calls({"GET /api/domains/{name}/"}),
       CliCommand::leaf("verify", "look the TXT record up; the first account to prove it owns it",
                        {"DOMAIN"}, {}, domainsVerify)
           .calls({"POST /api/domains/{name}/verify/"}),
       CliCommand::leaf("delete", "remove a custom domain", {"DOMAIN"}, {}, domainsDelete)
           .calls({"DELETE /api/domains/{name}/"})});
}

}  // namespace svc::plugins::email
