#include "key_routes.h"

#include "auth_http.h"
#include "auth_shapes.h"

#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

namespace svc::plugins::auth {

void KeyRoutes::registerRoutes(sdk::RouteRegistry& routes) {
  const std::vector<sdk::Param> none;  // takes no query parameter: the kernel refuses any
  using sdk::AuthNeed;
  using sdk::BodyKind;
  using sdk::Schema;
  const auto label = plainText(200).describe("What the key is for, to tell keys apart.");
  const sdk::RouteError too_many{400, "invalid",
                                 "the account has auth.keys.max_per_account unrevoked keys "
                                 "(errors.keys): revoke unused ones"};
  routes.add({"POST",
              "/api/auth/keys/",
              AuthNeed::kAccount,
              BodyKind::kJson,
              0,
              "Create a management key.",
              [this](sdk::Request& r) { return create(r, false); },
              Schema::object("ManagementKeyInput").optional("label", label),
              none,
              {{201, newKeySchema()}},
              {too_many}});
  const auto identity =
      Schema::string().format("uuid").describe("The identity the key acts for (required).");
  routes.add({"POST",
              "/api/auth/keys/identity/",
              AuthNeed::kAccount,
              BodyKind::kJson,
              0,
              "Create an identity key {identity, label}.",
              [this](sdk::Request& r) { return create(r, true); },
              Schema::object("IdentityKeyInput")
                  .optional("identity", identity)
                  .optional("identity_uuid",
                            Schema::string().format("uuid").describe("identity, by another name."))
                  .optional("label", label),
              none,
              {{201, newKeySchema()}},
              {too_many}});
  routes.add({"GET",
              "/api/auth/keys/",
              AuthNeed::kAccount,
              BodyKind::kJson,
              0,
              "List keys (never their secret).",
              [this](sdk::Request& r) { return list(r); },
              std::nullopt,
              sdk::pageParams(),
              {{200, sdk::pageOf(keySchema(), "KeyList")}}});
  routes.add({"DELETE",
              "/api/auth/keys/{id}/",
              AuthNeed::kAccount,
              BodyKind::kJson,
              0,
              "Revoke a key: it fails with 401 from the next request on.",
              [this](sdk::Request& r) { return revoke(r); },
              std::nullopt,
              none,
              {{204, Schema::any()}}});
}

sdk::Response KeyRoutes::create(sdk::Request& r, bool identity_key) {
  const std::string label = r.stringField("label").value_or("");
  std::string identity;
  if (identity_key) {
    // `identity_uuid` is the contract's other name for it: one of the two is needed.
    identity = r.stringField("identity").value_or(r.stringField("identity_uuid").value_or(""));
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
