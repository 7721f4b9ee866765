#include "kernel_commands.h"

#include <Poco/JSON/Array.h>

#include <ostream>

namespace svcctl {

using svc::sdk::CliArgs;
using svc::sdk::CliCommand;
using svc::sdk::CliContext;

namespace {

int plugins(CliContext& cli, const CliArgs&) {
  auto reply = cli.admin("GET", "/admin/plugins");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& body) {
    svc::sdk::CliTable table({"NAME", "VERSION", "STATUS", "ROUTES"});
    auto list = body.getArray("plugins");
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      auto p = list->getObject(static_cast<unsigned>(i));
      auto routes = p->getArray("routes");
      std::vector<std::string> lines;
      for (std::size_t r = 0; routes && r < routes->size(); ++r) {
        lines.push_back(routes->getElement<std::string>(static_cast<unsigned>(r)));
      }
      table.row({p->getValue<std::string>("name"), p->getValue<std::string>("version"),
                 p->getValue<std::string>("status"), std::to_string(lines.size())},
                lines);
    }
    table.print(cli.out());
  });
  return 0;
}

// The health document is JSON already: printed as it is, whatever the status.
int health(CliContext& cli, const CliArgs&) {
  auto reply = cli.anonymous("GET", "/api/health/");
  cli.out() << reply.body << "\n";
  return reply.status == 200 ? 0 : 1;
}

// The API's description: OpenAPI 3.1 as JSON, or the plain-text reference with --text.
int schema(CliContext& cli, const CliArgs& args) {
  const bool text = args.has("--text");
  auto reply = cli.anonymous("GET", text ? "/api/schema/reference.txt" : "/api/schema/");
  cli.expect(reply, 200);
  cli.out() << reply.body << (reply.body.empty() || reply.body.back() == '\n' ? "" : "\n");
  return 0;
}

int metrics(CliContext& cli, const CliArgs&) {
  auto reply = cli.admin("GET", "/metrics");
  cli.expect(reply, 200);
  cli.out() << reply.body;
  return 0;
}

}  // namespace

std::vector<CliCommand> kernelCommands() {
  return {
      CliCommand::leaf("plugins", "loaded plugins: name, version, status, routes (operator)", {},
                       {}, plugins)
          .calls({"GET /admin/plugins"}),
      CliCommand::leaf("health", "the API's health and its plugins (JSON)", {}, {}, health,
                       "Prints the health document as the server answers it; exits 1 when it\n"
                       "is not 200 (the database unreachable).")
          .calls({"GET /api/health/"}),
      CliCommand::leaf("metrics", "the operator listener's Prometheus metrics (operator)", {}, {},
                       metrics)
          .calls({"GET /metrics"}),
      CliCommand::leaf("schema", "the API's description: OpenAPI 3.1 (JSON), or --text", {},
                       {{"--text", "", "the plain-text reference instead, to read in one go"}},
                       schema,
                       "Every route of every plugin the server has enabled, with its fields,\n"
                       "answers and errors, and every event type.")
          .calls({"GET /api/schema/", "GET /api/schema/reference.txt"}),
  };
}

}  // namespace svcctl
