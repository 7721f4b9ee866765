// The vault plugin's svcctl commands: `svcctl vault ...`, through the routes. The end-to-end
// ones derive keys from the passphrase here, on the client; the server gets the salt, the public
// key, the verifier and sealed values, never the passphrase.
#include "cli_rekey.h"

#include <svc/sdk/cli.h>
#include <svc/sdk/e2e_cli.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

namespace svc::plugins::vault {

namespace {

using sdk::CliArgs;
using sdk::CliCommand;
using sdk::CliContext;
namespace e2e = sdk::e2e;

// A new passphrase shorter than this is refused: Argon2id slows each guess, it cannot make a
// short passphrase long.
constexpr std::size_t kMinPassphrase = 8;

e2e::SecretBytes newPassphrase(e2e::SecretBytes passphrase) {
  if (passphrase.size() < kMinPassphrase) {
    throw sdk::CliError("the new passphrase must have at least " + std::to_string(kMinPassphrase) +
                        " characters");
  }
  return passphrase;
}

e2e::Metadata mustHave(const CliContext& cli) {
  auto metadata = e2e::fetchMetadata(cli);
  if (!metadata) {
    throw sdk::CliError(
        "this account has no end-to-end encryption set up: svcctl vault init sets it up");
  }
  return std::move(*metadata);
}

int init(CliContext& cli, const CliArgs& args) {
  if (e2e::fetchMetadata(cli)) {
    throw sdk::CliError(
        "end-to-end encryption is already set up for this account: svcctl vault "
        "change-passphrase changes its passphrase");
  }
  const auto passphrase = newPassphrase(e2e::readPassphrase(args, "New vault passphrase: ", true));
  e2e::NewKeys made = e2e::createKeys(passphrase);
  // An empty vault is set up at once; one holding values stored before (plaintext) must go
  // through the lease, which seals them all in the same change.
  auto reply = cli.api("PUT", "/api/encryption/", sdk::jsonText(*made.metadata.toJson()));
  std::size_t sealed = 0;
  if (reply.status == 409 && reply.body.find("rekey_required") != std::string::npos) {
    sealed = resealUnderLease(
        cli, nullptr,
        [&] {
          // Under the lease nobody else sets it up; someone may have just before.
          if (e2e::fetchMetadata(cli)) {
            throw sdk::CliError("end-to-end encryption was set up meanwhile, by another client");
          }
          return std::move(made);
        },
        args.has("--drop-undecryptable"));
  } else {
    cli.expect(reply, 200);
  }
  if (!cli.json()) {
    cli.out() << "end-to-end encryption set up";
    if (sealed > 0) cli.out() << ": " << sealed << " stored values sealed";
    cli.out() << "\n";
  }
  return 0;
}

int unlock(CliContext& cli, const CliArgs& args) {
  const e2e::Metadata metadata = mustHave(cli);
  e2e::unlock(metadata, e2e::readPassphrase(args, "Vault passphrase: ", false));
  if (!cli.json()) {
    cli.out() << "the passphrase opens this account's vault\n";
    if (metadata.rekeying) {
      cli.out() << "a passphrase change holds the vault (writes get 409 vault_rekeying until it "
                   "ends or lapses)\n";
    }
  }
  return 0;
}

// The new passphrase from the terminal; without one, --new-passphrase-file is the way (the
// current passphrase's file options do not give the new one).
e2e::SecretBytes promptNewPassphrase() {
  try {
    return e2e::promptPassphrase("New vault passphrase: ", true);
  } catch (const sdk::CliError& e) {
    if (e.code != "no_terminal") throw;
    throw sdk::CliError(
        "a new vault passphrase is needed and there is no terminal to ask it on: give it in a "
        "file (--new-passphrase-file FILE)",
        e.exit_code, e.code);
  }
}

int changePassphrase(CliContext& cli, const CliArgs& args) {
  const e2e::Metadata metadata = mustHave(cli);
  // Both passphrases first, the current one checked, and the new key derived (the slow part):
  // the lease holds every write of the account, so it is taken only when all that is done.
  const auto old_keys =
      e2e::unlock(metadata, e2e::readPassphrase(args, "Current vault passphrase: ", false));
  const auto passphrase =
      newPassphrase(args.has("--new-passphrase-file")
                        ? e2e::readPassphraseFile(args.value("--new-passphrase-file"))
                        : promptNewPassphrase());
  e2e::NewKeys fresh = e2e::createKeys(passphrase, metadata.kdf);
  const std::size_t count = resealUnderLease(
      cli, &old_keys, [&] { return std::move(fresh); }, args.has("--drop-undecryptable"));
  if (!cli.json()) {
    cli.out() << "passphrase changed: " << count << " values sealed to the new key\n";
  }
  return 0;
}

int status(CliContext& cli, const CliArgs&) {
  auto reply = cli.api("GET", "/api/encryption/");
  if (reply.status == 404) {
    cli.out() << (cli.json() ? R"({"set_up":false})" : "end-to-end encryption: not set up") << "\n";
    return 0;
  }
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& m) {
    auto kdf = m.getObject("kdf");
    cli.out() << "end-to-end encryption: set up " << m.getValue<std::string>("created_dt")
              << ", argon2id t=" << kdf->getValue<int>("t") << " m=" << kdf->getValue<int>("m")
              << " KiB\n";
    if (auto lease = m.getObject("rekey")) {
      cli.out() << "a passphrase change holds the vault until "
                << lease->getValue<std::string>("expires_dt")
                << " (svcctl vault change-passphrase takes it over)\n";
    }
  });
  return 0;
}

