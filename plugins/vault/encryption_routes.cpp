#include "encryption_routes.h"

#include "e2e_rule.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/String.h>

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

namespace svc::plugins::vault {

namespace {

using Place = std::tuple<std::string, std::string, std::string>;  // holder, record, field

Poco::JSON::Object::Ptr metadataJson(const AccountRow& a) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("salt", a.salt);
  o->set("public_key", a.public_key);
  o->set("verifier", a.verifier);
  Poco::JSON::Object::Ptr kdf = new Poco::JSON::Object;
  kdf->set("alg", "argon2id");
  kdf->set("t", a.kdf_t);
  kdf->set("m", a.kdf_m);
  kdf->set("p", a.kdf_p);
  o->set("kdf", kdf);
  o->set("created_dt", sdk::isoTimestamp(a.created_us));
  o->set("updated_dt", sdk::isoTimestamp(a.updated_us));
  if (a.rekeying(sdk::nowMicros())) {
    Poco::JSON::Object::Ptr lease = new Poco::JSON::Object;
    lease->set("expires_dt", sdk::isoTimestamp(a.rekey_expires_us));
    o->set("rekey", lease);
  } else {
    o->set("rekey", Poco::Dynamic::Var());
  }
  return o;
}

// The account's row, locked for the change (ensureAccount() made it before the transaction).
AccountRow lockedAccount(VaultStore& store, Poco::Data::Session& tx, const std::string& account) {
  if (auto a = store.account(tx, account, Lock::kExclusive)) return *a;
  throw std::runtime_error("vault: the account's row vanished");
}

sdk::HttpError badRecords(const std::string& why) {
  return sdk::HttpError::invalid("records", why);
}

// Reads `records: [{holder, uuid, fields: {field: value}}]`, each value a sealed box, or null for
// a value that does not decrypt (the change then drops it).
std::map<Place, std::optional<std::string>> readRecords(const sdk::Request& r) {
  std::map<Place, std::optional<std::string>> out;
  if (!r.json || !r.json->has("records") || r.json->isNull("records")) return out;
  auto list = r.json->getArray("records");
  if (!list) throw badRecords("must be a list of {holder, uuid, fields}");
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto rec = list->getObject(static_cast<unsigned>(i));
    auto fields = rec ? rec->getObject("fields") : nullptr;
    const std::string at = "item " + std::to_string(i) + ": ";
    if (!fields || !rec->get("holder").isString() || !rec->get("uuid").isString()) {
      throw badRecords(at + "must be {holder, uuid, fields: {name: value}}");
    }
    const auto holder = rec->getValue<std::string>("holder");
    const auto uuid = Poco::toLower(rec->getValue<std::string>("uuid"));
    for (const auto& name : fields->getNames()) {
      const auto v = fields->get(name);
      std::optional<std::string> value;
      if (!v.isEmpty()) {
        if (!v.isString() || !isSealedValue(v.convert<std::string>())) {
          throw badRecords(at + name + " must be an `e2e::<base64>` sealed box to the new key");
        }
        value = v.convert<std::string>();
      }
      if (!out.emplace(Place{holder, uuid, name}, value).second) {
        throw badRecords(at + "lists " + holder + " " + uuid + " " + name + " twice");
      }
    }
  }
  return out;
}

}  // namespace

EncryptionRoutes::EncryptionRoutes(VaultStore& store, VaultService& service, sdk::EventBus& events,
                                   int lease_seconds)
    : store_(store), service_(service), events_(events), lease_seconds_(lease_seconds) {}

sdk::Response EncryptionRoutes::get(sdk::Request& r) {
  Poco::Data::Session s = store_.database().session();
  const auto a = store_.account(s, r.principal.account_id, Lock::kNone);
  if (!a || !a->endToEnd()) {
    throw sdk::HttpError(404, "not_found",
                         "End-to-end encryption is not set up for this account: PUT "
                         "/api/encryption/ with {salt, public_key, verifier} sets it up.");
  }
  // The verifier checks a passphrase, offline too: kept from caches like the values it guards.
  return sdk::Response::noStore(sdk::Response::json(200, metadataJson(*a)));
}

