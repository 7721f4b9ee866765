#include "secret_routes.h"

#include "secret_input.h"

#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

namespace svc::plugins::secrets {

void SecretRoutes::registerIn(sdk::RouteRegistry& routes) {
  using sdk::AuthNeed;
  using sdk::Schema;
  const Schema secret = secretSchema(), input = secretInputSchema();
  const sdk::RouteError conflict{409, "conflict", "the identity has a secret with that key"};
  const sdk::RouteError rekeying{409, "vault_rekeying",
                                 "the account's passphrase is being changed (Retry-After)"};
  const sdk::RouteError sealed{400, "invalid",
                               "the account has end-to-end encryption and a value is not sealed"};
  const sdk::RouteError stale_key{409, "e2e_key_changed",
                                  "the values were sealed to a public key (X-Svc-E2e-Public-Key) "
                                  "that is no longer the account's"};
  const sdk::JsonRoutes add(routes);
  std::vector<sdk::Param> list_query = sdk::pageParams();
  list_query.push_back({"key", Schema::string().pattern(kKeyPattern, kKeyRule), false,
                        "Exactly this key (an identity's secret by key)."});
  list_query.push_back({"values", Schema::boolean(), false,
                        "false: names only, nothing decrypted or sent (default true)."});
  // Said where an agent reads values (MCP tools are described by these summaries): a sealed
  // value is not an error to retry, and no call to this server can open it.
  const std::string sealed_values =
      " Once the account has end-to-end encryption, value and notes are `e2e::` sealed boxes "
      "that only the passphrase opens, on the client (svcctl secrets get KEY --reveal): this "
      "server, and so its API and MCP tools, cannot show them in clear.";
  // The contract serves the same resource under both prefixes.
  for (const std::string prefix : {"/api/secrets/", "/api/vault/"}) {
    add("GET", prefix, AuthNeed::kAnyKey, "Secrets, newest first (identity, key)." + sealed_values,
        sdk::bindHandler(*this, &SecretRoutes::list), std::nullopt, list_query,
        {{200, sdk::pageOf(secret, "SecretList")}}, {});
    add("POST", prefix, AuthNeed::kIdentity, "Create a secret {key, value, notes?}.",
        sdk::bindHandler(*this, &SecretRoutes::create), input, {}, {{201, secret}},
        {conflict, rekeying, sealed, stale_key});
    const auto one = sdk::bindHandler(*this, &SecretRoutes::one);
    const std::string item = prefix + "{uuid}/";
    add("GET", item, AuthNeed::kAnyKey, "One secret." + sealed_values, one, std::nullopt, {},
        {{200, secret}}, {});
    add("PUT", item, AuthNeed::kAnyKey, "Replace a secret {key, value, notes?}.", one, input, {},
        {{200, secret}}, {conflict, rekeying, sealed, stale_key});
    add("PATCH", item, AuthNeed::kAnyKey, "Change a secret's key, value or notes.", one,
        input.partial("SecretPatch"), {}, {{200, secret}}, {conflict, rekeying, sealed, stale_key});
    add("DELETE", item, AuthNeed::kAnyKey, "Delete a secret.", one, std::nullopt, {},
        {{204, Schema::any()}}, {rekeying});
  }
}

sdk::ProtectedFields SecretRoutes::fieldsOf(Poco::Data::Session& s, const SecretRow& row) {
  auto all = vault_.get(s, row.account_id, kHolder, {row.id});
  auto it = all.find(row.id);
  return it == all.end() ? sdk::ProtectedFields{} : it->second;
}

std::shared_ptr<const CachedSecret> SecretRoutes::cachedByKey(const SecretFilter& filter) {
  if (auto kept = cache_.find(filter.identity_uuid, *filter.key)) return kept;
  const auto claim = cache_.claim();
  Poco::Data::Session s = db_.session();
  auto row = store_.byKey(s, filter.identity_uuid, *filter.key);
  if (!row) return nullptr;
  auto stored = vault_.fetch(s, row->account_id, kHolder, {row->id});
  auto secret = std::make_shared<const CachedSecret>(CachedSecret{*row, stored[row->id]});
  // No value at all: deleted a moment ago (or its value was dropped): served, not kept.
  if (!secret->stored.fields.empty()) cache_.keep(claim, secret);
  return secret;
}

sdk::Response SecretRoutes::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  SecretFilter filter{r.principal.account_id, sdk::scopeIdentity(r), r.queryParam("key")};
  // `values=false`: names only (a dashboard's list, a script's inventory): nothing is decrypted
  // or sent.
  const bool values = r.boolQuery("values").value_or(true);
  if (filter.key && !filter.identity_uuid.empty() && values && page.offset == 0) {
    // An agent reading its secret: from the cache, decrypted now. When the vault says the kept
    // record is stale, it is dropped and read below.
    auto secret = cachedByKey(filter);
    const bool mine = secret && secret->row.account_id == filter.account_id;
    auto fields = mine ? vault_.open(secret->stored) : std::nullopt;
    if (!secret || fields) {
      Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
      if (secret) results->add(SecretStore::json(secret->row, *fields));
      return sdk::Response::noStore(sdk::Response::json(
          200, sdk::pageBody(r, page, static_cast<long>(results->size()), results)));
    }
    cache_.drop(secret->row.id);
  }
  Poco::Data::Session s = db_.session();
  std::vector<SecretRow> rows;
  long count = 0;
  if (filter.key && !filter.identity_uuid.empty()) {
    // An agent reading its secret: at most one, found in the unique index with no sort or count.
    auto one = store_.byKey(s, filter.identity_uuid, *filter.key);
    if (one && one->account_id != filter.account_id) one.reset();  // never another's
    count = one ? 1 : 0;
    if (one && page.offset == 0) rows.push_back(*one);
  } else {
    rows = store_.list(s, filter, page.limit, page.offset);
    // A page that ends before its limit, with something on it or from the start, tells the count.
    const bool ends_here =
        static_cast<int>(rows.size()) < page.limit && (page.offset == 0 || !rows.empty());
    count = ends_here ? page.offset + static_cast<long>(rows.size()) : store_.count(s, filter);
  }
  std::vector<std::string> ids;
  ids.reserve(rows.size());
  for (const auto& row : rows) ids.push_back(row.id);
  const auto fields = ids.empty() || !values ? std::map<std::string, sdk::ProtectedFields>{}
                                             : vault_.get(s, filter.account_id, kHolder, ids);
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& row : rows) {
    auto it = fields.find(row.id);
    results->add(
        !values ? SecretStore::eventJson(row)
                : SecretStore::json(row, it == fields.end() ? sdk::ProtectedFields{} : it->second));
  }
  return sdk::Response::noStore(sdk::Response::json(200, sdk::pageBody(r, page, count, results)));
}

