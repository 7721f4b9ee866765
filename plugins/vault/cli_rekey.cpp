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
                                 const std::string& to, std::size_t& count) {
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
                             const std::function<e2e::NewKeys()>& make_new) {
  auto lease = cli.api("POST", "/api/encryption/rekey/", "{}");
  sdk::CliContext::expect(lease, 201);
  std::size_t count = 0;
  try {
    auto listed = lease.json();
    e2e::wipe(lease.body);  // it carries the plaintexts of values stored before encryption
    const e2e::NewKeys fresh = make_new();
    auto body = fresh.metadata.toJson();
    body->set("rekey_token", listed->getValue<std::string>("rekey_token"));
    auto records = listed->getArray("records");
    body->set("records", records ? resealAll(*records, old, fresh.keys.publicKey(), count)
                                 : Poco::JSON::Array::Ptr(new Poco::JSON::Array));
    sdk::CliContext::expect(cli.api("PUT", "/api/encryption/", sdk::jsonText(*body)), 200);
  } catch (...) {
    try {  // writes wait for the lease: give it back rather than let it lapse
      cli.api("DELETE", "/api/encryption/rekey/");
    } catch (const std::exception&) {  // it lapses on its own (vault.rekey_seconds)
    }
    throw;
  }
  return count;
}

}  // namespace svc::plugins::vault
