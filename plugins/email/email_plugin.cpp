// email: inboxes, threads, messages and attachments; custom domains; sending (local delivery and
// the outbox relay); receiving (the SMTP listener). Through the identities plugin's extension
// point it gives every new identity its address, in the identity's own transaction.
//
// This is the module: what the plugin declares, and the wiring of its core (svc_email_core), one
// class per job: EmailConfig, Ingest, Domains, Inboxes, Messages, Outgoing, Attachments, and the
// sender rules (rules/: RuleCache for SMTP and local delivery, RuleRoutes for the API).
#include "attachments.h"
#include "auth/authenticator.h"
#include "auth/checks.h"
#include "auth/dns_resolver.h"
#include "blob_import.h"
#include "blob_store.h"
#include "bounces/bounce_intake.h"
#include "bounces/bounce_store.h"
#include "dashboard_pages.h"
#include "data_dirs.h"
#include "db_blob_store.h"
#include "dkim.h"
#include "domains.h"
#include "email_config.h"
#include "email_routes.h"
#include "email_schemas.h"
#include "file_blob_store.h"
#include "identity_fields.h"
#include "inboxes.h"
#include "ingest.h"
#include "mail_store.h"
#include "message_wait.h"
#include "messages.h"
#include "outgoing.h"
#include "relay.h"
#include "rules/rule_cache.h"
#include "rules/rule_pages.h"
#include "rules/rule_routes.h"
#include "smtp_server.h"

#include <svc/sdk/plans.h>
#include <svc/sdk/plugin.h>

#include <Poco/Data/Statement.h>
#include <Poco/Path.h>
#include <Poco/String.h>

#include <unistd.h>

#include <memory>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

