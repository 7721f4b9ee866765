#include "command_list.h"

#include <Poco/JSON/Array.h>

#include <ostream>
#include <utility>
#include <vector>

namespace svcctl {

namespace {

using svc::sdk::CliArgs;
using svc::sdk::CliCommand;
using svc::sdk::CliContext;

// The described operations no command calls, on purpose: what makes no sense on a command line.
// One place, kept short: each entry needs a reason a reader accepts. `*` as the method means
// every method; a path ending in `*` every path below it.
const std::pair<const char*, const char*> kExcluded[] = {
    {"GET /api/docs/", "a web page for browsers; `svcctl schema --text` prints the same reference"},
    {"* /api/vault/*",
     "the same resource as /api/secrets/ under a second name; the secrets commands use that one"},
    {"PATCH /api/encryption/",
     "sets up end-to-end encryption as PUT does, which `svcctl vault init` calls"},
};

int list(const svc::sdk::CliCommandTable& table, CliContext& cli, const CliArgs&) {
  Poco::JSON::Object listing;
  Poco::JSON::Array::Ptr commands = new Poco::JSON::Array;
  svc::sdk::CliTable human({"COMMAND", "CALLS"});
  table.forEachLeaf([&](const std::vector<std::string>& path, const CliCommand& leaf) {
    std::string name;
    for (const auto& word : path) name += (name.empty() ? "" : " ") + word;
    Poco::JSON::Object::Ptr entry = new Poco::JSON::Object;
    entry->set("command", name);
    Poco::JSON::Array::Ptr operations = new Poco::JSON::Array;
    for (const auto& operation : leaf.operations) operations->add(operation);
    entry->set("operations", operations);
    commands->add(entry);
    human.row({name, leaf.operations.empty() ? "-" : leaf.operations.front()});
    for (std::size_t i = 1; i < leaf.operations.size(); ++i) human.row({"", leaf.operations[i]});
  });
  listing.set("commands", commands);
  Poco::JSON::Array::Ptr excluded = new Poco::JSON::Array;
  for (const auto& [operation, reason] : kExcluded) {
    Poco::JSON::Object::Ptr entry = new Poco::JSON::Object;
    entry->set("operation", std::string(operation));
    entry->set("reason", std::string(reason));
    excluded->add(entry);
  }
  listing.set("excluded", excluded);
  if (cli.json()) {
    cli.out() << svc::sdk::jsonText(listing) << "\n";
    return 0;
  }
  human.print(cli.out());
  cli.out() << "\nNo command calls these, on purpose:\n";
  for (const auto& [operation, reason] : kExcluded) {
    cli.out() << "  " << operation << ": " << reason << "\n";
  }
  return 0;
}

}  // namespace

CliCommand commandListCommand(const svc::sdk::CliCommandTable& table) {
  return CliCommand::leaf(
      "commands", "every command and the API operations it calls", {}, {},
      [&table](CliContext& cli, const CliArgs& args) { return list(table, cli, args); },
      "Lists each command with the operations (METHOD /path/) it calls, then the operations of "
      "the API description (GET /api/schema/) that no command calls on purpose, with the reason. "
      "Under --json: {\"commands\": [{\"command\", \"operations\"}], \"excluded\": "
      "[{\"operation\", \"reason\"}]}.");
}

}  // namespace svcctl
