// The webhooks plugin's tables and every statement on them.
//
//   webhooks            one row per webhook: its URL, event types ('' = all, else a comma list),
//                       identity ('' = the whole account), secrets (the current one, and the one
//                       it replaced while that still signs), `after_seq` (the sequence of its own
//                       `webhook.created`: it gets events after it; while the log has not
//                       numbered that event yet, `after_event` holds its id), `retry_at_us` (when
//                       its oldest pending delivery is next due: later ones wait behind it, in
//                       order) and the delivery lease (`lease_owner`, `lease_beat`: the one
//                       svcd process delivering its deliveries now, see LeaseTable;
//                       `lease_until_us` is only when it was last released, for the order).
//   webhook_deliveries  one row per webhook and event (unique), with the payload as sent,
//                       numbered by the event's sequence; state pending, delivered or failed.
//   webhook_cursor      the fan-out cursor: the last event sequence turned into deliveries.
//   webhook_replays     when each webhook's deliveries were replayed, the last minute of it: the
//                       replay limit's window (ReplayGate), shared by every svcd.
//
// Writes publish their events (`webhook.*`) in the caller's transaction.
#pragma once

#include <svc/sdk/events.h>
#include <svc/sdk/storage.h>

#include <Poco/Data/Session.h>
#include <Poco/JSON/Object.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::webhooks {

struct WebhookRow {
  std::string id, account_id, identity_uuid, url;
  std::vector<std::string> event_types;  ///< Empty: every type.
  std::string description, disabled_reason;
  bool enabled = true;
  std::string secret, previous_secret;
  std::int64_t previous_until_us = 0;
  std::int64_t after_seq = 0;
  /// The id of the event it starts after, while the log has not numbered it yet; else empty.
  std::string after_event;
  std::int64_t created_us = 0, updated_us = 0;

  /// @return the secrets that sign a delivery now: the current one, and the one it replaced
  /// during the grace period after a rotation.
  std::vector<std::string> signingSecrets(std::int64_t now_us) const;
};

struct DeliveryRow {
  std::string id, webhook_id, event_id, event_type, payload, state, last_error;
  std::int64_t seq = 0, event_created_us = 0;
  int attempts = 0, last_status = 0;
  std::int64_t first_attempt_us = 0, last_attempt_us = 0, next_attempt_us = 0, delivered_us = 0,
               created_us = 0;
};

/// What a list of webhooks reads: an account's, or one identity's.
struct WebhookFilter {
  std::string account_id;
  std::string identity_uuid;  ///< Empty: the whole account.
};

class WebhookStore {
 public:
  explicit WebhookStore(sdk::EventBus& events) : events_(events) {}
  static std::vector<sdk::Migration> migrations();

  std::optional<WebhookRow> find(Poco::Data::Session& s, const std::string& id);
  std::vector<WebhookRow> list(Poco::Data::Session& s, const WebhookFilter& f, int limit,
                               int offset);
  long count(Poco::Data::Session& s, const WebhookFilter& f);
  /// @return every enabled webhook, for the fan-out.
  std::vector<WebhookRow> enabled(Poco::Data::Session& s);

  /// Inserts a webhook and publishes `webhook.created`; its after_seq becomes that event's.
  void insert(Poco::Data::Session& tx, WebhookRow& row);
  /// Writes a webhook's settings and secrets and publishes `type` (`webhook.updated`,
  /// `webhook.disabled`). @return false when it is gone.
  bool update(Poco::Data::Session& tx, const WebhookRow& row, const std::string& type);
  /// Has a webhook start after an event it published: by its number, or by its id until the
  /// log numbers it.
  void startAfter(Poco::Data::Session& tx, const std::string& webhook_id, const sdk::Event& e);
  /// Records the number of the event a webhook waited for (`after_event`), unless the webhook
  /// was given another since it was read. @return false when it was (or is gone).
  bool startAt(Poco::Data::Session& tx, const WebhookRow& webhook, std::int64_t seq);
  /// Deletes a webhook and its deliveries and publishes `webhook.deleted`.
  bool remove(Poco::Data::Session& tx, const WebhookRow& row);

  // Deliveries.
  std::vector<DeliveryRow> deliveries(Poco::Data::Session& s, const std::string& webhook, int limit,
                                      int offset);
  long deliveryCount(Poco::Data::Session& s, const std::string& webhook);
  std::optional<DeliveryRow> delivery(Poco::Data::Session& s, const std::string& webhook,
                                      const std::string& id);
  /// Makes a delivery pending and due at due_us (a replay: now, or when the webhook's backoff
  /// ends, ReplayGate), and its webhook due then. A delivered or failed one gets a fresh retry
  /// window; a pending one keeps its window: replaying it again and again must not keep a
  /// failing webhook from being disabled after 24 hours. @return false when it is gone.
  bool replay(Poco::Data::Session& tx, const std::string& webhook, const std::string& id,
              std::int64_t now_us, std::int64_t due_us);

  /// @return the webhook's API view (never its secrets). @param with_secret add `secret`
  /// (create and rotate-secret answers).
  static Poco::JSON::Object::Ptr json(const WebhookRow& row, bool with_secret = false);
  /// @return the webhook as its events carry it: `url_host` (scheme and host) for `url`, whose
  /// path or query may hold a token that other webhooks and the event stream must not see.
  static Poco::JSON::Object::Ptr eventJson(const WebhookRow& row);
  static Poco::JSON::Object::Ptr deliveryJson(const DeliveryRow& row);

 private:
  sdk::EventBus& events_;
};

/// @param types event types. @return them as stored: a comma list, "" for none.
std::string joinTypes(const std::vector<std::string>& types);
std::vector<std::string> splitTypes(const std::string& stored);

}  // namespace svc::plugins::webhooks
