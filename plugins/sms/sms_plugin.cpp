// sms: phone numbers for identities and SMS in both directions, through one carrier provider
// (sms.provider: loopback, twilio or pool), and calls to those numbers handed to the identity's
// voice agent. Through the identities plugin's extension point it gives an identity its `phone`
// (on create with provision_phone, in the identity's own transaction, or by provision-phone).
//
// This is the module: what the plugin declares, and the wiring of its core (svc_sms_core).
#include "carrier_events.h"
#include "dashboard_pages.h"
#include "loopback_provider.h"
#include "outgoing.h"
#include "phones.h"
#include "pool_provider.h"
#include "replay_guard.h"
#include "sms_config.h"
#include "sms_messages.h"
#include "sms_store.h"
#include "sms_wait.h"
#include "twilio_config.h"
#include "twilio_provider.h"

#include <svc/sdk/dashboard.h>
#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/util.h>

#include <memory>

namespace svc::plugins::sms {

class SmsPlugin : public sdk::Plugin {
 public:
  SmsPlugin() {
    info_.name = "sms";
    info_.version = "0.1.0";
    info_.description = "SMS: phone numbers for identities, messages both ways, calls.";
    info_.events = {
        {"phone.provisioned", "An identity got a phone number; object: the phone.", {}},
        {"sms.received",
         "An SMS arrived at an identity's number; object: the message without its body.",
         {"conversation_id"}},
        {"sms.sent",
         "An identity sent an SMS (the carrier took it, or refused it: see status); object: the "
         "message without its body.",
         {"conversation_id"}},
        {"sms.updated",
         "An SMS changed (read state, or a carrier's delivery report); object: the message "
         "without its body.",
         {"conversation_id"}},
        {"call.received", "A call reached an identity's number; object: the call.", {}},
    };
    info_.uses_services = {sdk::kIdentityExtensionsService.name, sdk::kVoiceAgentService.name,
                           sdk::kDashboardPagesService.name};
    info_.requires_plugins = {"identities"};
    info_.config = smsConfigKeys();
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    config_ = SmsConfig::read(context.config());
    store_ = std::make_unique<SmsStore>(context.database(), context.events());
    carrier_ = std::make_unique<StoredCarrierEvents>(
        *store_, context.services().find(sdk::kVoiceAgentService).get());
    provider_ = makeProvider(context);
    phones_ =
        std::make_unique<Phones>(*store_, *provider_, context.logger(), config_.phones_per_account);
    messages_ = std::make_unique<SmsMessages>(*store_, config_);
    wait_ = std::make_unique<SmsWait>(*store_, context.events());
    outgoing_ = std::make_unique<SmsOutgoing>(*store_, *provider_, *carrier_, config_);
    context.services()
        .require(sdk::kIdentityExtensionsService)
        ->add(std::make_shared<PhoneIdentityExtension>(*phones_, *store_));
  }

  std::vector<sdk::Migration> migrations() const override {
    auto all = SmsStore::migrations();
    all.push_back(ReplayGuard::migration(2));  // the twilio webhooks' memory of requests seen
    return all;
  }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    using sdk::AuthNeed;
    auto add = [&](const char* method, const char* pattern, AuthNeed need, const char* summary,
                   sdk::Handler h) {
      routes.add({method, pattern, need, sdk::BodyKind::kJson, 0, summary, std::move(h)});
    };
    Phones& p = *phones_;
    add("GET", "/api/phone/", AuthNeed::kAnyKey, "Phone numbers, newest first.",
        sdk::bindHandler(p, &Phones::list));
    add("GET", "/api/phone/{id}/", AuthNeed::kAnyKey, "One phone number.",
        sdk::bindHandler(p, &Phones::one));
    SmsMessages& m = *messages_;
    SmsOutgoing& o = *outgoing_;
    add("POST", "/api/messages/send/", AuthNeed::kIdentity,
        "Send an SMS from the identity's number.", sdk::bindHandler(o, &SmsOutgoing::send));
    add("GET", "/api/messages/", AuthNeed::kAnyKey, "SMS messages, newest first.",
        sdk::bindHandler(m, &SmsMessages::list));
    routes.add(wait_->route());
    for (const char* method : {"GET", "PUT", "PATCH"}) {
      add(method, "/api/messages/{id}/", AuthNeed::kAnyKey, "One SMS message.",
          sdk::bindHandler(m, &SmsMessages::one));
    }
    add("GET", "/api/sms-inbox/", AuthNeed::kAnyKey, "SMS conversations, newest first.",
        sdk::bindHandler(m, &SmsMessages::inbox));
    add("GET", "/api/sms-inbox/{id}/", AuthNeed::kAnyKey, "A conversation with its messages.",
        sdk::bindHandler(m, &SmsMessages::conversation));
    add("POST", "/admin/sms/inject/", AuthNeed::kOperator,
        "Deliver an inbound SMS to a number of this server, as a carrier would.",
        sdk::bindHandler(o, &SmsOutgoing::inject));
    provider_->registerRoutes(routes);
  }

  void registerServices(sdk::ServiceRegistry&) override {}
  void start() override {
    // Another svcd on this database may be handing a message over right now: only those older
    // than any carrier call can take (sms.twilio.timeout_seconds is far below ten minutes) are
    // left behind by a stop.
    const int unsent = outgoing_->failUnsent(sdk::nowMicros() - 10LL * 60 * 1000000);
    if (unsent > 0) {
      context_->logger().warning(
          "%d SMS were left being handed to the carrier by a stop: marked failed", unsent);
    }
    if (auto pages = context_->services().find(sdk::kDashboardPagesService)) {
      for (auto& page : dashboardPages()) pages->add(std::move(page));
    }
    wait_->start();
  }
  void stop() override {
    if (wait_) wait_->stop();
  }

 private:
  std::unique_ptr<SmsProvider> makeProvider(sdk::PluginContext& context) {
    if (config_.provider == "loopback") {
      return std::make_unique<LoopbackProvider>(config_.loopback_numbers, *carrier_);
    }
    auto twilio = std::make_unique<TwilioProvider>(TwilioConfig::read(context.config()), *carrier_,
                                                   context.database(), &context.logger());
    if (config_.provider == "twilio") return twilio;
    return std::make_unique<PoolProvider>(
        parsePoolNumbers(context.config().getString("sms.pool.numbers")), std::move(twilio));
  }

  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  SmsConfig config_;
  std::unique_ptr<SmsStore> store_;
  std::unique_ptr<StoredCarrierEvents> carrier_;
  std::unique_ptr<SmsProvider> provider_;
  std::unique_ptr<Phones> phones_;
  std::unique_ptr<SmsMessages> messages_;
  std::unique_ptr<SmsWait> wait_;
  std::unique_ptr<SmsOutgoing> outgoing_;
};

}  // namespace svc::plugins::sms

SVC_PLUGIN(svc::plugins::sms::SmsPlugin)
