// The email plugin's svcctl commands (`svcctl mail ...`, `inboxes ...`, `domains ...`), through
// the email routes; the commands themselves are in cli_send.cpp, cli_read.cpp, cli_inboxes.cpp.
#include "cli_commands.h"

namespace svc::plugins::email {

namespace {

std::vector<sdk::CliCommand> commands() {
  const sdk::CliOption identity{"--identity", "UUID", "the identity (needed with an account key)"};
  std::vector<sdk::CliCommand> mail = sendCommands(identity);
  for (auto& command : readCommands(identity)) mail.push_back(std::move(command));
  mail.push_back(rulesCommand());
  return {sdk::CliCommand::group(
              "mail", "an identity's email: send, reply, forward, list, read, wait, rules",
              std::move(mail)),
          inboxesCommand(identity), domainsCommand()};
}

}  // namespace

}  // namespace svc::plugins::email

SVC_CLI_COMMANDS(svc::plugins::email::commands)
