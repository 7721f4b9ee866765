// webhooks: outbound webhooks. Every event a webhook matches is POSTed to its URL at least once,
// in order per webhook, signed per Standard Webhooks, from the durable event log, retried with
// backoff for 24 hours, then given up with the webhook disabled (and an event saying so).
//
// This is the module: what the plugin declares, and the wiring of its core (svc_webhooks_core).
#include "delivery_engine.h"
#include "webhook_routes.h"
#include "webhook_shapes.h"
#include "webhook_store.h"

#include <svc/sdk/metrics.h>
#include <svc/sdk/plugin.h>

#include <memory>
#include <stdexcept>

namespace svc::plugins::webhooks {

class WebhooksPlugin : public sdk::Plugin {
 public:
  WebhooksPlugin() {
    info_.name = "webhooks";
    info_.version = "0.1.0";
    info_.description = "Outbound webhooks: events POSTed to your URLs, signed, retried.";
    const auto event = [](const char* name, const char* what) {
      return sdk::EventType{name, what, {"url_host"}, webhookEventSchema()};
    };
    info_.events = {
        event("webhook.created", "A webhook was created; object: the webhook (never its secret)."),
        event("webhook.updated",
              "A webhook was changed or its secret rotated; object: the webhook (never its "
              "secret)."),
        event("webhook.deleted", "A webhook was deleted; object: the webhook as it was."),
        event("webhook.disabled",
              "svcd disabled a webhook whose deliveries failed for 24 hours; object: the webhook, "
              "disabled_reason saying why."),
    };
    info_.paths = {"/api/webhooks/"};
    info_.config = {
        {kAllowPrivateUrlsKey, "false",
         "tests only: let webhook URLs reach loopback, private and link-local addresses", false,
         false},
        {"webhooks.retry_base_ms", "5000",
         "the first retry's delay; each next one doubles, up to 720 times this (an hour)", false,
         false},
        {"webhooks.retry_window_seconds", "86400",
         "how long a delivery is retried before it fails and its webhook is disabled", false,
         false},
        {"webhooks.timeout_seconds", "10",
         "a whole delivery attempt (connecting, sending, the answer) within this; a receiver "
         "slower than that fails the attempt",
         false, false},
        {"webhooks.workers", "4",
         "delivery threads always running (each delivers one webhook at a time)", false, false},
        {"webhooks.max_workers", "128",
         "delivery threads at most: while attempts wait on receivers that do not answer, more are "
         "started so the others' deliveries go on (at least webhooks.workers)",
         false, false},
        {"webhooks.account_workers", "4",
         "webhooks of one account delivered at once, at most, over every svcd: its receivers "
         "hanging hold no more threads than this",
         false, false},
        {"webhooks.replays_per_minute", "20",
         "replays of one webhook's deliveries in any minute, at most (then 429 throttled; 0: no "
         "limit)",
         false, false},
        {"webhooks.lease_seconds", "30",
         "how long a webhook stays with the svcd delivering it, renewed while it delivers (another "
         "svcd takes over from one that died once it has seen no renewal for this long plus 2 s "
         "and 1 %, by its own clock); at least 3 times webhooks.timeout_seconds",
         false, false},
        {"webhooks.poll_ms", "250",
         "how often due retries and other svcd processes' deliveries are looked for", false, false},
    };
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    const auto& c = context.config();
    EngineSettings s;
    s.allow_private_urls = c.getBool(kAllowPrivateUrlsKey);
    s.retry_base_us = bounded(c, "webhooks.retry_base_ms", 1, 3600000) * 1000;
    s.retry_window_us = bounded(c, "webhooks.retry_window_seconds", 1, 7 * 86400) * 1000000;
    s.timeout = std::chrono::milliseconds(bounded(c, "webhooks.timeout_seconds", 1, 300) * 1000);
    s.workers = static_cast<int>(bounded(c, "webhooks.workers", 1, 64));
    s.max_workers = static_cast<int>(bounded(c, "webhooks.max_workers", 1, 1024));
    s.account_workers = static_cast<int>(bounded(c, "webhooks.account_workers", 1, 64));
    const int replays_per_minute =
        static_cast<int>(bounded(c, "webhooks.replays_per_minute", 0, 100000));
    s.lease_us = bounded(c, "webhooks.lease_seconds", 2, 3600) * 1000000;
    s.poll = std::chrono::milliseconds(bounded(c, "webhooks.poll_ms", 10, 60000));
    // Finished deliveries are kept as long as the events they delivered.
    s.retention_us = c.getInt64("events.retention_days", 7) * 86400LL * 1000000;
    if (s.max_workers < s.workers) {
      throw std::invalid_argument("webhooks.max_workers must be at least webhooks.workers");
    }
    // A lease renewed before a send must outlast the send and its record: shorter, and a slow
    // receiver's webhook could go to a second worker mid-send (duplicates, out of order).
    if (s.lease_us < 3 * s.timeout.count() * 1000) {
      throw std::invalid_argument(
          "webhooks.lease_seconds must be at least 3 times webhooks.timeout_seconds");
    }
    store_ = std::make_unique<WebhookStore>(context.events());
    engine_ = std::make_unique<DeliveryEngine>(context.database(), context.events(), *store_, s,
                                               context.logger());
    routes_ = std::make_unique<WebhookRoutes>(context.database(), *store_, context.events(),
                                              s.allow_private_urls, replays_per_minute,
                                              [engine = engine_.get()] { engine->wakeWorkers(); });
  }

  std::vector<sdk::Migration> migrations() const override { return WebhookStore::migrations(); }
  void registerRoutes(sdk::RouteRegistry& routes) override { routes_->registerIn(routes); }
  void registerServices(sdk::ServiceRegistry&) override {}

  void start() override {
    sdk::MetricRegistry& m = context_->metrics();
    m.counterFunction("svc_webhooks_delivered_total", "Deliveries a receiver acknowledged (2xx).",
                      [e = engine_.get()] { return static_cast<double>(e->delivered()); });
    m.counterFunction("svc_webhooks_failed_attempts_total",
                      "Delivery attempts that failed (no answer, or not 2xx).",
                      [e = engine_.get()] { return static_cast<double>(e->failedAttempts()); });
    engine_->start();
    events_ = &context_->events();
    // Any event, from any svcd: the fan-out looks at the log (the callback only wakes it).
    subscription_ =
        events_->subscribe([e = engine_.get()](const sdk::Event&) { e->eventArrived(); });
  }

  void stop() override {
    if (events_) events_->unsubscribe(subscription_);
    events_ = nullptr;
    if (engine_) engine_->stop();
  }

 private:
  static std::int64_t bounded(const Poco::Util::AbstractConfiguration& c, const std::string& key,
                              std::int64_t low, std::int64_t high) {
    const std::int64_t v = c.getInt64(key);
    if (v < low || v > high) {
      throw std::invalid_argument(key + " must be from " + std::to_string(low) + " to " +
                                  std::to_string(high));
    }
    return v;
  }

  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  sdk::EventBus* events_ = nullptr;
  std::uint64_t subscription_ = 0;
  std::unique_ptr<WebhookStore> store_;
  std::unique_ptr<DeliveryEngine> engine_;
  std::unique_ptr<WebhookRoutes> routes_;
};

}  // namespace svc::plugins::webhooks

SVC_PLUGIN(svc::plugins::webhooks::WebhooksPlugin)
