#include "webhook_routes.h"

#include "signature.h"
#include "webhook_shapes.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>

#include <algorithm>

namespace svc::plugins::webhooks {

void WebhookRoutes::registerIn(sdk::RouteRegistry& routes) {
  using sdk::AuthNeed;
  using sdk::Schema;
  const Schema input = webhookInputSchema(events_.declaredTypes());
  const Schema hook = webhookSchema(), with_secret = webhookWithSecretSchema(),
               delivery = deliverySchema();
  const Schema nothing = Schema::object();
  const sdk::JsonRoutes add(routes);
  const sdk::RouteError bad_url{400, "invalid",
                                "the url is not http(s), carries credentials, does not resolve "
                                "or points at a private address"};
  add("GET", "/api/webhooks/", AuthNeed::kAnyKey,
      "Webhooks, newest first (an identity key: its identity's).",
      sdk::bindHandler(*this, &WebhookRoutes::list), std::nullopt, sdk::pageParams(),
      {{200, sdk::pageOf(hook, "WebhookList")}}, {});
  add("POST", "/api/webhooks/", AuthNeed::kAnyKey,
      "Create a webhook {url, event_types?, description?, enabled?} for the account, or for the "
      "identity named (identity key, identity=); the answer shows its secret, once.",
      sdk::bindHandler(*this, &WebhookRoutes::create), input, {}, {{201, with_secret}},
      {bad_url,
       {409, "conflict",
        "the account has " + std::to_string(kMaxWebhooksPerAccount) +
            " webhooks already (the most it may have)"}});
  const auto one = sdk::bindHandler(*this, &WebhookRoutes::one);
  add("GET", "/api/webhooks/{uuid}/", AuthNeed::kAnyKey, "One webhook.", one, std::nullopt, {},
      {{200, hook}}, {});
  add("PATCH", "/api/webhooks/{uuid}/", AuthNeed::kAnyKey,
      "Change a webhook's url, event types, description or enabled (true resumes deliveries).", one,
      input.partial("WebhookPatch"), {}, {{200, hook}}, {bad_url});
  add("DELETE", "/api/webhooks/{uuid}/", AuthNeed::kAnyKey,
      "Delete a webhook and its delivery log.", one, std::nullopt, {}, {{204, Schema::any()}}, {});
  add("POST", "/api/webhooks/{uuid}/rotate-secret/", AuthNeed::kAnyKey,
      "A new secret (shown once); the old one also signs for 24 hours.",
      sdk::bindHandler(*this, &WebhookRoutes::rotateSecret), nothing, {}, {{200, with_secret}}, {});
  add("GET", "/api/webhooks/{uuid}/deliveries/", AuthNeed::kAnyKey,
      "A webhook's deliveries, newest first.", sdk::bindHandler(*this, &WebhookRoutes::deliveries),
      std::nullopt, sdk::pageParams(), {{200, sdk::pageOf(delivery, "WebhookDeliveryList")}}, {});
  add("POST", "/api/webhooks/{uuid}/deliveries/{id}/replay/", AuthNeed::kAnyKey,
      "Send a delivery again (pending and due now, or when the webhook's backoff ends; a new "
      "attempt is recorded).",
      sdk::bindHandler(*this, &WebhookRoutes::replay), nothing, {}, {{202, delivery}},
      {{429, "throttled",
        "the webhook backs off after failed attempts (a pending delivery is not made due "
        "sooner), or its deliveries were replayed too often (retry_after_seconds, Retry-After)"}});
}

WebhookRow WebhookRoutes::visible(Poco::Data::Session& s, const sdk::Request& r) {
  auto row = store_.find(s, r.params.at("uuid"));
  if (!row || !sdk::visibleTo(r, row->account_id, row->identity_uuid)) {
    throw sdk::HttpError::notFound("webhook");
  }
  return *row;
}

std::vector<std::string> WebhookRoutes::eventTypes(const sdk::Request& r) {
  std::vector<std::string> out;
  const auto declared = events_.declaredTypes();
  sdk::FieldErrors errors;
  for (const auto& t : r.stringListField("event_types")) {
    if (!declared.empty() && std::find(declared.begin(), declared.end(), t) == declared.end()) {
      std::string allowed;
      for (const auto& d : declared) allowed += (allowed.empty() ? "" : ", ") + d;
      errors.add("event_types", "must be one of: " + allowed);
      continue;
    }
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  errors.throwIfAny();
  std::sort(out.begin(), out.end());
  return out;
}

sdk::Response WebhookRoutes::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  const WebhookFilter filter{r.principal.account_id, sdk::scopeIdentity(r)};
  Poco::Data::Session s = db_.session();
  auto rows = store_.list(s, filter, page.limit, page.offset);
  const bool ends_here =
      static_cast<int>(rows.size()) < page.limit && (page.offset == 0 || !rows.empty());
  const long count =
      ends_here ? page.offset + static_cast<long>(rows.size()) : store_.count(s, filter);
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& row : rows) results->add(WebhookStore::json(row));
  return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
}

