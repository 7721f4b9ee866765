#include "webhook_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/JSON/Array.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>
#include <Poco/URI.h>

using namespace Poco::Data::Keywords;

namespace svc::plugins::webhooks {

namespace {

constexpr const char* kColumns =
    "SELECT id, account_id, identity_uuid, url, event_types, description, enabled, "
    "disabled_reason, secret, previous_secret, previous_until_us, after_seq, created_us, "
    "updated_us, after_event FROM webhooks ";

std::vector<WebhookRow> readWebhooks(Poco::Data::Statement& select) {
  using T = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                        std::string, int, std::string, std::string, std::string, Poco::Int64,
                        Poco::Int64, Poco::Int64, Poco::Int64, std::string>;
  std::vector<T> rows;
  select, into(rows), now;
  std::vector<WebhookRow> out;
  out.reserve(rows.size());
  for (const auto& t : rows) {
    WebhookRow r;
    r.id = t.get<0>();
    r.account_id = t.get<1>();
    r.identity_uuid = t.get<2>();
    r.url = t.get<3>();
    r.event_types = splitTypes(t.get<4>());
    r.description = t.get<5>();
    r.enabled = t.get<6>() != 0;
    r.disabled_reason = t.get<7>();
    r.secret = t.get<8>();
    r.previous_secret = t.get<9>();
    r.previous_until_us = t.get<10>();
    r.after_seq = t.get<11>();
    r.created_us = t.get<12>();
    r.updated_us = t.get<13>();
    r.after_event = t.get<14>();
    out.push_back(std::move(r));
  }
  return out;
}

constexpr const char* kDeliveryColumns =
    "SELECT id, webhook_id, seq, event_id, event_type, payload, event_created_us, state, "
    "attempts, last_status, last_error, first_attempt_us, last_attempt_us, next_attempt_us, "
    "delivered_us, created_us FROM webhook_deliveries ";

std::vector<DeliveryRow> readDeliveries(Poco::Data::Statement& select) {
  using T = Poco::Tuple<std::string, std::string, Poco::Int64, std::string, std::string,
                        std::string, Poco::Int64, std::string, int, int, std::string, Poco::Int64,
                        Poco::Int64, Poco::Int64, Poco::Int64, Poco::Int64>;
  std::vector<T> rows;
  select, into(rows), now;
  std::vector<DeliveryRow> out;
  out.reserve(rows.size());
  for (const auto& t : rows) {
    DeliveryRow d;
    d.id = t.get<0>();
    d.webhook_id = t.get<1>();
    d.seq = t.get<2>();
    d.event_id = t.get<3>();
    d.event_type = t.get<4>();
    d.payload = t.get<5>();
    d.event_created_us = t.get<6>();
    d.state = t.get<7>();
    d.attempts = t.get<8>();
    d.last_status = t.get<9>();
    d.last_error = t.get<10>();
    d.first_attempt_us = t.get<11>();
    d.last_attempt_us = t.get<12>();
    d.next_attempt_us = t.get<13>();
    d.delivered_us = t.get<14>();
    d.created_us = t.get<15>();
    out.push_back(std::move(d));
  }
  return out;
}

std::string where(const WebhookFilter& f, std::string& bind) {
  if (!f.identity_uuid.empty()) {
    bind = f.identity_uuid;
    return "WHERE identity_uuid = ?";
  }
  bind = f.account_id;
  return "WHERE account_id = ?";
}

Poco::Dynamic::Var timeOrNull(std::int64_t us) {
  return us ? Poco::Dynamic::Var(sdk::isoTimestamp(us)) : Poco::Dynamic::Var();
}

}  // namespace

std::vector<std::string> WebhookRow::signingSecrets(std::int64_t now_us) const {
  std::vector<std::string> out = {secret};
  if (!previous_secret.empty() && now_us < previous_until_us) out.push_back(previous_secret);
  return out;
}

std::string joinTypes(const std::vector<std::string>& types) {
  std::string out;
  for (const auto& t : types) out += (out.empty() ? "" : ",") + t;
  return out;
}

std::vector<std::string> splitTypes(const std::string& stored) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < stored.size()) {
    std::size_t comma = stored.find(',', at);
    if (comma == std::string::npos) comma = stored.size();
    if (comma > at) out.push_back(stored.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

std::vector<sdk::Migration> WebhookStore::migrations() {
  const std::vector<std::string> statements = {
      "CREATE TABLE webhooks (id CHAR(36) NOT NULL PRIMARY KEY, account_id CHAR(36) NOT NULL, "
      "identity_uuid VARCHAR(36) NOT NULL, url TEXT NOT NULL, event_types TEXT NOT NULL, "
      "description TEXT NOT NULL, enabled SMALLINT NOT NULL, disabled_reason TEXT NOT NULL, "
      "secret VARCHAR(128) NOT NULL, previous_secret VARCHAR(128) NOT NULL, "
      "previous_until_us BIGINT NOT NULL, after_seq BIGINT NOT NULL, retry_at_us BIGINT NOT "
      "NULL, lease_owner VARCHAR(64) NOT NULL, lease_until_us BIGINT NOT NULL, created_us "
      "BIGINT NOT NULL, updated_us BIGINT NOT NULL)",
      "CREATE INDEX webhooks_account ON webhooks (account_id, created_us, id)",
      "CREATE INDEX webhooks_identity ON webhooks (identity_uuid, created_us, id)",
      "CREATE TABLE webhook_deliveries (id CHAR(36) NOT NULL PRIMARY KEY, webhook_id CHAR(36) "
      "NOT NULL, seq BIGINT NOT NULL, event_id CHAR(36) NOT NULL, event_type VARCHAR(64) NOT "
      "NULL, payload TEXT NOT NULL, event_created_us BIGINT NOT NULL, state VARCHAR(16) NOT "
      "NULL, attempts INT NOT NULL, last_status INT NOT NULL, last_error TEXT NOT NULL, "
      "first_attempt_us BIGINT NOT NULL, last_attempt_us BIGINT NOT NULL, next_attempt_us "
      "BIGINT NOT NULL, delivered_us BIGINT NOT NULL, created_us BIGINT NOT NULL)",
      // One delivery per webhook and event, whichever svcd made it.
      "CREATE UNIQUE INDEX webhook_deliveries_event ON webhook_deliveries (webhook_id, event_id)",
      // A webhook's pending deliveries in order; its log newest first.
      "CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook_id, state, seq)",
      "CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, seq)",
      // The webhooks with something due.
      "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_us)",
      "CREATE TABLE webhook_cursor (name VARCHAR(16) NOT NULL PRIMARY KEY, seq BIGINT NOT NULL)",
      "INSERT INTO webhook_cursor (name, seq) VALUES ('fanout', 0)",
  };
  return {
      sdk::Migration::portableUtf8(1, "webhooks, their deliveries and the fan-out cursor",
                                   statements),
      sdk::Migration::portableUtf8(
          2, "the replays of the last minute, for the replay limit",
          {"CREATE TABLE webhook_replays (webhook_id CHAR(36) NOT NULL, at_us BIGINT NOT "
           "NULL)",
           "CREATE INDEX webhook_replays_window ON webhook_replays (webhook_id, at_us)"}),
      sdk::Migration::portable(
          3, "a webhook's start named by its event's id, for logs numbered after commit",
          {"ALTER TABLE webhooks ADD COLUMN after_event VARCHAR(36) NOT NULL DEFAULT ''"}),
      sdk::Migration::portable(
          4, "a delivery lease held by a beat its holder bumps, judged on each svcd's own clock",
          {"ALTER TABLE webhooks ADD COLUMN lease_beat BIGINT NOT NULL DEFAULT 0"})};
}

std::optional<WebhookRow> WebhookStore::find(Poco::Data::Session& s, const std::string& id) {
  if (!sdk::isUuid(id)) return std::nullopt;
  std::string u = Poco::toLower(id);
  Poco::Data::Statement select = (s << std::string(kColumns) + "WHERE id = ?", use(u));
  auto rows = readWebhooks(select);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::vector<WebhookRow> WebhookStore::list(Poco::Data::Session& s, const WebhookFilter& f,
                                           int limit, int offset) {
  std::string bind;
  Poco::Data::Statement select = (s << std::string(kColumns) + where(f, bind) +
                                           " ORDER BY created_us DESC, id DESC LIMIT ? OFFSET ?",
                                  use(bind), use(limit), use(offset));
  return readWebhooks(select);
}

long WebhookStore::count(Poco::Data::Session& s, const WebhookFilter& f) {
  std::string bind;
  long n = 0;
  s << "SELECT COUNT(*) FROM webhooks " + where(f, bind), use(bind), into(n), now;
  return n;
}

std::vector<WebhookRow> WebhookStore::enabled(Poco::Data::Session& s) {
  Poco::Data::Statement select = (s << std::string(kColumns) + "WHERE enabled = 1");
  return readWebhooks(select);
}

void WebhookStore::insert(Poco::Data::Session& tx, WebhookRow& r) {
  std::string types = joinTypes(r.event_types);
  int on = r.enabled ? 1 : 0;
  Poco::Int64 prev_until = r.previous_until_us, created = r.created_us, updated = r.updated_us;
  tx << "INSERT INTO webhooks (id, account_id, identity_uuid, url, event_types, description, "
        "enabled, disabled_reason, secret, previous_secret, previous_until_us, after_seq, "
        "retry_at_us, lease_owner, lease_until_us, created_us, updated_us) VALUES (?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?, 0, 0, '', 0, ?, ?)",
      use(r.id), use(r.account_id), use(r.identity_uuid), use(r.url), use(types),
      use(r.description), use(on), use(r.disabled_reason), use(r.secret), use(r.previous_secret),
      use(prev_until), use(created), use(updated), now;
  const sdk::Event e =
      events_.publish("webhook.created", r.account_id, r.identity_uuid, eventJson(r), &tx);
  startAfter(tx, r.id, e);
  r.after_seq = e.sequence;
  r.after_event = e.sequence ? "" : e.id;
}

void WebhookStore::startAfter(Poco::Data::Session& tx, const std::string& id, const sdk::Event& e) {
  // A log that numbers events after commit gives none here: the fan-out learns the number when
  // it reaches the event (FanOut::runOnce).
  Poco::Int64 after = e.sequence;
  std::string marker = e.sequence ? "" : e.id, webhook = id;
  tx << "UPDATE webhooks SET after_seq = ?, after_event = ? WHERE id = ?", use(after), use(marker),
      use(webhook), now;
}

bool WebhookStore::startAt(Poco::Data::Session& tx, const WebhookRow& w, std::int64_t seq) {
  Poco::Int64 after = seq;
  std::string id = w.id, marker = w.after_event;
  Poco::Data::Statement update =
      (tx << "UPDATE webhooks SET after_seq = ?, after_event = '' WHERE id = ? AND after_event = ?",
       use(after), use(id), use(marker));
  return update.execute() > 0;
}

bool WebhookStore::update(Poco::Data::Session& tx, const WebhookRow& row, const std::string& type) {
  WebhookRow r = row;
  std::vector<int> was_enabled;
  tx << "SELECT enabled FROM webhooks WHERE id = ?", use(r.id), into(was_enabled), now;
  std::string types = joinTypes(r.event_types);
  int on = r.enabled ? 1 : 0;
  Poco::Int64 prev_until = r.previous_until_us, updated = r.updated_us;
  Poco::Data::Statement q =
      (tx << "UPDATE webhooks SET url = ?, event_types = ?, description = ?, enabled = ?, "
             "disabled_reason = ?, secret = ?, previous_secret = ?, previous_until_us = ?, "
             "updated_us = ? WHERE id = ?",
       use(r.url), use(types), use(r.description), use(on), use(r.disabled_reason), use(r.secret),
       use(r.previous_secret), use(prev_until), use(updated), use(r.id));
  if (q.execute() == 0) return false;
  const sdk::Event e = events_.publish(type, r.account_id, r.identity_uuid, eventJson(r), &tx);
  if (r.enabled && !was_enabled.empty() && was_enabled.front() == 0) {
    // Enabled again: deliveries resume with the events after this moment; what happened while
    // it was disabled is not delivered (the fan-out may have passed it already, or not).
    startAfter(tx, r.id, e);
  }
  return true;
}

bool WebhookStore::remove(Poco::Data::Session& tx, const WebhookRow& row) {
  std::string id = row.id;
  Poco::Data::Statement q = (tx << "DELETE FROM webhooks WHERE id = ?", use(id));
  if (q.execute() == 0) return false;
  tx << "DELETE FROM webhook_deliveries WHERE webhook_id = ?", use(id), now;
  tx << "DELETE FROM webhook_replays WHERE webhook_id = ?", use(id), now;
  events_.publish("webhook.deleted", row.account_id, row.identity_uuid, eventJson(row), &tx);
  return true;
}

std::vector<DeliveryRow> WebhookStore::deliveries(Poco::Data::Session& s,
                                                  const std::string& webhook, int limit,
                                                  int offset) {
  std::string w = webhook;
  Poco::Data::Statement select =
      (s << std::string(kDeliveryColumns) +
                "WHERE webhook_id = ? ORDER BY seq DESC, id DESC LIMIT ? OFFSET ?",
       use(w), use(limit), use(offset));
  return readDeliveries(select);
}

long WebhookStore::deliveryCount(Poco::Data::Session& s, const std::string& webhook) {
  std::string w = webhook;
  long n = 0;
  s << "SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = ?", use(w), into(n), now;
  return n;
}

std::optional<DeliveryRow> WebhookStore::delivery(Poco::Data::Session& s,
                                                  const std::string& webhook,
                                                  const std::string& id) {
  if (!sdk::isUuid(id)) return std::nullopt;
  std::string w = webhook, d = Poco::toLower(id);
  Poco::Data::Statement select =
      (s << std::string(kDeliveryColumns) + "WHERE webhook_id = ? AND id = ?", use(w), use(d));
  auto rows = readDeliveries(select);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

bool WebhookStore::replay(Poco::Data::Session& tx, const std::string& webhook,
                          const std::string& id, std::int64_t now_us, std::int64_t due_us) {
  std::string w = webhook, d = Poco::toLower(id);
  Poco::Int64 at = due_us;
  Poco::Data::Statement q =
      (tx << "UPDATE webhook_deliveries SET first_attempt_us = CASE WHEN state = 'pending' "
             "THEN first_attempt_us ELSE 0 END, state = 'pending', next_attempt_us = ? WHERE "
             "webhook_id = ? AND id = ?",
       use(at), use(w), use(d));
  if (q.execute() == 0) return false;
  // Backing off, the webhook stays due when its backoff ends (retry_at_us is at most that).
  if (due_us <= now_us) tx << "UPDATE webhooks SET retry_at_us = 0 WHERE id = ?", use(w), now;
  return true;
}

Poco::JSON::Object::Ptr WebhookStore::json(const WebhookRow& row, bool with_secret) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("uuid", row.id);
  o->set("url", row.url);
  Poco::JSON::Array::Ptr types = new Poco::JSON::Array;
  for (const auto& t : row.event_types) types->add(t);
  o->set("event_types", types);
  o->set("identity",
         row.identity_uuid.empty() ? Poco::Dynamic::Var() : Poco::Dynamic::Var(row.identity_uuid));
  o->set("enabled", row.enabled);
  o->set("description", row.description);
  o->set("disabled_reason", row.disabled_reason.empty() ? Poco::Dynamic::Var()
                                                        : Poco::Dynamic::Var(row.disabled_reason));
  if (with_secret) o->set("secret", row.secret);
  o->set("created_dt", sdk::isoTimestamp(row.created_us));
  o->set("updated_dt", sdk::isoTimestamp(row.updated_us));
  return o;
}

Poco::JSON::Object::Ptr WebhookStore::eventJson(const WebhookRow& row) {
  Poco::JSON::Object::Ptr o = json(row);
  o->remove("url");
  std::string host;
  try {
    const Poco::URI uri(row.url);
    const std::string& name = uri.getHost();
    host =
        uri.getScheme() + "://" + (name.find(':') == std::string::npos ? name : "[" + name + "]");
    if (uri.getPort() != (uri.getScheme() == "https" ? 443 : 80))
      host += ":" + std::to_string(uri.getPort());
  } catch (const Poco::Exception&) {
    host = "";  // stored URLs were checked; nothing of one that no longer parses is shown
  }
  o->set("url_host", host);
  return o;
}

Poco::JSON::Object::Ptr WebhookStore::deliveryJson(const DeliveryRow& d) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("id", d.id);
  o->set("event_id", d.event_id);
  o->set("event_type", d.event_type);
  o->set("event_created_dt", sdk::isoTimestamp(d.event_created_us));
  o->set("state", d.state);
  o->set("attempts", d.attempts);
  o->set("last_status_code",
         d.last_status ? Poco::Dynamic::Var(d.last_status) : Poco::Dynamic::Var());
  o->set("last_error",
         d.last_error.empty() ? Poco::Dynamic::Var() : Poco::Dynamic::Var(d.last_error));
  o->set("last_attempt_dt", timeOrNull(d.last_attempt_us));
  o->set("next_attempt_dt",
         d.state == "pending" ? timeOrNull(d.next_attempt_us) : Poco::Dynamic::Var());
  o->set("delivered_dt", timeOrNull(d.delivered_us));
  o->set("created_dt", sdk::isoTimestamp(d.created_us));
  return o;
}

}  // namespace svc::plugins::webhooks