sdk::Response SecretRoutes::create(sdk::Request& r) {
  const SecretInput in = readSecretInput(r, WriteMode::kCreate);
  SecretRow row;
  row.id = sdk::newUuid();
  row.account_id = r.principal.account_id;
  row.identity_uuid = r.identity->uuid;
  row.key = *in.key;
  row.created_us = row.updated_us = sdk::nowMicros();
  const sdk::ProtectedFields fields = {{"value", *in.value}, {"notes", *in.notes}};
  db_.transaction([&](Poco::Data::Session& tx) {
    store_.insert(tx, row);
    vault_.put(tx, {row.account_id, row.identity_uuid, kHolder, row.id, fields,
                    r.header(sdk::kSealedToHeader).value_or("")});
  });
  return sdk::Response::noStore(sdk::Response::json(201, SecretStore::json(row, fields)));
}

SecretRow SecretRoutes::visible(Poco::Data::Session& s, const sdk::Request& r) {
  auto row = store_.find(s, r.params.at("uuid"));
  if (!row || !sdk::visibleTo(r, row->account_id, row->identity_uuid)) {
    throw sdk::HttpError::notFound("secret");
  }
  return *row;
}

sdk::Response SecretRoutes::one(sdk::Request& r) {
  if (r.method == "DELETE") return remove(r);
  const SecretInput in =
      r.method == "GET"
          ? SecretInput{}
          : readSecretInput(r, r.method == "PUT" ? WriteMode::kReplace : WriteMode::kPatch);
  if (!in.empty()) return write(r, in);
  Poco::Data::Session s = db_.session();
  const SecretRow row = visible(s, r);
  return sdk::Response::noStore(sdk::Response::json(200, SecretStore::json(row, fieldsOf(s, row))));
}

sdk::Response SecretRoutes::write(sdk::Request& r, const SecretInput& in) {
  Poco::JSON::Object::Ptr body;
  std::string id;
  db_.transaction([&](Poco::Data::Session& tx) {
    SecretRow row = visible(tx, r);
    id = row.id;
    if (in.key) row.key = *in.key;
    row.updated_us = sdk::nowMicros();
    store_.update(tx, row);
    sdk::ProtectedFields changed;
    if (in.value) changed["value"] = *in.value;
    if (in.notes) changed["notes"] = *in.notes;
    if (!changed.empty()) {
      vault_.put(tx, {row.account_id, row.identity_uuid, kHolder, row.id, changed,
                      r.header(sdk::kSealedToHeader).value_or("")});
    }
    body = SecretStore::json(row, fieldsOf(tx, row));
  });
  cache_.drop(id);  // committed: nothing read before it is kept
  return sdk::Response::noStore(sdk::Response::json(200, body));
}

sdk::Response SecretRoutes::remove(sdk::Request& r) {
  std::string id;
  db_.transaction([&](Poco::Data::Session& tx) {
    const SecretRow row = visible(tx, r);
    id = row.id;
    if (!store_.remove(tx, row)) throw sdk::HttpError::notFound("secret");
    vault_.erase(tx, row.account_id, kHolder, row.id);
  });
  cache_.drop(id);
  return sdk::Response::noContent();
}

}  // namespace svc::plugins::secrets
