#include "cli_rekey.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

namespace svc::plugins::vault {

namespace {

namespace e2e = sdk::e2e;

// One listed value, sealed to `to`: opened with `old` first when it is sealed.
std::string resealed(const std::string& value, const e2e::KeyPair* old, const std::string& to,
                     const std::string& where) {
  if (!e2e::isSealed(value)) return e2e::seal(value, to);
  const auto opened = old ? old->open(value) : std::nullopt;
  if (!opened) {
    throw sdk::CliError(where +
                        " does not open with the current passphrase's key: nothing was changed "
                        "(svcctl vault unlock checks the passphrase)");
  }
  return e2e::seal(opened->view(), to);
}

// The records of the lease's answer, each value sealed to `to`.
Poco::JSON::Array::Ptr resealAll(const Poco::JSON::Array& listed, const e2e::KeyPair* old,
                                 const std::string& to, std::size_t& count,
                                 std::size_t& undecryptable) {
  Poco::JSON::Array::Ptr out = new Poco::JSON::Array;
  for (std::size_t i = 0; i < listed.size(); ++i) {
    auto record = listed.getObject(static_cast<unsigned>(i));
    auto fields = record ? record->getObject("fields") : nullptr;
    if (!fields) throw sdk::CliError("the server's rekey answer lists a record without fields");
    const std::string holder = record->getValue<std::string>("holder");
    const std::string uuid = record->getValue<std::string>("uuid");
    Poco::JSON::Object::Ptr sealed = new Poco::JSON::Object;
    for (const auto& name : fields->getNames()) {
      if (fields->isNull(name)) {  // the server could not decrypt it at rest: dropped
        sealed->set(name, Poco::Dynamic::Var());
        ++undecryptable;
        continue;
      }
      std::string value = fields->getValue<std::string>(name);
      sealed->set(name, resealed(value, old, to, "the " + name + " of " + holder + " " + uuid));
      e2e::wipe(value);
      ++count;
    }
    Poco::JSON::Object::Ptr item = new Poco::JSON::Object;
    item->set("holder", holder);
    item->set("uuid", uuid);
    item->set("fields", sealed);
    out->add(item);
  }
  return out;
}

}  // namespace

std::size_t resealUnderLease(sdk::CliContext& cli, const e2e::KeyPair* old,
                             const std::function<e2e::NewKeys()>& make_new,
                             bool drop_undecryptable) {
  auto lease = cli.api("POST", "/api/encryption/rekey/", "{}");
  sdk::CliContext::expect(lease, 201);
  std::size_t count = 0, undecryptable = 0;
  bool sent = false;
  std::string token;
  try {
    auto listed = lease.json();
    e2e::wipe(lease.body);  // it carries the plaintexts of values stored before encryption
    token = listed->getValue<std::string>("rekey_token");
    const e2e::NewKeys fresh = make_new();
    auto body = fresh.metadata.toJson();
    body->set("rekey_token", token);
    auto records = listed->getArray("records");
    body->set("records",
              records ? resealAll(*records, old, fresh.keys.publicKey(), count, undecryptable)
                      : Poco::JSON::Array::Ptr(new Poco::JSON::Array));
    if (undecryptable > 0 && !drop_undecryptable) {
      throw sdk::CliError(
          std::to_string(undecryptable) +
          " values do not decrypt on this server (listed as null): the change would delete "
          "them, so nothing was changed. Check that every svcd has the same "
          "vault.master_key_file; to delete them, run again with --drop-undecryptable.");
    }
    sent = true;
    sdk::CliReply put;
    try {
      put = cli.api("PUT", "/api/encryption/", sdk::jsonText(*body));
    } catch (const sdk::CliError&) {
      // The change may have been applied and only its answer lost: the lease is left alone and
      // nobody is told that the old passphrase still holds.
      throw sdk::CliError(
          "no answer to the passphrase change: it may have been applied. Try `svcctl vault "
          "unlock` with the NEW passphrase; if it is refused, the old one still holds (the "
          "change's lease lapses after vault.rekey_seconds).");
    }
    sent = false;
    sdk::CliContext::expect(put, 200);
  } catch (...) {
    if (!sent && !token.empty()) {
      try {  // writes get 409 while the lease holds: give it back rather than let it lapse
        Poco::JSON::Object end;
        end.set("rekey_token", token);
        cli.api("DELETE", "/api/encryption/rekey/", sdk::jsonText(end));
      } catch (const std::exception&) {  // it lapses on its own (vault.rekey_seconds)
      }
    }
    throw;
  }
  return count;
}

}  // namespace svc::plugins::vault