sdk::Response WebhookRoutes::create(sdk::Request& r) {
  sdk::FieldErrors errors;
  WebhookRow row;
  errors.collect([&] {
    row.url = r.requiredString("url");
    sdk::checkedPublicUrl(row.url, "url", allow_private_urls_, kAllowPrivateUrlsKey);
  });
  errors.collect([&] { row.event_types = eventTypes(r); });
  errors.throwIfAny();
  row.id = sdk::newUuid();
  row.account_id = r.principal.account_id;
  row.identity_uuid = r.identity ? r.identity->uuid : "";
  row.description = r.stringField("description").value_or("");
  row.enabled = r.boolField("enabled").value_or(true);
  row.secret = newSecret();
  row.created_us = row.updated_us = sdk::nowMicros();
  db_.transaction([&](Poco::Data::Session& tx) {
    // Bounded: every webhook costs the fan-out a match per event, and workers are shared.
    if (store_.count(tx, WebhookFilter{row.account_id, ""}) >= kMaxWebhooksPerAccount) {
      throw sdk::HttpError(409, "conflict",
                           "The account has " + std::to_string(kMaxWebhooksPerAccount) +
                               " webhooks, the most it may have: delete one first.")
          .extra("limit", kMaxWebhooksPerAccount);
    }
    store_.insert(tx, row);
  });
  return sdk::Response::noStore(sdk::Response::json(201, WebhookStore::json(row, true)));
}

sdk::Response WebhookRoutes::one(sdk::Request& r) {
  if (r.method == "GET") {
    Poco::Data::Session s = db_.session();
    return sdk::Response::json(200, WebhookStore::json(visible(s, r)));
  }
  if (r.method == "DELETE") {
    db_.transaction([&](Poco::Data::Session& tx) {
      if (!store_.remove(tx, visible(tx, r))) throw sdk::HttpError::notFound("webhook");
    });
    return sdk::Response::noContent();
  }
  // PATCH: what the body names.
  sdk::FieldErrors errors;
  std::optional<std::string> url;
  std::optional<std::vector<std::string>> types;
  errors.collect([&] {
    url = r.stringField("url");
    if (url) sdk::checkedPublicUrl(*url, "url", allow_private_urls_, kAllowPrivateUrlsKey);
  });
  errors.collect([&] {
    if (r.json && r.json->has("event_types")) types = eventTypes(r);
  });
  errors.throwIfAny();
  const auto description = r.stringField("description");
  const auto enabled = r.boolField("enabled");
  WebhookRow row;
  db_.transaction([&](Poco::Data::Session& tx) {
    row = visible(tx, r);
    if (url) row.url = *url;
    if (types) row.event_types = *types;
    if (description) row.description = *description;
    if (enabled) {
      row.enabled = *enabled;
      if (*enabled) row.disabled_reason.clear();
    }
    row.updated_us = sdk::nowMicros();
    if (!store_.update(tx, row, "webhook.updated")) throw sdk::HttpError::notFound("webhook");
  });
  if (row.enabled) wake_();
  return sdk::Response::json(200, WebhookStore::json(row));
}

sdk::Response WebhookRoutes::rotateSecret(sdk::Request& r) {
  WebhookRow row;
  db_.transaction([&](Poco::Data::Session& tx) {
    row = visible(tx, r);
    const std::int64_t now_us = sdk::nowMicros();
    row.previous_secret = row.secret;
    row.previous_until_us = now_us + kGraceUs;
    row.secret = newSecret();
    row.updated_us = now_us;
    if (!store_.update(tx, row, "webhook.updated")) throw sdk::HttpError::notFound("webhook");
  });
  return sdk::Response::noStore(sdk::Response::json(200, WebhookStore::json(row, true)));
}

sdk::Response WebhookRoutes::deliveries(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  Poco::Data::Session s = db_.session();
  const WebhookRow row = visible(s, r);
  auto rows = store_.deliveries(s, row.id, page.limit, page.offset);
  const bool ends_here =
      static_cast<int>(rows.size()) < page.limit && (page.offset == 0 || !rows.empty());
  const long count =
      ends_here ? page.offset + static_cast<long>(rows.size()) : store_.deliveryCount(s, row.id);
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& d : rows) results->add(WebhookStore::deliveryJson(d));
  return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
}

sdk::Response WebhookRoutes::replay(sdk::Request& r) {
  std::optional<DeliveryRow> d;
  db_.transaction([&](Poco::Data::Session& tx) {
    const WebhookRow row = visible(tx, r);
    const std::string& id = r.params.at("id");
    const auto before = store_.delivery(tx, row.id, id);
    if (!before) throw sdk::HttpError::notFound("delivery");
    const std::int64_t now_us = sdk::nowMicros();
    const std::int64_t due_us = replays_.admit(tx, row.id, *before, now_us);
    if (!store_.replay(tx, row.id, id, now_us, due_us)) throw sdk::HttpError::notFound("delivery");
    d = store_.delivery(tx, row.id, id);
  });
  wake_();
  return sdk::Response::json(202, WebhookStore::deliveryJson(*d));
}

}  // namespace svc::plugins::webhooks
