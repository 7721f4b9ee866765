// The email plugin's svcctl commands, one file per job: cli_send.cpp (send, reply, forward,
// attachments), cli_read.cpp (inbox, read, list, mark, wait), cli_inboxes.cpp (inboxes and
// domains), cli_rules.cpp (mail rules); cli.cpp puts them in the table.
#pragma once

#include <svc/sdk/cli.h>

#include <vector>

namespace svc::plugins::email {

/// `mail send|reply|forward|attach|attachment|download`.
std::vector<sdk::CliCommand> sendCommands(const sdk::CliOption& identity);
/// `mail inbox|read|list|mark|wait`.
std::vector<sdk::CliCommand> readCommands(const sdk::CliOption& identity);
/// The `inboxes` group: an identity's addresses.
sdk::CliCommand inboxesCommand(const sdk::CliOption& identity);
/// `mail rules list|allow|block|show|delete`: sender rules (cli_rules.cpp).
sdk::CliCommand rulesCommand();
/// The `domains` group: platform and custom domains.
sdk::CliCommand domainsCommand();

}  // namespace svc::plugins::email
