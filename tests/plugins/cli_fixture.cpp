// svcctl command modules for svcctl's tests, one source built two ways, each into its own
// directory under build/tests/plugins/cli/ (a --plugins-dir of its own):
//   good/svc_plugin_clifixture.so  exports `clifixture ping [WORD]` (prints "pong WORD") and a
//                                  `mail ping` that the bundled email plugin's `mail` group does
//                                  not have (groups of one name merge)
//   newer/svc_plugin_clinewer.so   the same, but its handshake says the next SDK minor version
#include <svc/sdk/cli.h>

#include <ostream>

namespace {

std::vector<svc::sdk::CliCommand> commands() {
  using svc::sdk::CliCommand;
  auto ping = [](svc::sdk::CliContext& cli, const svc::sdk::CliArgs& args) {
    cli.out() << "pong" << (args.count() ? " " + args.arg(0) : "") << "\n";
    return 0;
  };
  return {CliCommand::group("clifixture", "a test fixture's commands",
                            {CliCommand::leaf("ping", "answers pong", {"[WORD]"}, {}, ping)}),
          CliCommand::group("mail", "", {CliCommand::leaf("ping", "answers pong", {}, {}, ping)})};
}

}  // namespace

#ifdef CLI_FIXTURE_NEWER_MINOR
static const svc::sdk::AbiInfo* newerAbi() {
  static const svc::sdk::AbiInfo info{SVC_SDK_VERSION_MAJOR, SVC_SDK_VERSION_MINOR + 1,
                                      SVC_SDK_BUILD_SIGNATURE};
  return &info;
}
static std::vector<svc::sdk::CliCommand> newerCommands() {
  return commands();
}
BOOST_DLL_ALIAS(newerAbi, svc_cli_abi)
BOOST_DLL_ALIAS(newerCommands, svc_cli_commands)
#else
SVC_CLI_COMMANDS(commands)
#endif