int rotateKey(CliContext& cli, const CliArgs&) {
  auto reply = cli.admin("POST", "/admin/vault/rotate-key/", "{}");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& r) {
    cli.out() << "data key " << r.getValue<std::string>("key_id") << ": "
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

int replaceMasterKey(CliContext& cli, const CliArgs& args) {
  if (args.has("--finish") && args.has("--cancel")) {
    throw sdk::CliError("--finish and --cancel exclude each other");
  }
  const std::string path = args.has("--finish")   ? "/admin/vault/master-key/finish/"
                           : args.has("--cancel") ? "/admin/vault/master-key/cancel/"
                                                  : "/admin/vault/master-key/";
  auto reply = cli.admin("POST", path, "{}");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& r) {
    const auto state = r.getValue<std::string>("state");
    const auto id = r.getValue<std::string>("master_key_id");
    if (state == "replacing") {
      cli.out() << "new master key " << id << " wraps the " << r.getValue<long>("data_keys")
                << " data keys beside the old one. Copy " << r.getValue<std::string>("file")
                << " over vault.master_key_file on every machine (this one too; mode 0600, "
                   "svcd's user), then run svcctl vault replace-master-key --finish\n";
    } else if (state == "replaced") {
      cli.out() << "master key " << id << " alone wraps the " << r.getValue<long>("data_keys")
                << " data keys: the old key file no longer opens them\n";
    } else if (state == "cancelled") {
      cli.out() << "replacement by master key " << id
                << " cancelled: the old key file alone opens the data keys\n";
    } else {
      cli.out() << "no master key replacement was under way\n";
    }
  });
  return 0;
}

int keys(CliContext& cli, const CliArgs&) {
  auto reply = cli.admin("GET", "/admin/vault/keys/");
  cli.expect(reply, 200);
  cli.print(reply, [&](const Poco::JSON::Object& r) {
    cli.out() << "current data key " << r.getValue<std::string>("current_key_id") << " ("
              << r.getArray("data_keys")->size() << " data keys), wrapped by master key "
              << r.getValue<std::string>("master_key_id");
    const auto next = r.getValue<std::string>("new_master_key_id");
    if (!next.empty()) cli.out() << " and new master key " << next;
    cli.out() << "\n"
              << r.getValue<std::string>("file") << " on this svcd "
              << (r.getValue<bool>("file_holds_master_key") ? "holds" : "does not hold")
              << " the master key";
    if (!next.empty()) {
      cli.out() << ", "
                << (r.getValue<bool>("file_holds_new_master_key") ? "holds" : "does not hold")
                << " the new one";
    }
    cli.out() << "\n";
  });
  return 0;
}