sdk::Response EncryptionRoutes::set(sdk::Request& r) {
  const EncryptionSetup setup = parseEncryptionSetup(r);
  const auto submitted = readRecords(r);
  const auto token = r.stringField("rekey_token");
  const std::string& account = r.principal.account_id;
  AccountRow saved;
  store_.ensureAccount(account);
  store_.database().transaction([&](Poco::Data::Session& tx) {
    AccountRow a = lockedAccount(store_, tx, account);
    auto current = store_.accountValues(tx, account, Lock::kExclusive);
    const std::int64_t now = sdk::nowMicros();
    const bool leased = token && a.rekeying(now) &&
                        sdk::constantTimeEquals(sdk::sha256Hex(*token), a.rekey_token_hash);
    if (token && !leased) {
      throw sdk::HttpError(409, "rekey_expired",
                           "The passphrase change's lease has ended or was replaced: start "
                           "again with POST /api/encryption/rekey/.");
    }
    // Another client's change holds the vault: wait for it (taking its lease over would undo
    // its work), rather than be told to start one.
    if (!leased) VaultService::refuseWhileRekeying(a);
    if (!leased && (a.endToEnd() || !current.empty())) {
      throw sdk::HttpError(409, "rekey_required",
                           "This account's vault has values or a passphrase already: start with "
                           "POST /api/encryption/rekey/, seal every value it lists to the new "
                           "key, and send them here in `records` with its `rekey_token`.");
    }
    std::set<Place> expected;
    for (const auto& v : current) expected.insert({v.holder, v.record, v.field});
    for (const auto& place : expected) {
      if (!submitted.count(place)) {
        throw badRecords("the " + std::get<2>(place) + " of " + std::get<0>(place) + " " +
                         std::get<1>(place) + " is missing: send every value the change listed");
      }
    }
    for (const auto& [place, value] : submitted) {
      if (!expected.count(place)) {
        throw badRecords(std::get<0>(place) + " " + std::get<1>(place) + " has no " +
                         std::get<2>(place) + " in this account's vault");
      }
    }
    for (auto& row : current) {
      const auto& value = submitted.at({row.holder, row.record, row.field});
      if (value) {
        service_.seal(tx, row, *value);
        store_.putValue(tx, row);
      } else if (!service_.tryOpenRow(row)) {
        store_.eraseValue(tx, row.account_id, row.holder, row.record, row.field);
      } else {
        throw badRecords("the " + row.field + " of " + row.holder + " " + row.record +
                         " is null: only a value that does not decrypt may be dropped");
      }
    }
    a.salt = setup.salt;
    a.public_key = setup.public_key;
    a.verifier = setup.verifier;
    a.kdf_t = setup.t;
    a.kdf_m = setup.m;
    a.kdf_p = setup.p;
    if (a.created_us == 0) a.created_us = now;
    a.updated_us = now;
    a.rekey_token_hash.clear();
    a.rekey_expires_us = 0;
    store_.saveAccount(tx, a);
    events_.publish("encryption.updated", account, "", metadataJson(a), &tx);
    saved = a;
  });
  // Every value of the account may be new: what plugins keep from fetch() is stale (the event
  // tells other svcd processes).
  service_.invalidate(account);
  return sdk::Response::noStore(sdk::Response::json(200, metadataJson(saved)));
}

sdk::Response EncryptionRoutes::beginRekey(sdk::Request& r) {
  const std::string& account = r.principal.account_id;
  const std::string token = sdk::randomToken(32);
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  Poco::JSON::Array::Ptr records = new Poco::JSON::Array;
  store_.ensureAccount(account);
  store_.database().transaction([&](Poco::Data::Session& tx) {
    AccountRow a = lockedAccount(store_, tx, account);
    a.rekey_token_hash = sdk::sha256Hex(token);
    a.rekey_expires_us = sdk::nowMicros() + static_cast<std::int64_t>(lease_seconds_) * 1000000;
    store_.saveAccount(tx, a);
    body->set("expires_dt", sdk::isoTimestamp(a.rekey_expires_us));
    Poco::JSON::Object::Ptr record;
    for (const auto& v : store_.accountValues(tx, account, Lock::kExclusive)) {
      if (!record || record->getValue<std::string>("holder") != v.holder ||
          record->getValue<std::string>("uuid") != v.record) {
        record = new Poco::JSON::Object;
        record->set("holder", v.holder);
        record->set("uuid", v.record);
        record->set("identity", v.identity_uuid.empty() ? Poco::Dynamic::Var()
                                                        : Poco::Dynamic::Var(v.identity_uuid));
        record->set("fields", Poco::JSON::Object::Ptr(new Poco::JSON::Object));
        records->add(record);
      }
      // A value that does not decrypt (logged) is listed as null: the change may drop it.
      const auto plain = service_.tryOpenRow(v);
      record->getObject("fields")->set(v.field,
                                       plain ? Poco::Dynamic::Var(*plain) : Poco::Dynamic::Var());
    }
  });
  body->set("rekey_token", token);
  body->set("records", records);
  // Every protected value of the account, in clear, and the lease's token.
  return sdk::Response::noStore(sdk::Response::json(201, body));
}

sdk::Response EncryptionRoutes::endRekey(sdk::Request& r) {
  // Only the lease's holder may end it: a client that could end another's change would let
  // writes sealed to the old key in while that change re-seals everything to a new one.
  const auto token = r.stringField("rekey_token");
  if (!token || token->empty()) {
    throw sdk::HttpError::invalid("rekey_token",
                                  "this field is required: the token POST "
                                  "/api/encryption/rekey/ answered");
  }
  store_.database().transaction([&](Poco::Data::Session& tx) {
    auto a = store_.account(tx, r.principal.account_id, Lock::kExclusive);
    if (!a || a->rekey_token_hash.empty()) return;  // nothing holds the vault: nothing to end
    if (!sdk::constantTimeEquals(sdk::sha256Hex(*token), a->rekey_token_hash)) {
      if (!a->rekeying(sdk::nowMicros())) return;  // a lapsed lease holds nothing
      throw sdk::HttpError(409, "rekey_expired",
                           "This token's lease has ended or was replaced by another passphrase "
                           "change, which only its own client may end.");
    }
    a->rekey_token_hash.clear();
    a->rekey_expires_us = 0;
    store_.saveAccount(tx, *a);
  });
  return sdk::Response::noContent();
}

}  // namespace svc::plugins::vault