class EmailPlugin : public sdk::Plugin {
 public:
  EmailPlugin() {
    info_.name = "email";
    info_.version = "0.1.0";
    info_.description = "Email: inboxes, threads, sending and receiving over SMTP.";
    // Every event's object is the message as a list shows it: no bodies, no attachments.
    const sdk::Schema message = messageSchema();
    info_.events = {
        {"email.received",
         "A message arrived in an inbox; object: the message as GET shows it, without its body.",
         {"thread_id"},
         message},
        {"email.quarantined",
         "A message arrived but was quarantined (DMARC fail under p=quarantine): hidden from "
         "lists and waits unless asked for, and published as this, never as email.received; "
         "object: the message without its body, and with extracted_code null (GET it by id to "
         "read it).",
         {"thread_id"},
         message},
        {"email.sent",
         "A message was sent (or queued for the relay); object: the message without its body.",
         {"thread_id"},
         message},
        {"email.updated",
         "A message changed (read state, delivery status); object: the message without its "
         "body.",
         {"thread_id"},
         message},
        {"email.bounced",
         "Recipients of an outgoing message will not get it (a delivery report came back, or "
         "the relay refused them); object: the message without its body, its `bounce` naming "
         "each bounced recipient and why.",
         {"thread_id"},
         message},
        {"email_rule.created",
         "A sender rule was added; object: the rule (identity null, and the event's identity "
         "empty, for an account default).",
         {},
         ruleSchema()},
        {"email_rule.deleted",
         "A sender rule was removed; object: the rule as it was.",
         {},
         ruleSchema()},
    };
    info_.paths = emailPaths();
    info_.paths.push_back("/api/email-rules/");
    info_.uses_services = {sdk::kIdentityDirectoryService.name, sdk::kPlanService.name,
                           sdk::kIdentityExtensionsService.name, sdk::kDashboardPagesService.name};
    info_.requires_plugins = {"identities"};
    info_.config = emailConfigKeys();
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    config_ = EmailConfig::read(context.config());
    if (!config_.dkim_selector.empty()) {
      dkim_ = std::make_unique<DkimSigner>(config_.dkim_selector, config_.dkim_key_file);
    }
    // data.dir/email/ is this plugin's own directory (the kernel names it after the plugin).
    const std::string root = Poco::Path::forDirectory(context.dataDir()).toString();
    for (const char* dir : {"spool", "blobs", "unfiled"}) {
      if (adoptLegacyDirectory(root + "email/" + dir, root + dir,
                               std::string(dir) == "spool" ? "lock" : "")) {
        context.logger().notice("moved %semail/%s to %s%s, where this version keeps it", root,
                                std::string(dir), root, std::string(dir));
      }
    }
    ::rmdir((root + "email").c_str());  // the emptied legacy directory; fails if anything is left
    // On MySQL/MariaDB several svcd, each with a directory of its own, share the database:
    // every blob lives there, and files an older version kept are moved in at start.
    blob_dir_ = root + "blobs";
    if (context.database().dialect() == sdk::Dialect::kMysql) {
      blobs_ = std::make_unique<DbBlobStore>(context.database());
    } else {
      blobs_ = std::make_unique<FileBlobStore>(blob_dir_);
    }
    store_ = std::make_unique<MailStore>(context.database(), context.events(), *blobs_);
    bounces_ = std::make_unique<BounceStore>(*store_, context.events());
    bounce_intake_ =
        std::make_unique<BounceIntake>(*store_, *bounces_, context.logger(), config_.relay.verp);
    relay_ = std::make_unique<Relay>(config_.relay, *store_, *bounces_, context.logger());
    rules_ = std::make_unique<RuleCache>(context.database(), context.events());
    rule_routes_ = std::make_unique<RuleRoutes>(context, *rules_);
    resolver_ = std::make_unique<DnsResolver>(config_.dns_server, DnsResolver::Options{});
    Authenticator::Options checks;
    checks.verify = config_.inbound_verify;
    checks.enforce = config_.dmarc_enforce;
    checks.hostname = config_.smtp.hostname;
    authenticator_ = std::make_unique<Authenticator>(checks, *resolver_);
    if (auto missing = missingSuffixList(); missing && checks.verify) {
      context.logger().warning(
          "email: the public suffix list (%s) cannot be read: DMARC's relaxed alignment is "
          "strict and each subdomain is a DNS zone of its own; install Debian's publicsuffix",
          *missing);
    }
    ingest_ =
        std::make_unique<Ingest>(context, *store_, *blobs_, *rules_, *bounce_intake_, root,
                                 config_.smtp.hostname, config_.max_backlog_bytes, *authenticator_);
    domains_ =
        std::make_unique<Domains>(context.database(), config_.platform_domains, config_.dns_server);
    inboxes_ = std::make_unique<Inboxes>(context, *store_, *domains_);
    messages_ = std::make_unique<Messages>(context.database(), *store_, config_.exact_count_limit);
    wait_ = std::make_unique<MessageWait>(context.database(), *store_, context.events());
    outgoing_ =
        std::make_unique<Outgoing>(context.database(), *store_, *blobs_, *relay_, *bounces_,
                                   *domains_, *inboxes_, *messages_, dkim_.get(), config_, *rules_);
    attachments_ = std::make_unique<Attachments>(context.database(), *store_, *blobs_,
                                                 config_.max_attachment_bytes);
    // Every identity gets its `email` part (and its primary inbox) from here.
    context.services()
        .require(sdk::kIdentityExtensionsService)
        ->add(std::make_shared<EmailIdentityExtension>(*inboxes_));
  }

