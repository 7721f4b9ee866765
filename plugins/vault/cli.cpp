// The vault plugin's svcctl commands: `svcctl vault ...`, through the routes.
#include <svc/sdk/cli.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

namespace svc::plugins::vault {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;

int status(CliContext& cli, const CliArgs&) {
  auto reply = cli.api("GET", "/api/encryption/");
  if (reply.status == 404) {
    cli.out() << "end-to-end encryption: not set up\n";
    return 0;
  }
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& m) {
    auto kdf = m.getObject("kdf");
    cli.out() << "end-to-end encryption: set up " << m.getValue<std::string>("created_dt")
              << ", argon2id t=" << kdf->getValue<int>("t") << " m=" << kdf->getValue<int>("m")
              << " KiB\n";
  });
  return 0;
}

int rotateKey(CliContext& cli, const CliArgs&) {
  auto reply = cli.admin("POST", "/admin/vault/rotate-key/", "{}");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& r) {
    cli.out() << "master key " << r.getValue<std::string>("key_id") << ": "
              << r.getValue<long>("reencrypted") << " values re-encrypted";
    auto retired = r.getArray("retired");
    if (retired && retired->size() > 0) {
      cli.out() << ", retired";
      for (std::size_t i = 0; i < retired->size(); ++i) {
        cli.out() << " " << retired->getElement<std::string>(static_cast<unsigned>(i));
      }
    }
    cli.out() << "\n";
    if (r.getValue<long>("failed") > 0) {
      cli.out() << r.getValue<long>("failed")
                << " values did not decrypt and keep their old key (see svcd's log)\n";
    }
  });
  return 0;
}

std::vector<CliCommand> commands() {
  return {CliCommand::group(
      "vault", "the vault: end-to-end encryption status; master key rotation (operator)",
      {CliCommand::leaf("status", "whether the account has end-to-end encryption set up", {}, {},
                        status),
       CliCommand::leaf("rotate-key",
                        "re-encrypt every vault value under a new master key while svcd serves "
                        "(operator)",
                        {}, {}, rotateKey)})};
}

}  // namespace

}  // namespace svc::plugins::vault

SVC_CLI_COMMANDS(svc::plugins::vault::commands)
