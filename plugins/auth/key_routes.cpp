#include "key_routes.h"

#include "auth_http.h"

#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

namespace svc::plugins::auth {

void KeyRoutes::registerRoutes(sdk::RouteRegistry& routes) {
  using sdk::AuthNeed;
  using sdk::BodyKind;
  routes.add({"POST", "/api/auth/keys/", AuthNeed::kAccount, BodyKind::kJson, 0,
              "Create a management key.", [this](sdk::Request& r) { return create(r, false); }});
  routes.add({"POST", "/api/auth/keys/identity/", AuthNeed::kAccount, BodyKind::kJson, 0,
              "Create an identity key.", [this](sdk::Request& r) { return create(r, true); }});
  routes.add({"GET", "/api/auth/keys/", AuthNeed::kAccount, BodyKind::kJson, 0, "List keys.",
              [this](sdk::Request& r) { return list(r); }});
  routes.add({"DELETE", "/api/auth/keys/{id}/", AuthNeed::kAccount, BodyKind::kJson, 0,
              "Revoke a key.", [this](sdk::Request& r) { return revoke(r); }});
}

sdk::Response KeyRoutes::create(sdk::Request& r, bool identity_key) {
  std::string label = boundedField(r, "label", 200, false);
  std::string identity;
  if (identity_key) {
    identity = boundedField(r, "identity", 64, false);
    if (identity.empty()) identity = boundedField(r, "identity_uuid", 64, false);
    if (identity.empty()) throw sdk::HttpError::invalid("identity", "this field is required");
  }
  auto [record, key] = keys_.mint(r.principal.account_id, r.principal.user_id, label, identity);
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", record.id);
  o->set("key", key);
  o->set("kind", record.kind);
  if (identity_key) o->set("identity", record.identity_id);
  o->set("label", record.label);
  o->set("prefix", record.prefix);
  o->set("created_dt", sdk::isoTimestamp(record.created_us));
  return noStore(201, o);
}

sdk::Response KeyRoutes::list(sdk::Request& r) {
  const sdk::PageRequest page = sdk::pageRequest(r);
  auto keys = store_.keysOf(r.principal.account_id);
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (std::size_t i = static_cast<std::size_t>(page.offset);
       i < keys.size() && results->size() < static_cast<std::size_t>(page.limit); ++i) {
    results->add(keyJson(keys[i]));
  }
  return sdk::Response::json(200, sdk::pageBody(r, page, static_cast<long>(keys.size()), results));
}

sdk::Response KeyRoutes::revoke(sdk::Request& r) {
  if (!keys_.revoke(r.principal.account_id, r.params.at("id"))) {
    throw sdk::HttpError::notFound("key");
  }
  return sdk::Response::noContent();
}

}  // namespace svc::plugins::auth