  std::vector<sdk::Migration> migrations() const override { return MailStore::migrations(); }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    registerEmailRoutes(routes, {*domains_, *inboxes_, *messages_, *outgoing_, *attachments_});
    routes.add(wait_->route());  // its shapes are declared beside it (message_wait.cpp)
    rule_routes_->registerRoutes(routes);
  }

  void registerServices(sdk::ServiceRegistry&) override {}

  void start() override {
    if (context_->database().dialect() == sdk::Dialect::kMysql) importBlobs();
    try {
      inboxes_->start();
      rules_->start();
      ingest_->start();
      authenticator_->start();
      wait_->start();
      smtp_server_ = std::make_unique<SmtpServer>(config_.smtp, *ingest_, context_->logger());
      smtp_server_->start(context_->listeners());
    } catch (...) {
      // The SMTP port in use or its host unknown: what began is undone here, as the SDK asks of
      // a start() that throws (the kernel stops only the plugins whose start() returned).
      stop();
      throw;
    }
    const auto& domains = config_.platform_domains;
    context_->logger().information("SMTP listener on port %hu for %s", smtp_server_->port(),
                                   Poco::cat(std::string(", "), domains.begin(), domains.end()));
    if (relay_->configured()) relay_->start();
    registerMetrics();
    if (auto pages = context_->services().find(sdk::kDashboardPagesService)) {
      for (auto& page : dashboardPages()) pages->add(std::move(page));
      for (auto& page : rulePages()) pages->add(std::move(page));
    }
  }

  void stop() override {
    if (wait_) wait_->stop();
    if (smtp_server_) smtp_server_->stop();
    authenticator_->stop();  // answers what it holds (through the spool) before the spool stops
    ingest_->stop();
    relay_->stop();
    if (rules_) rules_->stop();
  }

 private:
  // Attachment files an svcd on this database kept before blobs lived there (blob_import.h),
  // before any route can ask for them.
  void importBlobs() {
    auto done = importBlobFiles(blob_dir_, *blobs_, context_->logger());
    if (done.imported > 0) {
      context_->logger().notice("moved %z attachment files from %s into the database",
                                done.imported, blob_dir_);
    }
  }

  // The plugin's figures on /metrics: each read from what the code already keeps (atomics, or
  // one COUNT over the outbox, which holds only mail not yet handed to the relay).
  void registerMetrics() {
    sdk::MetricRegistry& m = context_->metrics();
    const SmtpCounts& smtp = smtp_server_->counts();
    m.gaugeFunction("svc_email_smtp_sessions_open", "SMTP sessions open now",
                    [&smtp] { return static_cast<double>(smtp.open.load()); });
    const std::string connections = "SMTP connections by outcome: accepted, or refused as too many";
    m.counterFunction("svc_email_smtp_connections_total", connections,
                      [&smtp] { return static_cast<double>(smtp.accepted.load()); },
                      {{"outcome", "accepted"}});
    m.counterFunction("svc_email_smtp_connections_total", connections,
                      [&smtp] { return static_cast<double>(smtp.refused.load()); },
                      {{"outcome", "refused"}});
    Spool& spool = ingest_->spool();
    m.gaugeFunction("svc_email_spool_backlog_messages",
                    "messages accepted over SMTP and not yet filed into inboxes",
                    [&spool] { return static_cast<double>(spool.backlog()); });
    m.gaugeFunction("svc_email_spool_backlog_bytes",
                    "bytes accepted over SMTP and not yet filed into inboxes",
                    [&spool] { return static_cast<double>(spool.backlogBytes()); });
    m.gaugeFunction("svc_email_outbox_depth",
                    "messages waiting in the outbox for the relay (by every svcd process)", [this] {
                      Poco::Data::Session s = context_->database().session();
                      Poco::Int64 n = 0;
                      s << "SELECT COUNT(*) FROM email_outbox", into(n), now;
                      return static_cast<double>(n);
                    });
    const Relay::Outcomes& relay = relay_->outcomes();
    const std::string help = "relay delivery attempts by this process, by outcome";
    for (const auto& [outcome, count] :
         {std::pair{"sent", &relay.sent}, std::pair{"deferred", &relay.deferred},
          std::pair{"failed", &relay.failed}, std::pair{"bounced", &relay.bounced}}) {
      m.counterFunction("svc_email_relay_attempts_total", help,
                        [count = count] { return static_cast<double>(count->load()); },
                        {{"outcome", outcome}});
    }
  }

  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  EmailConfig config_;
  std::unique_ptr<DkimSigner> dkim_;
  std::string blob_dir_;
  std::unique_ptr<BlobStore> blobs_;
  std::unique_ptr<MailStore> store_;
  std::unique_ptr<BounceStore> bounces_;
  std::unique_ptr<BounceIntake> bounce_intake_;
  std::unique_ptr<Relay> relay_;
  std::unique_ptr<RuleCache> rules_;  // before ingest_ and outgoing_, which use it
  std::unique_ptr<RuleRoutes> rule_routes_;
  std::unique_ptr<DnsResolver> resolver_;
  std::unique_ptr<Authenticator> authenticator_;
  std::unique_ptr<Ingest> ingest_;
  std::unique_ptr<Domains> domains_;
  std::unique_ptr<Inboxes> inboxes_;
  std::unique_ptr<Messages> messages_;
  std::unique_ptr<MessageWait> wait_;
  std::unique_ptr<Outgoing> outgoing_;
  std::unique_ptr<Attachments> attachments_;
  std::unique_ptr<SmtpServer> smtp_server_;
};

}  // namespace svc::plugins::email

SVC_PLUGIN(svc::plugins::email::EmailPlugin)
