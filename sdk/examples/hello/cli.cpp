// hello's svcctl commands: `svcctl hello greet NAME` asks the plugin's route. svcctl finds them in
// svc_plugin_hello.so through SVC_CLI_COMMANDS; svcctl itself is not changed.
#include <svc/sdk/cli.h>

namespace hello {

namespace {

int greet(svc::sdk::CliContext& cli, const svc::sdk::CliArgs& args) {
  Poco::JSON::Object body;
  body.set("name", args.arg(0));
  auto reply = cli.api("POST", "/api/hello/greetings/", svc::sdk::jsonText(body));
  cli.expect(reply, 201);  // else fails with the server's error
  // The message, or with --json the API's JSON as it is.
  cli.print(reply, [&](const Poco::JSON::Object& greeting) {
    cli.out() << greeting.getValue<std::string>("message") << "\n";
  });
  return 0;
}

std::vector<svc::sdk::CliCommand> commands() {
  using svc::sdk::CliCommand;
  return {CliCommand::group(
      "hello", "the hello example plugin",
      {CliCommand::leaf("greet", "greet NAME (publishes hello.greeted)", {"NAME"}, {}, greet)
           .calls({"POST /api/hello/greetings/"})})};
}

}  // namespace

}  // namespace hello

SVC_CLI_COMMANDS(hello::commands)
