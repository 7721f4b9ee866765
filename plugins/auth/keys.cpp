#include "keys.h"

#include "key_format.h"

#include <svc/sdk/auth.h>
#include <svc/sdk/util.h>

#include <Poco/String.h>

namespace svc::plugins::auth {

using sdk::sha256Hex;

Poco::JSON::Object::Ptr keyJson(const KeyRecord& k) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", k.id);
  o->set("kind", k.kind);
  o->set("label", k.label);
  o->set("prefix", k.prefix);
  o->set("identity",
         k.identity_id.empty() ? Poco::Dynamic::Var() : Poco::Dynamic::Var(k.identity_id));
  o->set("created_dt", sdk::isoTimestamp(k.created_us));
  o->set("last_used_dt", k.last_used_us ? Poco::Dynamic::Var(sdk::isoTimestamp(k.last_used_us))
                                        : Poco::Dynamic::Var());
  return o;
}

std::pair<KeyRecord, std::string> KeyManager::mint(const std::string& account_id,
                                                   const std::string& creator,
                                                   const std::string& label, std::string identity) {
  if (!identity.empty()) {
    identity = Poco::toLower(identity);
    auto directory = context_.services().find(sdk::kIdentityDirectoryService);
    if (!sdk::isUuid(identity) || !directory || !directory->find(account_id, identity)) {
      throw sdk::HttpError::notFound("identity");
    }
  }
  std::string key = newKey(identity.empty() ? KeyKind::kManagement : KeyKind::kIdentity);
  KeyRecord record;
  context_.database().transaction([&](Poco::Data::Session& s) {
    if (store_.lockAndCountKeys(s, account_id) >= max_keys_) throw tooManyKeys();
    record = store_.addKey(s, account_id, identity.empty() ? "management" : "identity", identity,
                           label, visiblePrefix(key), sha256Hex(key), creator);
    publish("key.created", record, s);
  });
  return {record, key};
}

// A runaway script minting keys in a loop stops here, not at the database's limits.
sdk::HttpError KeyManager::tooManyKeys() const {
  const std::string most = std::to_string(max_keys_);
  sdk::HttpError e(400, "invalid",
                   "This account already has " + most +
                       " keys, the most it may have; revoke keys it no longer uses "
                       "(DELETE /api/auth/keys/{id}/) and create this one again.");
  e.field("keys", "at most " + most + " unrevoked keys per account; revoke unused keys");
  return e;
}

bool KeyManager::revoke(const std::string& account_id, const std::string& key_id) {
  auto revoked =
      store_.revokeKey(account_id, key_id, [this](Poco::Data::Session& s, const KeyRecord& k) {
        publish("key.revoked", k, s);
        revoker_.revoke(s, k.account_id, keyCredential(k.id), "The key was revoked.");
      });
  if (!revoked) return false;
  // The hash is not kept in the record; clear this process's cache by re-reading revocations.
  for (const auto& hash : store_.revokedSince(revoked->revoked_us)) authenticator_.forget(hash);
  return true;
}

void KeyManager::publish(const std::string& type, const KeyRecord& k, Poco::Data::Session& s) {
  context_.events().publish(type, k.account_id, k.identity_id, keyJson(k), &s);
}

}  // namespace svc::plugins::auth
