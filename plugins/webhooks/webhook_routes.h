// /api/webhooks/: create, list, read, change and delete webhooks, rotate their secrets, read
// their delivery logs and replay a delivery. A webhook made with an identity (an identity key, or
// `identity=` with an account key) receives that identity's events and is seen by that
// identity's key; one made without receives the account's and is seen by account keys only.
#pragma once

#include "replay_gate.h"
#include "webhook_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/routes.h>
#include <svc/sdk/storage.h>

#include <functional>
#include <string>
#include <vector>

namespace svc::plugins::webhooks {

/// The most webhooks an account (its identities' included) may have: each costs the fan-out a
/// match per event and a share of the delivery workers. Creating one more answers 409 `conflict`.
constexpr int kMaxWebhooksPerAccount = 20;

/// The tests-only key that lets webhook URLs reach internal addresses, named when one is refused.
constexpr const char* kAllowPrivateUrlsKey = "webhooks.allow_private_urls";

class WebhookRoutes {
 public:
  /// @param replays_per_minute replays of one webhook's deliveries a minute (ReplayGate).
  /// @param wake has the delivery workers look for due deliveries now.
  WebhookRoutes(sdk::Database& db, WebhookStore& store, sdk::EventBus& events,
                bool allow_private_urls, int replays_per_minute, std::function<void()> wake)
      : db_(db),
        store_(store),
        events_(events),
        allow_private_urls_(allow_private_urls),
        replays_(replays_per_minute),
        wake_(std::move(wake)) {}

  void registerIn(sdk::RouteRegistry& routes);

  sdk::Response list(sdk::Request& r);
  sdk::Response create(sdk::Request& r);
  /// GET, PATCH or DELETE one webhook.
  sdk::Response one(sdk::Request& r);
  sdk::Response rotateSecret(sdk::Request& r);
  sdk::Response deliveries(sdk::Request& r);
  sdk::Response replay(sdk::Request& r);

  /// How long the replaced secret still signs after a rotation.
  static constexpr std::int64_t kGraceUs = 24LL * 3600 * 1000000;

 private:
  /// @return the path's webhook when the request may see it. @throws HttpError 404.
  WebhookRow visible(Poco::Data::Session& s, const sdk::Request& r);
  /// @return the body's event types, checked against the declared ones and without repeats.
  std::vector<std::string> eventTypes(const sdk::Request& r);

  sdk::Database& db_;
  WebhookStore& store_;
  sdk::EventBus& events_;
  const bool allow_private_urls_;
  ReplayGate replays_;
  std::function<void()> wake_;
};

}  // namespace svc::plugins::webhooks
