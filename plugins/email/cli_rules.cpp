// `svcctl mail rules list|allow|block|show|delete`: the sender rules of an identity (--identity, or
// an identity key) or, with an account key and no --identity, the account's defaults.
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

std::string identityOf(const Poco::JSON::Object& rule) {
  return rule.isNull("identity") ? "(account default)" : rule.getValue<std::string>("identity");
}

// Every page (an account holds at most a thousand rules), printed as one list; --json prints
// them as `{count, results}`.
int rulesList(CliContext& cli, const CliArgs& args) {
  Poco::JSON::Array::Ptr all = new Poco::JSON::Array;
  for (std::size_t offset = 0;;) {
    auto reply = cli.api("GET", "/api/email-rules/?limit=200&offset=" + std::to_string(offset) +
                                    identityQuery(args, '&'));
    cli.expect(reply, 200);
    auto page = reply.json();
    auto results = page->getArray("results");
    for (std::size_t i = 0; results && i < results->size(); ++i) all->add(results->get(i));
    offset += results ? results->size() : 0;
    if (!results || results->size() == 0 || page->isNull("next")) break;
  }
  Poco::JSON::Object body;
  body.set("count", all->size());
  body.set("results", all);
  sdk::CliReply combined{200, sdk::jsonText(body), "application/json"};
  cli.print(combined, [&](const Poco::JSON::Object&) {
    sdk::CliTable table({"ID", "KIND", "PATTERN", "IDENTITY"});
    for (std::size_t i = 0; i < all->size(); ++i) {
      auto rule = all->getObject(static_cast<unsigned>(i));
      table.row({rule->getValue<std::string>("id"), rule->getValue<std::string>("kind"),
                 rule->getValue<std::string>("pattern"), identityOf(*rule)});
    }
    table.print(cli.out());
  });
  return 0;
}

void printRule(CliContext& cli, const Poco::JSON::Object& rule) {
  cli.out() << rule.getValue<std::string>("id") << " " << rule.getValue<std::string>("kind") << " "
            << rule.getValue<std::string>("pattern") << " " << identityOf(rule) << "\n";
}

std::string rulePath(const CliArgs& args) {
  return "/api/email-rules/" + sdk::urlComponent(args.arg(0)) + "/" + identityQuery(args);
}

int rulesShow(CliContext& cli, const CliArgs& args) {
  auto reply = cli.api("GET", rulePath(args));
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& rule) { printRule(cli, rule); });
  return 0;
}

int rulesAdd(CliContext& cli, const CliArgs& args, const std::string& kind) {
  Poco::JSON::Object body;
  body.set("kind", kind);
  body.set("pattern", args.arg(0));
  auto reply = cli.api("POST", "/api/email-rules/" + identityQuery(args), sdk::jsonText(body));
  cli.expect(reply, 201);
  cli.print(reply, [&](const Poco::JSON::Object& rule) { printRule(cli, rule); });
  return 0;
}

int rulesDelete(CliContext& cli, const CliArgs& args) {
  cli.expect(cli.api("DELETE", rulePath(args)));
  if (!cli.json()) cli.out() << "deleted " << args.arg(0) << "\n";
  return 0;
}

}  // namespace

CliCommand rulesCommand() {
  const sdk::CliOption identity{"--identity", "UUID",
                                "the identity (with an account key; omitted: the account's "
                                "default rules)"};
  const char* pattern_help =
      "PATTERN is an address (bob@example.com) or a domain (example.com), which also matches "
      "its subdomains. Once an allow rule applies, only allowed senders are accepted.";
  return CliCommand::group(
      "rules", "sender rules: allow and block lists checked when mail arrives",
      {CliCommand::leaf("list",
                        "the rules: an identity's and the account's defaults, or with an "
                        "account key and no --identity every rule of the account",
                        {}, {identity}, rulesList)
           .calls({"GET /api/email-rules/"}),
       CliCommand::leaf(
           "allow", "accept mail from a sender (and, once any allow applies, only those)",
           {"PATTERN"}, {identity},
           [](CliContext& cli, const CliArgs& args) { return rulesAdd(cli, args, "allow"); },
           pattern_help)
           .calls({"POST /api/email-rules/"}),
       CliCommand::leaf(
           "block", "refuse mail from a sender (550 5.7.1 at RCPT)", {"PATTERN"}, {identity},
           [](CliContext& cli, const CliArgs& args) { return rulesAdd(cli, args, "block"); },
           pattern_help)
           .calls({"POST /api/email-rules/"}),
       CliCommand::leaf("show", "one rule", {"RULE_ID"}, {identity}, rulesShow)
           .calls({"GET /api/email-rules/{id}/"}),
       CliCommand::leaf("delete", "remove a rule", {"RULE_ID"}, {identity}, rulesDelete)
           .calls({"DELETE /api/email-rules/{id}/"})});
}

}  // namespace svc::plugins::email