std::vector<CliCommand> commands() {
  const sdk::CliOption passphrase = e2e::passphraseFileOption();
  const sdk::CliOption drop = {"--drop-undecryptable", "",
                               "let the change delete values the server cannot decrypt"};
  return {CliCommand::group(
      "vault",
      "the vault: end-to-end encryption (set up, check, change the passphrase); data key "
      "rotation and master key replacement (operator)",
      {CliCommand::leaf("status", "whether the account has end-to-end encryption set up", {}, {},
                        status)
           .calls({"GET /api/encryption/"}),
       CliCommand::leaf(
           "init", "set up end-to-end encryption with a passphrase", {}, {passphrase, drop}, init,
           "Asks for the passphrase twice (no echo) unless --passphrase-file or "
           "SVC_VAULT_PASSPHRASE_FILE gives it, makes a salt, the key pair and the verifier on "
           "this machine and sets them. Values the account stored before are sealed in the same "
           "change. Keep the passphrase: nobody, the server included, can open the values "
           "without it.")
           .calls({"GET /api/encryption/", "POST /api/encryption/rekey/", "PUT /api/encryption/",
                   "DELETE /api/encryption/rekey/"}),
       CliCommand::leaf("unlock", "check a passphrase against the account's verifier", {},
                        {passphrase}, unlock, "Exits 1, saying so, when the passphrase is wrong.")
           .calls({"GET /api/encryption/"}),
       CliCommand::leaf(
           "change-passphrase", "re-seal every value of the account under a new passphrase", {},
           {passphrase,
            {"--new-passphrase-file", "FILE",
             "the new passphrase from this file (else asked twice)"},
            drop},
           changePassphrase,
           "Opens every protected value with the current passphrase and seals it to the new one "
           "in one atomic change: interrupted, the current passphrase keeps working and nothing "
           "is half changed (run it again). Writes to the vault get 409 vault_rekeying while it "
           "runs.")
           .calls({"GET /api/encryption/", "POST /api/encryption/rekey/", "PUT /api/encryption/",
                   "DELETE /api/encryption/rekey/"}),
       CliCommand::leaf("rotate-key",
                        "make a new data key current on every svcd and re-encrypt every vault "
                        "value under it while svcd serves (operator)",
                        {}, {}, rotateKey)
           .calls({"POST /admin/vault/rotate-key/"}),
       CliCommand::leaf("keys",
                        "the data keys, the master key wrapping them, and whether this svcd's key "
                        "file holds it (operator)",
                        {}, {}, keys)
           .calls({"GET /admin/vault/keys/"}),
       CliCommand::leaf(
           "replace-master-key",
           "replace the master key of vault.master_key_file without downtime (operator)", {},
           {{"--finish", "", "every machine has the new file: drop the old key's wrapping"},
            {"--cancel", "", "give the replacement up: drop the new key's wrapping"}},
           replaceMasterKey,
           "Without an option, writes a new key file beside the svcd's own (<file>.new) and wraps "
           "every data key under its key as well, so the old file and the new one both work. Copy "
           "the new file over vault.master_key_file on every machine (each svcd takes it up "
           "without a restart), check each with svcctl vault keys, then run it with --finish: "
           "from then on only the new file opens the vault. Rotation is refused meanwhile by a "
           "svcd that lacks the new file.")
           .calls({"POST /admin/vault/master-key/", "POST /admin/vault/master-key/finish/",
                   "POST /admin/vault/master-key/cancel/"})})};
}

}  // namespace

}  // namespace svc::plugins::vault

SVC_CLI_COMMANDS(svc::plugins::vault::commands)
