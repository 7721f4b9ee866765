#include "cli_phones.h"

#include <Poco/JSON/Array.h>

namespace svc::plugins::sms {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
using sdk::identityQuery;

int phonesList(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", "/api/phone/?limit=200" + identityQuery(args, '&'));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& page) {
    sdk::CliTable table({"ID", "NUMBER", "COUNTRY", "IDENTITY"});
    auto list = page.getArray("results");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto p = list->getObject(static_cast<unsigned>(i));
      table.row({p->getValue<std::string>("id"), p->getValue<std::string>("number"),
                 p->getValue<std::string>("country_code"), p->getValue<std::string>("identity")});
    }
    table.print(cli.out());
  });
  return 0;
}

int phonesProvision(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Object body;
  if (args.has("--country")) body.set("country_code", args.value("--country"));
  auto reply =
      cli.api("POST", "/api/identities/" + sdk::urlComponent(args.arg(0)) + "/provision-phone/",
              sdk::jsonText(body));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& i) {
    cli.out() << i.getObject("phone")->getValue<std::string>("number") << "\n";
  });
  return 0;
}

int phonesShow(CliContext& cli, const CliArgs& args) {
  auto reply =
      cli.api("GET", "/api/phone/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& p) {
    cli.out() << p.getValue<std::string>("id") << " " << p.getValue<std::string>("number") << " "
              << p.getValue<std::string>("country_code") << " identity "
              << p.getValue<std::string>("identity") << "\n";
  });
  return 0;
}

}  // namespace

CliCommand phonesCommand(const sdk::CliOption& identity) {
  return CliCommand::group(
      "phones", "phone numbers of identities",
      {CliCommand::leaf("list", "the account's numbers", {}, {identity}, phonesList)
           .calls({"GET /api/phone/"}),
       CliCommand::leaf("show", "one number", {"PHONE_ID"}, {identity}, phonesShow)
           .calls({"GET /api/phone/{id}/"}),
       CliCommand::leaf("provision", "give an identity a number; prints it", {"IDENTITY"},
                        {{"--country", "CC", "ISO 3166 alpha-2 country (default US)"}},
                        phonesProvision)
           .calls({"POST /api/identities/{uuid}/provision-phone/"})});
}

}  // namespace svc::plugins::sms
