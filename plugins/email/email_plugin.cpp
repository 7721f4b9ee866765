// email: inboxes, threads, messages and attachments; custom domains; sending (local delivery and
// the outbox relay); receiving (the SMTP listener). It offers the inbox-provisioning service the
// identities plugin uses to give each new identity its address in the same transaction.
#include "blob_store.h"
#include "data_dirs.h"
#include "dkim.h"
#include "dns_txt.h"
#include "identity_fields.h"
#include "mail_store.h"
#include "mime.h"
#include "relay.h"
#include "smtp_server.h"
#include "spool.h"
#include "upload_form.h"

#include <svc/sdk/inboxes.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/plans.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/rate_limit.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/DateTimeParser.h>
#include <Poco/File.h>
#include <Poco/JSON/Array.h>
#include <Poco/Path.h>
#include <Poco/String.h>
#include <Poco/StringTokenizer.h>
#include <Poco/Tuple.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_set>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

namespace {

constexpr std::size_t kMaxRecipients = 50;
constexpr const char* kLocalPartRule =
    "the local part must be 1-64 of a-z 0-9 . _ -, starting and ending with a letter or digit, "
    "with no two dots in a row";
// An inbox's address must be one SMTP accepts, which caps the whole address (RFC 5321 4.5.3.1).
constexpr const char* kTooLong = "the address must be at most 254 characters";

// A string or a list of strings (address fields and attachment_uuids).
std::vector<std::string> listField(const sdk::Request& r, const std::string& name) {
  std::vector<std::string> out;
  if (!r.json || !r.json->has(name) || r.json->isNull(name)) return out;
  auto v = r.json->get(name);
  if (v.isString()) {
    out.push_back(v.convert<std::string>());
    return out;
  }
  Poco::JSON::Array::Ptr a;
  try {
    a = v.extract<Poco::JSON::Array::Ptr>();
  } catch (const Poco::Exception&) {
    throw sdk::HttpError::invalid(name, "must be a string or a list of strings");
  }
  for (std::size_t i = 0; i < a->size(); ++i) {
    auto e = a->get(static_cast<unsigned>(i));
    if (!e.isString()) throw sdk::HttpError::invalid(name, "must be a string or a list of strings");
    out.push_back(e.convert<std::string>());
  }
  return out;
}

// One recipient as an API client writes it: `a@b.example` or `Name <a@b.example>`.
Mailbox parseRecipient(const std::string& field, const std::string& raw) {
  if (sdk::hasControlCharacter(raw)) {
    throw sdk::HttpError::invalid(field,
                                  "an address must not contain line breaks or control "
                                  "characters");
  }
  auto boxes = parseAddressList(raw);
  if (boxes.size() != 1 || !isValidAddress(boxes.front().address)) {
    throw sdk::HttpError::invalid(field, "'" + raw + "' is not a valid email address");
  }
  return boxes.front();
}

std::string domainOf(const std::string& address) {
  return Poco::toLower(address.substr(address.rfind('@') + 1));
}

std::string replySubject(const std::string& subject, const char* prefix) {
  std::string trimmed = Poco::trim(subject);
  std::string lower = Poco::toLower(trimmed);
  std::string p = Poco::toLower(std::string(prefix));
  if (lower.compare(0, p.size(), p) == 0) return trimmed;
  if (std::string(prefix) == "Fwd:" && lower.compare(0, 3, "fw:") == 0) return trimmed;
  return std::string(prefix) + " " + trimmed;
}

std::optional<std::int64_t> parseIsoMicros(const std::string& text) {
  static const std::regex iso(
      R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})?)");
  if (!std::regex_match(text, iso)) return std::nullopt;
  Poco::DateTime dt;
  int tz = 0;
  if (!Poco::DateTimeParser::tryParse(Poco::DateTimeFormat::ISO8601_FRAC_FORMAT, text, dt, tz) &&
      !Poco::DateTimeParser::tryParse(Poco::DateTimeFormat::ISO8601_FORMAT, text, dt, tz)) {
    return std::nullopt;
  }
  dt.makeUTC(tz);
  return dt.timestamp().epochMicroseconds();
}

}  // namespace

class EmailPlugin;

// The service the identities plugin calls.
class Provisioning : public sdk::InboxProvisioning {
 public:
  explicit Provisioning(EmailPlugin& plugin) : plugin_(plugin) {}
  sdk::InboxAddress createPrimary(Poco::Data::Session& tx, const std::string& account_id,
                                  const std::string& identity_uuid,
                                  const std::string& identity_name, const std::string& local_part,
                                  const std::string& domain) override;
  std::map<std::string, sdk::InboxAddress> primaryInboxes(
      const std::vector<std::string>& identity_uuids) override;

 private:
  EmailPlugin& plugin_;
};

class EmailPlugin : public sdk::Plugin, public SmtpDelivery {
 public:
  EmailPlugin() {
    info_.name = "email";
    info_.version = "0.1.0";
    info_.description = "Email: inboxes, threads, sending and receiving over SMTP.";
    info_.events = {
        {"email.received",
         "A message arrived in an inbox; object: the message as GET shows it, without its body.",
         {"thread_id"}},
        {"email.sent",
         "A message was sent (or queued for the relay); object: the message without its body.",
         {"thread_id"}},
        {"email.updated",
         "A message changed (read, labels, delivery status); object: the message without its "
         "body.",
         {"thread_id"}},
    };
    info_.uses_services = {sdk::kIdentityDirectoryService.name, sdk::kPlanService.name,
                           sdk::kIdentityExtensionsService.name};
    info_.requires_plugins = {"identities"};
    info_.config = {
        {"email.domains", "mail.localhost",
         "comma list of platform domains this server receives mail for; the first is the default"},
        {"email.smtp.listen", "127.0.0.1:2525", "host:port of the SMTP listener"},
        {"email.smtp.hostname", "",
         "the name the SMTP listener greets with (default: first domain)"},
        {"email.smtp.max_message_bytes", "36700160", "largest message the listener accepts"},
        {"email.smtp.max_recipients", "100", "most RCPT TO per message"},
        {"email.smtp.timeout_seconds", "300",
         "how long a session inside a mail transaction may be silent"},
        {"email.smtp.idle_timeout_seconds", "30",
         "how long a session outside a mail transaction (before MAIL) may be silent"},
        {"email.smtp.max_connections", "1000", "SMTP sessions at once (421 beyond)"},
        {"email.smtp.max_connections_per_address", "20",
         "SMTP sessions from one client address (421 beyond; 0: no limit)"},
        {"email.smtp.max_buffered_bytes", "536870912",
         "message bytes all SMTP sessions may hold in memory at once (452 beyond)"},
        {"email.smtp.max_backlog_bytes", "1073741824",
         "acknowledged mail not yet filed that the spool holds before answering 451"},
        {"email.smtp.tls_cert_file", "", "PEM certificate for STARTTLS (with the key file)"},
        {"email.smtp.tls_key_file", "", "PEM private key for STARTTLS"},
        {"email.relay.host", "", "SMTP relay for mail to other servers (empty: none)"},
        {"email.relay.port", "587", "relay port"},
        {"email.relay.username", "", "relay AUTH user (empty: no AUTH)"},
        {"email.relay.password", "", "relay AUTH password", true},
        {"email.relay.starttls", "true", "require STARTTLS with the relay"},
        {"email.relay.tls_ca_file", "",
         "PEM CA certificates to trust for the relay, besides the "
         "system's"},
        {"email.dkim.selector", "", "DKIM selector (with email.dkim.key_file: sign outgoing mail)"},
        {"email.dkim.key_file", "", "PEM RSA private key for DKIM"},
        {"email.attachments.max_bytes", "26214400", "largest attachment accepted"},
        {"email.send.per_hour", "60", "messages an identity may send per hour"},
        {"email.send.per_day", "500", "messages an identity may send per day"},
        {"email.messages.exact_count", "10000",
         "message lists count matches exactly up to this many; beyond, count is a lower bound "
         "(count_is_exact: false)"},
        {"email.dns.server", "",
         "host:port of the DNS server for domain verification (empty: "
         "the system's resolver)"},
    };
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    const auto& c = context.config();
    for (const auto& d : Poco::StringTokenizer(
             c.getString("email.domains", "mail.localhost"), ",",
             Poco::StringTokenizer::TOK_TRIM | Poco::StringTokenizer::TOK_IGNORE_EMPTY)) {
      std::string domain = Poco::toLower(d);
      if (!isValidDomain(domain))
        throw std::runtime_error("email.domains: '" + d + "' is not a domain");
      platform_domains_.push_back(domain);
    }
    if (platform_domains_.empty()) throw std::runtime_error("email.domains names no domain");
    smtp_.listen = c.getString("email.smtp.listen", "127.0.0.1:2525");
    smtp_.hostname = c.getString("email.smtp.hostname", "");
    if (smtp_.hostname.empty()) smtp_.hostname = platform_domains_.front();
    smtp_.max_message_bytes =
        static_cast<std::size_t>(c.getInt64("email.smtp.max_message_bytes", 36700160));
    smtp_.max_recipients = c.getInt("email.smtp.max_recipients", 100);
    smtp_.timeout_seconds = c.getInt("email.smtp.timeout_seconds", 300);
    smtp_.idle_timeout_seconds = c.getInt("email.smtp.idle_timeout_seconds", 30);
    smtp_.max_connections = c.getInt("email.smtp.max_connections", 1000);
    smtp_.max_connections_per_address = c.getInt("email.smtp.max_connections_per_address", 20);
    const Poco::Int64 buffered = c.getInt64("email.smtp.max_buffered_bytes", 536870912);
    if (buffered <= 0) throw std::runtime_error("email.smtp.max_buffered_bytes must be positive");
    smtp_.max_buffered_bytes = static_cast<std::size_t>(buffered);
    const Poco::Int64 backlog_bytes = c.getInt64("email.smtp.max_backlog_bytes", 1073741824);
    if (backlog_bytes < 0) throw std::runtime_error("email.smtp.max_backlog_bytes is negative");
    max_backlog_bytes_ = static_cast<std::uint64_t>(backlog_bytes);
    smtp_.tls_cert_file = c.getString("email.smtp.tls_cert_file", "");
    smtp_.tls_key_file = c.getString("email.smtp.tls_key_file", "");
    relay_config_.host = c.getString("email.relay.host", "");
    relay_config_.port = c.getInt("email.relay.port", 587);
    relay_config_.username = c.getString("email.relay.username", "");
    relay_config_.password = c.getString("email.relay.password", "");
    relay_config_.starttls = c.getBool("email.relay.starttls", true);
    relay_config_.tls_ca_file = c.getString("email.relay.tls_ca_file", "");
    relay_config_.helo = smtp_.hostname;
    dkim_selector_ = c.getString("email.dkim.selector", "");
    dkim_key_file_ = c.getString("email.dkim.key_file", "");
    max_attachment_bytes_ =
        static_cast<std::size_t>(c.getInt64("email.attachments.max_bytes", 26214400));
    per_hour_ = c.getInt("email.send.per_hour", 60);
    per_day_ = c.getInt("email.send.per_day", 500);
    dns_server_ = c.getString("email.dns.server", "");
    exact_count_limit_ = c.getInt("email.messages.exact_count", 10000);
    if (exact_count_limit_ < 0) throw std::runtime_error("email.messages.exact_count is negative");
    if (!dkim_selector_.empty() || !dkim_key_file_.empty()) {
      if (dkim_selector_.empty() || dkim_key_file_.empty()) {
        throw std::runtime_error(
            "set both email.dkim.selector and email.dkim.key_file, or "
            "neither");
      }
      dkim_ = std::make_unique<DkimSigner>(dkim_selector_, dkim_key_file_);
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
    spool_dir_ = root + "spool";
    unfiled_dir_ = root + "unfiled";
    blobs_ = std::make_unique<BlobStore>(root + "blobs");
    store_ = std::make_unique<MailStore>(context.database(), context.events(), *blobs_);
    relay_ = std::make_unique<Relay>(relay_config_, *store_, context.logger());
    spool_ = std::make_unique<Spool>(
        spool_dir_, [this](const std::vector<Spool::Record>& records, const Spool::Position& end) {
          fileSpooled(records, end);
        });
    // Every identity gets its `email` part (and its primary inbox) from here.
    context.services()
        .require(sdk::kIdentityExtensionsService)
        ->add(std::make_shared<EmailIdentityExtension>(std::make_shared<Provisioning>(*this)));
  }

  std::vector<sdk::Migration> migrations() const override { return MailStore::migrations(); }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    using sdk::AuthNeed;
    using sdk::BodyKind;
    auto add = [&](const char* method, const char* pattern, AuthNeed need, const char* summary,
                   sdk::Handler h) {
      routes.add({method, pattern, need, BodyKind::kJson, 0, summary, std::move(h)});
    };
    add("GET", "/api/domains/", AuthNeed::kAnyKey, "Platform and custom email domains.",
        [this](sdk::Request& r) { return listDomains(r); });
    add("POST", "/api/domains/", AuthNeed::kAccount, "Add a custom domain (pending).",
        [this](sdk::Request& r) { return addDomain(r); });
    add("GET", "/api/domains/{name}/", AuthNeed::kAnyKey, "One domain.",
        [this](sdk::Request& r) { return oneDomain(r); });
    add("DELETE", "/api/domains/{name}/", AuthNeed::kAccount, "Remove a custom domain.",
        [this](sdk::Request& r) { return deleteDomain(r); });
    add("POST", "/api/domains/{name}/verify/", AuthNeed::kAccount,
        "Verify a custom domain by its DNS TXT record.",
        [this](sdk::Request& r) { return verifyDomain(r); });
    add("GET", "/api/email/", AuthNeed::kAnyKey, "Inboxes, newest first.",
        [this](sdk::Request& r) { return listInboxes(r); });
    add("POST", "/api/email/", AuthNeed::kAnyKey, "Add an inbox to an identity.",
        [this](sdk::Request& r) { return createInbox(r); });
    add("GET", "/api/email/check-availability/", AuthNeed::kAnyKey, "Whether an address is free.",
        [this](sdk::Request& r) { return availability(r); });
    add("GET", "/api/email/{id}/", AuthNeed::kAnyKey, "One inbox.",
        [this](sdk::Request& r) { return oneInbox(r); });
    add("GET", "/api/email-inbox/", AuthNeed::kAnyKey, "Threads, newest first.",
        [this](sdk::Request& r) { return listThreads(r); });
    add("GET", "/api/email-inbox/{id}/", AuthNeed::kAnyKey, "A thread with its messages.",
        [this](sdk::Request& r) { return oneThread(r); });
    add("GET", "/api/email-messages/", AuthNeed::kAnyKey, "Messages, oldest first.",
        [this](sdk::Request& r) { return listMessages(r); });
    add("POST", "/api/email-messages/compose/", AuthNeed::kAnyKey, "Send a new message.",
        [this](sdk::Request& r) { return compose(r); });
    for (const char* method : {"GET", "PUT", "PATCH"}) {
      add(method, "/api/email-messages/{id}/", AuthNeed::kAnyKey, "One message.",
          [this](sdk::Request& r) { return oneMessage(r); });
    }
    add("POST", "/api/email-messages/{id}/reply/", AuthNeed::kAnyKey, "Reply to the sender.",
        [this](sdk::Request& r) { return reply(r, false); });
    add("POST", "/api/email-messages/{id}/reply-all/", AuthNeed::kAnyKey,
        "Reply to the sender and every recipient.",
        [this](sdk::Request& r) { return reply(r, true); });
    add("POST", "/api/email-messages/{id}/forward/", AuthNeed::kAnyKey, "Forward a message.",
        [this](sdk::Request& r) { return forward(r); });
    routes.add({"POST", "/api/email-attachments/", AuthNeed::kAnyKey, BodyKind::kAny,
                max_attachment_bytes_ + 65536, "Upload an attachment.",
                [this](sdk::Request& r) { return upload(r); }});
    add("GET", "/api/email-attachments/{uuid}/", AuthNeed::kAnyKey, "An attachment's record.",
        [this](sdk::Request& r) { return attachmentRecord(r); });
    add("GET", "/api/email-attachments/{uuid}/download/", AuthNeed::kAnyKey,
        "An attachment's bytes.", [this](sdk::Request& r) { return download(r); });
  }

  void registerServices(sdk::ServiceRegistry&) override {}

  void start() override {
    plans_ = context_->services().find(sdk::kPlanService);
    {
      Spool::Position filed;
      Poco::Data::Session s = context_->database().session();
      std::string id = spool_->id();
      std::vector<Poco::Tuple<Poco::Int64, Poco::Int64>> rows;
      s << "SELECT segment, offset_bytes FROM email_spool_positions WHERE spool_id = ?", use(id),
          into(rows), now;
      if (!rows.empty()) filed = {rows.front().get<0>(), rows.front().get<1>()};
      spool_->start(filed);  // files what a crash left in the spool first
      context_->logger().information("SMTP spool %s filed up to segment %s offset %s", spool_dir_,
                                     std::to_string(filed.segment), std::to_string(filed.offset));
    }
    smtp_server_ = std::make_unique<SmtpServer>(smtp_, *this, context_->logger());
    smtp_server_->start();
    context_->logger().information(
        "SMTP listener on port %hu for %s", smtp_server_->port(),
        Poco::cat(std::string(", "), platform_domains_.begin(), platform_domains_.end()));
    if (relay_->configured()) relay_->start();
    registerMetrics();
  }

  // The plugin's figures on /metrics: each read from what the code already keeps (atomics, or
  // one COUNT over the outbox, which holds only mail not yet handed to the relay).
  void registerMetrics() {
    sdk::MetricRegistry& m = context_->metrics();
    const SmtpCounts& smtp = smtp_server_->counts();
    m.gaugeFunction("svc_email_smtp_sessions_open", "SMTP sessions open now",
                    [&smtp] { return static_cast<double>(smtp.open.load()); });
    m.counterFunction("svc_email_smtp_connections_total",
                      "SMTP connections by outcome: accepted, or refused as too many",
                      [&smtp] { return static_cast<double>(smtp.accepted.load()); },
                      {{"outcome", "accepted"}});
    m.counterFunction("svc_email_smtp_connections_total",
                      "SMTP connections by outcome: accepted, or refused as too many",
                      [&smtp] { return static_cast<double>(smtp.refused.load()); },
                      {{"outcome", "refused"}});
    m.gaugeFunction("svc_email_spool_backlog_messages",
                    "messages accepted over SMTP and not yet filed into inboxes",
                    [this] { return static_cast<double>(spool_->backlog()); });
    m.gaugeFunction("svc_email_spool_backlog_bytes",
                    "bytes accepted over SMTP and not yet filed into inboxes",
                    [this] { return static_cast<double>(spool_->backlogBytes()); });
    m.gaugeFunction("svc_email_outbox_depth",
                    "messages waiting in the outbox for the relay (by every svcd process)", [this] {
                      Poco::Data::Session s = context_->database().session();
                      Poco::Int64 n = 0;
                      s << "SELECT COUNT(*) FROM email_outbox", into(n), now;
                      return static_cast<double>(n);
                    });
    const Relay::Outcomes& relay = relay_->outcomes();
    const std::string help = "relay delivery attempts by this process, by outcome";
    m.counterFunction("svc_email_relay_attempts_total", help,
                      [&relay] { return static_cast<double>(relay.sent.load()); },
                      {{"outcome", "sent"}});
    m.counterFunction("svc_email_relay_attempts_total", help,
                      [&relay] { return static_cast<double>(relay.deferred.load()); },
                      {{"outcome", "deferred"}});
    m.counterFunction("svc_email_relay_attempts_total", help,
                      [&relay] { return static_cast<double>(relay.failed.load()); },
                      {{"outcome", "failed"}});
  }

  void stop() override {
    if (smtp_server_) smtp_server_->stop();
    spool_->stop();
    relay_->stop();
  }

  // SmtpDelivery
  // Inboxes are never deleted, so an address once found stays valid: RCPT checks of busy
  // addresses skip the database. Unknown addresses are always asked (one may be created now).
  bool acceptsRecipient(const std::string& address) override {
    // No inbox can have a local part outside the inbox rule: no need to ask the database.
    if (!sdk::isValidInboxLocalPart(std::string_view(address).substr(0, address.rfind('@')))) {
      return false;
    }
    {
      std::lock_guard lock(known_mutex_);
      if (known_addresses_.count(address)) return true;
    }
    Poco::Data::Session s = context_->database().session();
    if (!store_->inboxByAddress(s, address)) return false;
    std::lock_guard lock(known_mutex_);
    if (known_addresses_.size() > 100000) known_addresses_.clear();
    known_addresses_.insert(address);
    return true;
  }

  // SMTP: the message is acknowledged once it is in the spool (fsynced). When the ingester is
  // idle the session also waits (briefly) for it to be filed, so a lone message is readable over
  // the API by the time its 250 arrives; under a burst, acknowledging does not wait for the
  // database, and the spool's backlog is bounded (451 beyond it).
  void deliver(const std::string& mail_from, const std::vector<std::string>& recipients,
               const std::string& data) override {
    const std::size_t backlog = spool_->backlog();
    Spool::Position at = spool_->append(spoolRecord(mail_from, recipients, data));
    if (backlog == 0) spool_->waitFiled(at, 2000);
  }

  // Under a burst (a backlog already), the session is answered by the spool's writer as soon as
  // the message is on disk; a lone message takes deliver()'s path and is filed before its 250.
  void deliverAsync(const std::string& mail_from, const std::vector<std::string>& recipients,
                    std::string data, Stored stored) override {
    if (spool_->backlog() == 0) {
      return SmtpDelivery::deliverAsync(mail_from, recipients, std::move(data), std::move(stored));
    }
    std::string record;
    try {
      record = spoolRecord(mail_from, recipients, data);
    } catch (const std::exception& e) {
      return stored(e.what());
    }
    spool_->appendAsync(std::move(record),
                        [stored = std::move(stored)](const Spool::Position&,
                                                     const std::string& error) { stored(error); });
  }

  // A spooled message: its envelope and data. @throws when the spool's backlog is at its bound.
  std::string spoolRecord(const std::string& mail_from, const std::vector<std::string>& recipients,
                          const std::string& data) {
    if (const std::uint64_t bytes = spool_->backlogBytes(); bytes >= max_backlog_bytes_) {
      throw std::runtime_error("the spool holds " + std::to_string(spool_->backlog()) +
                               " messages (" + std::to_string(bytes) + " bytes) not yet filed");
    }
    std::string payload = mail_from + "\n";
    for (std::size_t i = 0; i < recipients.size(); ++i) payload += (i ? "," : "") + recipients[i];
    payload += "\n" + data;
    return payload;
  }

  // The ingester's filer: a batch of spooled messages and the spool position after them, in one
  // transaction. A message that cannot be filed alone is kept in email/unfiled/ and skipped.
  void fileSpooled(const std::vector<Spool::Record>& records, const Spool::Position& end) {
    struct Item {
      std::string from;
      std::vector<std::string> rcpts;
      ParsedMessage parsed;
      std::vector<std::string> blobs;
      Spool::Position end;
      const std::string* payload;
    };
    std::vector<Item> items;
    for (const auto& r : records) {
      Item it;
      it.payload = &r.payload;
      it.end = r.end;
      std::size_t a = r.payload.find('\n');
      std::size_t b = a == std::string::npos ? a : r.payload.find('\n', a + 1);
      if (b == std::string::npos) continue;  // not one of ours: nothing to file
      it.from = r.payload.substr(0, a);
      for (const auto& rcpt : Poco::StringTokenizer(r.payload.substr(a + 1, b - a - 1), ",",
                                                    Poco::StringTokenizer::TOK_IGNORE_EMPTY)) {
        it.rcpts.push_back(rcpt);
      }
      it.parsed = parseMessage(std::string_view(r.payload).substr(b + 1));
      for (const auto& p : it.parsed.problems) context_->logger().debug("incoming mail: %s", p);
      // Attachment bytes are stored (and fsynced) before the rows that name them commit.
      for (const auto& att : it.parsed.attachments) it.blobs.push_back(blobs_->put(att.data));
      items.push_back(std::move(it));
    }
    auto record = [&](Poco::Data::Session& tx, const Spool::Position& p) {
      std::string id = spool_->id();
      Poco::Int64 segment = p.segment, offset = p.offset;
      Poco::Data::Statement update = (tx << "UPDATE email_spool_positions SET segment = ?, "
                                            "offset_bytes = ? WHERE spool_id = ?",
                                      use(segment), use(offset), use(id));
      if (update.execute() == 0) {
        tx << "INSERT INTO email_spool_positions (spool_id, segment, offset_bytes) VALUES (?, ?, "
              "?)",
            use(id), use(segment), use(offset), now;
      }
    };
    try {
      context_->database().transaction([&](Poco::Data::Session& tx) {
        InboxCache inboxes;  // a burst is mostly mail to a few addresses
        for (const auto& it : items) {
          fileIncoming(tx, it.from, it.rcpts, it.parsed, it.blobs, inboxes);
        }
        record(tx, end);
      });
      return;
    } catch (const std::exception& e) {
      if (!context_->database().ping()) throw;  // the database is away: retry the batch later
      context_->logger().warning("filing %z spooled messages together failed (%s); one by one",
                                 items.size(), std::string(e.what()));
    }
    for (const auto& it : items) {
      try {
        context_->database().transaction([&](Poco::Data::Session& tx) {
          InboxCache inboxes;
          fileIncoming(tx, it.from, it.rcpts, it.parsed, it.blobs, inboxes);
          record(tx, it.end);
        });
      } catch (const std::exception& e) {
        if (!context_->database().ping()) throw;  // the database is away: retry the batch later
        const std::string path = unfiled_dir_ + "/" + std::to_string(it.end.segment) + "-" +
                                 std::to_string(it.end.offset) + ".eml";
        Poco::File(unfiled_dir_).createDirectories();
        std::ofstream(path, std::ios::binary) << *it.payload;
        context_->logger().error("a spooled message could not be filed and was kept in %s: %s",
                                 path, std::string(e.what()));
        context_->database().transaction([&](Poco::Data::Session& tx) { record(tx, it.end); });
      }
    }
    context_->database().transaction([&](Poco::Data::Session& tx) { record(tx, end); });
  }

  // Inboxes looked up by address within one filing transaction.
  using InboxCache = std::map<std::string, std::optional<Inbox>>;

  void fileIncoming(Poco::Data::Session& tx, const std::string& mail_from,
                    const std::vector<std::string>& recipients, const ParsedMessage& parsed,
                    const std::vector<std::string>& blobs, InboxCache& inboxes) {
    NewMessage m;
    m.direction = "incoming";
    m.from = parsed.from.empty() ? Mailbox{"", mail_from} : parsed.from.front();
    if (m.from.address.empty()) m.from.address = mail_from;
    for (const auto& b : parsed.to) m.to.push_back(b.address);
    for (const auto& b : parsed.cc) m.cc.push_back(b.address);
    for (const auto& b : parsed.reply_to) m.reply_to.push_back(b.address);
    m.subject = parsed.subject;
    m.content = parsed.text;
    m.html = parsed.html;
    m.message_id = parsed.message_id.empty() ? "<" + sdk::newUuid() + "@" + smtp_.hostname + ">"
                                             : parsed.message_id;
    m.in_reply_to = parsed.in_reply_to;
    m.references = parsed.references;
    std::set<std::string> done;
    for (const auto& rcpt : recipients) {
      auto cached = inboxes.find(rcpt);
      if (cached == inboxes.end()) {
        cached = inboxes.emplace(rcpt, store_->inboxByAddress(tx, rcpt)).first;
      }
      const std::optional<Inbox>& inbox = cached->second;
      if (!inbox || !done.insert(inbox->id).second) continue;
      NewMessage copy = m;
      for (std::size_t i = 0; i < parsed.attachments.size() && i < blobs.size(); ++i) {
        const auto& a = parsed.attachments[i];
        copy.attachments.push_back(store_->insertAttachment(
            tx, inbox->account_id, inbox->identity_uuid, a.filename, a.content_type,
            static_cast<std::int64_t>(a.data.size()), blobs[i]));
      }
      store_->file(tx, *inbox, std::move(copy));
    }
  }

  // Provisioning, called by the identities plugin inside its transaction.
  sdk::InboxAddress provisionPrimary(Poco::Data::Session& tx, const std::string& account_id,
                                     const std::string& identity_uuid, const std::string& name,
                                     const std::string& local_part, const std::string& domain_in) {
    std::string domain = domain_in.empty() ? platform_domains_.front() : Poco::toLower(domain_in);
    if (!domainUsableBy(tx, account_id, domain)) {
      throw sdk::HttpError::invalid("domain", "'" + domain_in +
                                                  "' is neither a platform domain nor a verified "
                                                  "domain of this account");
    }
    Inbox inbox;
    inbox.id = sdk::newUuid();
    inbox.account_id = account_id;
    inbox.identity_uuid = identity_uuid;
    inbox.is_primary = true;
    inbox.created_us = sdk::nowMicros();
    if (!local_part.empty()) {
      // The service checks what any caller asks for, not only what the identities plugin sends.
      const std::string local = Poco::toLower(local_part);
      if (!sdk::isValidInboxLocalPart(local)) {
        throw sdk::HttpError::invalid("email_identifier", kLocalPartRule);
      }
      inbox.address = local + "@" + domain;
      if (!isValidAddress(inbox.address))
        throw sdk::HttpError::invalid("email_identifier", kTooLong);
      if (store_->inboxByAddress(tx, inbox.address)) throw emailTaken(inbox.address);
    } else {
      inbox.address = generatedAddress(tx, name, domain);
    }
    try {
      store_->insertInbox(tx, inbox);
    } catch (const Poco::Exception&) {
      throw emailTaken(inbox.address);  // another writer took it between the check and here
    }
    return {inbox.id, inbox.address};
  }

  std::map<std::string, sdk::InboxAddress> primaries(const std::vector<std::string>& identities) {
    std::map<std::string, sdk::InboxAddress> out;
    if (identities.empty()) return out;
    Poco::Data::Session s = context_->database().session();
    for (const auto& id : identities) {
      if (auto inbox = store_->primaryInbox(s, id)) out[id] = {inbox->id, inbox->address};
    }
    return out;
  }

 private:
  static sdk::HttpError emailTaken(const std::string& address) {
    return sdk::HttpError(409, "email_taken",
                          "The address " + address + " is already taken; choose another.");
  }

  bool isPlatformDomain(const std::string& domain) const {
    return std::find(platform_domains_.begin(), platform_domains_.end(), domain) !=
           platform_domains_.end();
  }

  // A verified custom domain of any account: mail to it is delivered here.
  bool isLocalDomain(Poco::Data::Session& s, const std::string& domain) {
    if (isPlatformDomain(domain)) return true;
    long n = 0;
    std::string d = domain;
    s << "SELECT COUNT(*) FROM email_domains WHERE name = ? AND status = 'verified'", use(d),
        into(n), now;
    return n > 0;
  }

  bool domainUsableBy(Poco::Data::Session& s, const std::string& account,
                      const std::string& domain) {
    if (isPlatformDomain(domain)) return true;
    long n = 0;
    std::string d = domain, a = account;
    s << "SELECT COUNT(*) FROM email_domains WHERE name = ? AND account_id = ? AND status = "
         "'verified'",
        use(d), use(a), into(n), now;
    return n > 0;
  }

  // A readable local part from the identity's name (`support-bot-k7m2`), unique.
  std::string generatedAddress(Poco::Data::Session& s, const std::string& name,
                               const std::string& domain) {
    std::string slug;
    for (unsigned char c : Poco::toLower(name)) {
      if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
        slug += static_cast<char>(c);
      } else if (!slug.empty() && slug.back() != '-') {
        slug += '-';
      }
      if (slug.size() >= 40) break;
    }
    while (!slug.empty() && slug.back() == '-') slug.pop_back();
    if (slug.empty()) slug = "agent";
    static const char* alphabet = "abcdefghjkmnpqrstuvwxyz23456789";
    for (int attempt = 0; attempt < 20; ++attempt) {
      std::string token = sdk::randomToken(8);
      std::string suffix;
      for (int i = 0; i < 4; ++i) suffix += alphabet[static_cast<unsigned char>(token[i]) % 31];
      std::string address = slug + "-" + suffix + "@" + domain;
      if (!store_->inboxByAddress(s, address)) return address;
    }
    throw sdk::HttpError(503, "service_unavailable", "No free address could be generated; retry.");
  }

  // ---- scope ----

  // The identity a list is limited to: the request's (identity key or identity=), else none.
  static std::string scopeIdentity(const sdk::Request& r) {
    return r.identity ? Poco::toLower(r.identity->uuid) : std::string();
  }

  // Whether a row of (account, identity) is visible to the request; else it is 404.
  static bool visible(const sdk::Request& r, const std::string& account,
                      const std::string& identity) {
    if (account != r.principal.account_id) return false;
    std::string scope = scopeIdentity(r);
    return scope.empty() || scope == identity;
  }

  // ---- domains ----

  Poco::JSON::Object::Ptr domainJson(const std::string& name, const std::string& kind,
                                     const std::string& status, std::int64_t created_us,
                                     const std::string& token) {
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("name", name);
    o->set("kind", kind);
    o->set("status", status);
    o->set("created_dt",
           created_us ? Poco::Dynamic::Var(sdk::isoTimestamp(created_us)) : Poco::Dynamic::Var());
    if (kind == "custom") {
      Poco::JSON::Object::Ptr record = new Poco::JSON::Object;
      record->set("type", "TXT");
      record->set("name", "_svc-verification." + name);
      record->set("value", "svc-verification=" + token);
      o->set("dns_record", record);
    }
    return o;
  }

  using DomainTuple = Poco::Tuple<std::string, std::string, std::string, Poco::Int64>;

  std::vector<DomainTuple> customDomains(Poco::Data::Session& s, const std::string& account,
                                         const std::string& name = "") {
    std::vector<DomainTuple> rows;
    std::string a = account, n = name;
    if (name.empty()) {
      s << "SELECT name, status, token, created_us FROM email_domains WHERE account_id = ? "
           "ORDER BY created_us, name",
          use(a), into(rows), now;
    } else {
      s << "SELECT name, status, token, created_us FROM email_domains WHERE account_id = ? AND "
           "name = ?",
          use(a), use(n), into(rows), now;
    }
    return rows;
  }

  sdk::Response listDomains(sdk::Request& r) {
    const auto page = sdk::pageRequest(r);
    std::vector<Poco::JSON::Object::Ptr> all;
    for (const auto& d : platform_domains_)
      all.push_back(domainJson(d, "platform", "verified", 0, ""));
    Poco::Data::Session s = context_->database().session();
    for (const auto& row : customDomains(s, r.principal.account_id)) {
      all.push_back(domainJson(row.get<0>(), "custom", row.get<1>(), row.get<3>(), row.get<2>()));
    }
    Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
    for (std::size_t i = page.offset;
         i < all.size() && results->size() < static_cast<std::size_t>(page.limit); ++i)
      results->add(all[i]);
    return sdk::Response::json(200, sdk::pageBody(r, page, static_cast<long>(all.size()), results));
  }

  sdk::Response addDomain(sdk::Request& r) {
    auto raw = r.stringField("name");
    if (!raw) raw = r.stringField("domain");
    if (!raw) throw sdk::HttpError::invalid("name", "this field is required");
    std::string name = Poco::toLower(Poco::trim(*raw));
    if (!name.empty() && name.back() == '.') name.pop_back();
    if (!isValidDomain(name)) throw sdk::HttpError::invalid("name", "not a valid domain name");
    if (isPlatformDomain(name)) {
      throw sdk::HttpError(409, "conflict", name + " is a platform domain of this server.");
    }
    Poco::Data::Session s = context_->database().session();
    if (!customDomains(s, r.principal.account_id, name).empty()) {
      throw sdk::HttpError(409, "conflict", "This account already added " + name + ".");
    }
    std::string token = sdk::randomToken(24);
    std::int64_t at = sdk::nowMicros();
    context_->database().transaction([&](Poco::Data::Session& tx) {
      std::string account = r.principal.account_id;
      Poco::Int64 created = at, zero = 0;
      tx << "INSERT INTO email_domains (name, account_id, status, token, created_us, verified_us) "
            "VALUES (?, ?, 'pending', ?, ?, ?)",
          use(name), use(account), use(token), use(created), use(zero), now;
    });
    return sdk::Response::json(201, domainJson(name, "custom", "pending", at, token));
  }

  DomainTuple ownDomain(sdk::Request& r) {
    std::string name = Poco::toLower(r.params.at("name"));
    Poco::Data::Session s = context_->database().session();
    auto rows = customDomains(s, r.principal.account_id, name);
    if (rows.empty()) throw sdk::HttpError::notFound("domain");
    return rows.front();
  }

  sdk::Response oneDomain(sdk::Request& r) {
    std::string name = Poco::toLower(r.params.at("name"));
    if (isPlatformDomain(name)) {
      return sdk::Response::json(200, domainJson(name, "platform", "verified", 0, ""));
    }
    auto d = ownDomain(r);
    return sdk::Response::json(
        200, domainJson(d.get<0>(), "custom", d.get<1>(), d.get<3>(), d.get<2>()));
  }

  sdk::Response deleteDomain(sdk::Request& r) {
    auto d = ownDomain(r);
    std::string name = d.get<0>(), account = r.principal.account_id;
    context_->database().transaction([&](Poco::Data::Session& tx) {
      long inboxes = 0;
      std::string pattern = "%@" + name;
      tx << "SELECT COUNT(*) FROM email_inboxes WHERE account_id = ? AND address LIKE ?",
          use(account), use(pattern), into(inboxes), now;
      if (inboxes > 0) {
        throw sdk::HttpError(409, "conflict",
                             "Inboxes still use " + name + "; they keep their addresses.");
      }
      tx << "DELETE FROM email_domains WHERE account_id = ? AND name = ?", use(account), use(name),
          now;
    });
    return sdk::Response::noContent();
  }

  sdk::Response verifyDomain(sdk::Request& r) {
    auto d = ownDomain(r);
    std::string name = d.get<0>(), token = d.get<2>();
    if (d.get<1>() == "verified") {
      return sdk::Response::json(200, domainJson(name, "custom", "verified", d.get<3>(), token));
    }
    const std::string record = "_svc-verification." + name;
    const std::string expected = "svc-verification=" + token;
    std::vector<std::string> found;
    try {
      found = lookupTxt(record, dns_server_);
    } catch (const std::exception& e) {
      throw sdk::HttpError(503, "service_unavailable",
                           std::string("The DNS lookup failed: ") + e.what() + ". Try again.")
          .header("Retry-After", "30");
    }
    if (std::find(found.begin(), found.end(), expected) == found.end()) {
      throw sdk::HttpError(400, "invalid",
                           "The TXT record " + record + " with the value " + expected +
                               " was not found. Publish it, wait for DNS to update, and verify "
                               "again.")
          .field("dns_record", "TXT " + record + " not found or has another value");
    }
    // The first account to prove the domain owns it; another account's claim stays pending.
    std::string account = r.principal.account_id;
    context_->database().transaction([&](Poco::Data::Session& tx) {
      long others = 0;
      tx << "SELECT COUNT(*) FROM email_domains WHERE name = ? AND status = 'verified' AND "
            "account_id <> ?",
          use(name), use(account), into(others), now;
      if (others > 0) {
        throw sdk::HttpError(409, "conflict", name + " is verified by another account.");
      }
      Poco::Int64 at = sdk::nowMicros();
      tx << "UPDATE email_domains SET status = 'verified', verified_us = ? WHERE name = ? AND "
            "account_id = ?",
          use(at), use(name), use(account), now;
    });
    return sdk::Response::json(200, domainJson(name, "custom", "verified", d.get<3>(), token));
  }

  // ---- inboxes ----

  sdk::Response listInboxes(sdk::Request& r) {
    const auto page = sdk::pageRequest(r);
    Poco::Data::Session s = context_->database().session();
    std::string account = r.principal.account_id, identity = scopeIdentity(r);
    std::string where =
        "WHERE account_id = ?" + std::string(identity.empty() ? "" : " AND identity_uuid = ?");
    long count = 0;
    {
      Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM email_inboxes " + where, use(account));
      if (!identity.empty()) q, use(identity);
      q, into(count), now;
    }
    using T = Poco::Tuple<std::string, std::string, std::string, std::string, int, Poco::Int64>;
    std::vector<T> rows;
    int limit = page.limit, offset = page.offset;
    Poco::Data::Statement q =
        (s << "SELECT id, account_id, identity_uuid, address, is_primary, created_us FROM "
              "email_inboxes " +
                  where + " ORDER BY created_us DESC, id LIMIT ? OFFSET ?",
         use(account));
    if (!identity.empty()) q, use(identity);
    q, use(limit), use(offset), into(rows), now;
    Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
    for (const auto& t : rows) {
      results->add(MailStore::inboxJson(
          {t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>() != 0, t.get<5>()}));
    }
    return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
  }

  // An address from `email`: a local part (on the default domain) or a full address.
  std::string requestedAddress(const std::string& field, const std::string& raw) {
    std::string value = Poco::toLower(Poco::trim(raw));
    if (sdk::hasControlCharacter(value))
      throw sdk::HttpError::invalid(field, "must not contain control characters");
    std::size_t at = value.find('@');
    std::string local = at == std::string::npos ? value : value.substr(0, at);
    std::string domain = at == std::string::npos ? platform_domains_.front() : value.substr(at + 1);
    if (!sdk::isValidInboxLocalPart(local)) throw sdk::HttpError::invalid(field, kLocalPartRule);
    if (!isValidDomain(domain)) throw sdk::HttpError::invalid(field, "not a valid domain");
    if (!isValidAddress(local + "@" + domain)) throw sdk::HttpError::invalid(field, kTooLong);
    return local + "@" + domain;
  }

  sdk::Response availability(sdk::Request& r) {
    auto raw = r.queryParam("email");
    if (!raw || raw->empty()) throw sdk::HttpError::invalid("email", "this parameter is required");
    std::string address = requestedAddress("email", *raw);
    Poco::Data::Session s = context_->database().session();
    bool available = domainUsableBy(s, r.principal.account_id, domainOf(address)) &&
                     !store_->inboxByAddress(s, address);
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("available", available);
    o->set("email", address);
    return sdk::Response::json(200, o);
  }

  sdk::Response createInbox(sdk::Request& r) {
    std::string identity = scopeIdentity(r);
    if (auto from_body = r.stringField("identity")) {
      std::string named = Poco::toLower(*from_body);
      if (!identity.empty() && named != identity) {
        if (r.principal.kind == sdk::PrincipalKind::kIdentity) {
          throw sdk::HttpError(403, "permission_denied",
                               "This identity key is bound to another identity.");
        }
        throw sdk::HttpError::invalid("identity", "disagrees with the identity the request names");
      }
      identity = named;
    }
    if (identity.empty()) {
      throw sdk::HttpError(400, "identity_required",
                           "Name the identity: in the body, with ?identity=<uuid>, or by using "
                           "an identity key.");
    }
    if (!r.identity) {  // named only in the body: fence it like the kernel fences identity=
      auto directory = context_->services().find(sdk::kIdentityDirectoryService);
      if (!directory || !directory->find(r.principal.account_id, identity)) {
        throw sdk::HttpError::notFound("identity");
      }
    }
    if (!plans_ || !plans_->isActive(r.principal.account_id)) {
      throw sdk::HttpError(402, "subscription_required", "An active subscription is required.");
    }
    Inbox inbox;
    inbox.id = sdk::newUuid();
    inbox.account_id = r.principal.account_id;
    inbox.identity_uuid = identity;
    inbox.created_us = sdk::nowMicros();
    context_->database().transaction([&](Poco::Data::Session& tx) {
      if (auto raw = r.stringField("email")) {
        inbox.address = requestedAddress("email", *raw);
        if (!domainUsableBy(tx, inbox.account_id, domainOf(inbox.address))) {
          throw sdk::HttpError::invalid("email",
                                        "the domain is neither a platform domain nor a "
                                        "verified domain of this account");
        }
        if (store_->inboxByAddress(tx, inbox.address)) throw emailTaken(inbox.address);
      } else {
        auto directory = context_->services().find(sdk::kIdentityDirectoryService);
        auto ref = directory ? directory->find(inbox.account_id, identity) : std::nullopt;
        inbox.address =
            generatedAddress(tx, ref ? ref->name : std::string(), platform_domains_.front());
      }
      inbox.is_primary = !store_->primaryInbox(tx, identity).has_value();
      try {
        store_->insertInbox(tx, inbox);
      } catch (const Poco::Exception&) {
        throw emailTaken(inbox.address);
      }
    });
    return sdk::Response::json(201, MailStore::inboxJson(inbox));
  }

  Inbox visibleInbox(sdk::Request& r, const std::string& id) {
    Poco::Data::Session s = context_->database().session();
    auto inbox = store_->inboxById(s, id);
    if (!inbox || !visible(r, inbox->account_id, inbox->identity_uuid)) {
      throw sdk::HttpError::notFound("inbox");
    }
    return *inbox;
  }

  sdk::Response oneInbox(sdk::Request& r) {
    return sdk::Response::json(200, MailStore::inboxJson(visibleInbox(r, r.params.at("id"))));
  }

  // ---- threads ----

  Poco::JSON::Object::Ptr threadJson(
      const Poco::Tuple<std::string, std::string, std::string, std::string, std::string, int, int,
                        std::string, std::string, Poco::Int64>& t) {
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("thread_id", t.get<0>());
    o->set("inbox", t.get<1>());
    o->set("identity", t.get<2>());
    o->set("subject", t.get<3>());
    o->set("preview", t.get<4>());
    o->set("message_count", t.get<5>());
    o->set("unread_count", t.get<6>());
    Poco::JSON::Array::Ptr names = new Poco::JSON::Array, people = new Poco::JSON::Array;
    for (const auto& n : parseJsonList(t.get<7>())) names->add(n);
    for (const auto& p : parseJsonList(t.get<8>())) people->add(p);
    o->set("attachment_names", names);
    o->set("participants", people);
    o->set("latest_dt", sdk::isoTimestamp(t.get<9>()));
    return o;
  }

  sdk::Response listThreads(sdk::Request& r) {
    const auto page = sdk::pageRequest(r);
    std::string account = r.principal.account_id, identity = scopeIdentity(r);
    std::string where = "WHERE account_id = ?";
    std::vector<std::string> binds{account};
    if (!identity.empty()) {
      where += " AND identity_uuid = ?";
      binds.push_back(identity);
    }
    if (auto inbox = r.queryParam("inbox")) {
      if (!sdk::isUuid(*inbox)) throw sdk::HttpError::invalid("inbox", "must be an inbox id");
      where += " AND inbox_id = ?";
      binds.push_back(Poco::toLower(*inbox));
    }
    if (auto unread = r.queryParam("has_unread")) {
      std::string v = Poco::toLower(*unread);
      if (v == "true" || v == "1") {
        where += " AND unread_count > 0";
      } else if (v == "false" || v == "0") {
        where += " AND unread_count = 0";
      } else {
        throw sdk::HttpError::invalid("has_unread", "must be true or false");
      }
    }
    Poco::Data::Session s = context_->database().session();
    long count = 0;
    {
      Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM email_threads " + where);
      for (auto& b : binds) q, use(b);
      q, into(count), now;
    }
    using T = Poco::Tuple<std::string, std::string, std::string, std::string, std::string, int, int,
                          std::string, std::string, Poco::Int64>;
    std::vector<T> rows;
    int limit = page.limit, offset = page.offset;
    Poco::Data::Statement q =
        (s << "SELECT id, inbox_id, identity_uuid, subject, preview, message_count, "
              "unread_count, attachment_names, participants, latest_us FROM email_threads " +
                  where + " ORDER BY latest_us DESC, id LIMIT ? OFFSET ?");
    for (auto& b : binds) q, use(b);
    q, use(limit), use(offset), into(rows), now;
    Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
    for (const auto& t : rows) results->add(threadJson(t));
    return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
  }

  sdk::Response oneThread(sdk::Request& r) {
    std::string id = Poco::toLower(r.params.at("id"));
    if (!sdk::isUuid(id)) throw sdk::HttpError::notFound("thread");
    Poco::Data::Session s = context_->database().session();
    using T = Poco::Tuple<std::string, std::string, std::string>;
    std::vector<T> rows;
    s << "SELECT account_id, identity_uuid, subject FROM email_threads WHERE id = ?", use(id),
        into(rows), now;
    if (rows.empty() || !visible(r, rows.front().get<0>(), rows.front().get<1>())) {
      throw sdk::HttpError::notFound("thread");
    }
    Poco::Data::Statement select = (s << std::string(MailStore::messageColumns()) +
                                             "WHERE thread_id = ? ORDER BY created_us, id",
                                    use(id));
    Poco::JSON::Array::Ptr messages = new Poco::JSON::Array;
    for (auto& m : MailStore::readMessages(select)) {
      store_->loadBodies(s, m);
      messages->add(store_->messageJson(s, m, true));
    }
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("thread_id", id);
    o->set("subject", rows.front().get<2>());
    o->set("messages", messages);
    return sdk::Response::json(200, o);
  }

  // ---- messages ----

  sdk::Response listMessages(sdk::Request& r) {
    const auto page = sdk::pageRequest(r);
    std::string identity = scopeIdentity(r);
    std::string where;
    std::vector<std::string> binds;
    // The identity index serves a scoped list (the kernel checked that the identity is the
    // account's, and its messages are only ever the account's), the account index the rest.
    // Nothing outside the index in the condition: counting stays an index-only scan.
    if (!identity.empty()) {
      where = "WHERE identity_uuid = ?";
      binds = {identity};
    } else {
      where = "WHERE account_id = ?";
      binds = {r.principal.account_id};
    }
    std::optional<Poco::Int64> after;
    if (auto raw = r.queryParam("created_after")) {
      after = parseIsoMicros(*raw);
      if (!after) {
        throw sdk::HttpError::invalid("created_after",
                                      "must be an ISO 8601 time such as "
                                      "2026-11-22T10:40:38.123456Z");
      }
      where += " AND created_us > ?";
    }
    if (auto d = r.queryParam("direction")) {
      if (*d != "incoming" && *d != "outgoing") {
        throw sdk::HttpError::invalid("direction", "must be incoming or outgoing");
      }
      where += " AND direction = ?";
      binds.push_back(*d);
    }
    std::optional<int> is_read;
    if (auto v = r.queryParam("is_read")) {
      std::string l = Poco::toLower(*v);
      if (l == "true" || l == "1") {
        is_read = 1;
      } else if (l == "false" || l == "0") {
        is_read = 0;
      } else {
        throw sdk::HttpError::invalid("is_read", "must be true or false");
      }
    }
    if (auto t = r.queryParam("thread_id")) {
      if (!sdk::isUuid(*t)) throw sdk::HttpError::invalid("thread_id", "must be a thread id");
      where += " AND thread_id = ?";
      binds.push_back(Poco::toLower(*t));
    }
    if (auto f = r.queryParam("from_email")) {
      where += " AND from_email = ?";
      binds.push_back(Poco::trim(*f));
    }
    if (auto i = r.queryParam("inbox")) {
      if (!sdk::isUuid(*i)) throw sdk::HttpError::invalid("inbox", "must be an inbox id");
      where += " AND inbox_id = ?";
      binds.push_back(Poco::toLower(*i));
    }
    if (is_read) where += " AND is_read = ?";
    Poco::Data::Session s = context_->database().session();
    auto bindAll = [&](Poco::Data::Statement& q) {
      q, use(binds[0]);
      if (after) q, use(*after);
      for (std::size_t i = 1; i < binds.size(); ++i) q, use(binds[i]);
      if (is_read) q, use(*is_read);
    };
    // An exact count of every matching message costs a scan of them all: from the middle of a
    // mailbox of a million, half a million index entries on every poll. So at most `cap` are
    // counted: email.messages.exact_count, or more when the page itself reaches further (so
    // `next` stays right). Past that, count says `cap` and count_is_exact is false: there are
    // at least that many.
    const long cap =
        std::max<long>(exact_count_limit_, static_cast<long>(page.offset) + page.limit + 1);
    long count = 0;
    {
      Poco::Int64 probe = cap + 1;  // 64 bits: offset may be near INT_MAX
      Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM (SELECT 1 FROM email_messages " +
                                          where + " LIMIT ?) AS counted");
      bindAll(q);
      q, use(probe), into(count), now;
    }
    const bool exact = count <= cap;
    count = std::min(count, cap);
    int limit = page.limit, offset = page.offset;
    // Lists leave out the bodies: they are not read from the table at all.
    Poco::Data::Statement q = (s << std::string(MailStore::messageColumns()) + where +
                                        " ORDER BY created_us, id LIMIT ? OFFSET ?");
    bindAll(q);
    q, use(limit), use(offset);
    Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
    for (const auto& m : MailStore::readMessages(q)) results->add(store_->messageJson(s, m, false));
    Poco::JSON::Object::Ptr body = sdk::pageBody(r, page, count, results);
    body->set("count_is_exact", exact);
    return sdk::Response::json(200, body);
  }

  MessageRow visibleMessage(sdk::Request& r, Poco::Data::Session& s) {
    auto m = store_->message(s, r.params.at("id"));
    if (!m || !visible(r, m->account_id, m->identity_uuid))
      throw sdk::HttpError::notFound("message");
    return *m;
  }

  sdk::Response oneMessage(sdk::Request& r) {
    Poco::Data::Session s = context_->database().session();
    MessageRow m = visibleMessage(r, s);
    if (r.method != "GET") {
      auto is_read = r.boolField("is_read");
      if (r.method == "PUT" && !is_read) {
        throw sdk::HttpError::invalid("is_read",
                                      "this field is required (PUT replaces every "
                                      "mutable field; use PATCH to change some)");
      }
      if (is_read) {
        context_->database().transaction([&](Poco::Data::Session& tx) {
          auto fresh = store_->message(tx, m.id);
          if (fresh) m = store_->setRead(tx, *fresh, *is_read);
        });
      }
    }
    return sdk::Response::json(200, store_->messageJson(s, m, true));
  }

  // ---- sending ----

  struct Draft {
    Inbox inbox;
    std::vector<Mailbox> to, cc, bcc;
    std::string subject, content, in_reply_to, thread_id;
    std::vector<std::string> references;
    std::vector<AttachmentRecord> attachments;
  };

  std::vector<Mailbox> recipients(const sdk::Request& r, const std::string& field) {
    std::vector<Mailbox> out;
    for (const auto& raw : listField(r, field)) out.push_back(parseRecipient(field, raw));
    return out;
  }

  std::vector<AttachmentRecord> requestedAttachments(const sdk::Request& r, const Inbox& inbox) {
    std::vector<AttachmentRecord> out;
    Poco::Data::Session s = context_->database().session();
    for (const auto& uuid : listField(r, "attachment_uuids")) {
      auto a = store_->attachment(s, uuid);
      if (!a || a->account_id != inbox.account_id ||
          (!a->identity_uuid.empty() && a->identity_uuid != inbox.identity_uuid)) {
        throw sdk::HttpError::invalid("attachment_uuids", "no attachment " + uuid +
                                                              " for this identity; upload it "
                                                              "with POST /api/email-attachments/");
      }
      out.push_back(*a);
    }
    return out;
  }

  Inbox senderInbox(sdk::Request& r) {
    if (auto inbox = r.queryParam("inbox")) return visibleInbox(r, *inbox);
    if (!r.identity) {
      throw sdk::HttpError(400, "identity_required",
                           "Name the sender with ?identity=<uuid> or ?inbox=<id>, or use an "
                           "identity key.");
    }
    Poco::Data::Session s = context_->database().session();
    auto inbox = store_->primaryInbox(s, Poco::toLower(r.identity->uuid));
    if (!inbox) throw sdk::HttpError::notFound("inbox");
    return *inbox;
  }

  std::string requiredText(const sdk::Request& r, const std::string& name) {
    auto v = r.stringField(name);
    if (!v) throw sdk::HttpError::invalid(name, "this field is required");
    return *v;
  }

  sdk::Response compose(sdk::Request& r) {
    Draft d;
    d.inbox = senderInbox(r);
    d.to = recipients(r, "to_email");
    if (d.to.empty())
      throw sdk::HttpError::invalid("to_email", "at least one recipient is required");
    d.subject = requiredText(r, "subject");
    d.content = requiredText(r, "content");
    d.cc = recipients(r, "cc");
    d.bcc = recipients(r, "bcc");
    d.attachments = requestedAttachments(r, d.inbox);
    return send(d);
  }

  sdk::Response reply(sdk::Request& r, bool all) {
    Poco::Data::Session s = context_->database().session();
    MessageRow parent = visibleMessage(r, s);
    Draft d;
    auto inbox = store_->inboxById(s, parent.inbox_id);
    if (!inbox) throw sdk::HttpError::notFound("inbox");
    d.inbox = *inbox;
    d.content = requiredText(r, "content");
    std::vector<std::string> to;
    if (parent.direction == "outgoing") {
      to = parent.to;  // replying to one's own message writes to its recipients again
    } else {
      to = parent.reply_to.empty() ? std::vector<std::string>{parent.from_email} : parent.reply_to;
    }
    std::vector<std::string> cc;
    if (all) {
      if (parent.direction == "incoming") to.insert(to.end(), parent.to.begin(), parent.to.end());
      cc = parent.cc;
    }
    // Drop the inbox's own address and duplicates, case-insensitively.
    std::set<std::string> seen{d.inbox.address};
    auto keep = [&](const std::vector<std::string>& list, std::vector<Mailbox>& out) {
      for (const auto& a : list) {
        if (seen.insert(Poco::toLower(a)).second && isValidAddress(a)) out.push_back({"", a});
      }
    };
    keep(to, d.to);
    keep(cc, d.cc);
    for (auto& m : recipients(r, "cc")) {
      if (seen.insert(Poco::toLower(m.address)).second) d.cc.push_back(m);
    }
    d.bcc = recipients(r, "bcc");
    if (d.to.empty() && d.cc.empty() && d.bcc.empty()) {
      throw sdk::HttpError::invalid("to_email", "the message has no one to reply to");
    }
    if (d.to.empty()) {  // everyone else was this inbox: cc becomes to
      d.to = d.cc;
      d.cc.clear();
    }
    d.subject = replySubject(parent.subject, "Re:");
    d.in_reply_to = parent.message_id;
    d.references = parent.references;
    if (!parent.message_id.empty()) d.references.push_back(parent.message_id);
    d.thread_id = parent.thread_id;
    d.attachments = requestedAttachments(r, d.inbox);
    return send(d);
  }

  sdk::Response forward(sdk::Request& r) {
    Poco::Data::Session s = context_->database().session();
    MessageRow parent = visibleMessage(r, s);
    Draft d;
    auto inbox = store_->inboxById(s, parent.inbox_id);
    if (!inbox) throw sdk::HttpError::notFound("inbox");
    d.inbox = *inbox;
    d.to = recipients(r, "to_email");
    if (d.to.empty())
      throw sdk::HttpError::invalid("to_email", "at least one recipient is required");
    std::string note = requiredText(r, "content");
    d.cc = recipients(r, "cc");
    d.bcc = recipients(r, "bcc");
    d.subject = replySubject(parent.subject, "Fwd:");
    d.content = note + "\n\n---------- Forwarded message ---------\nFrom: " + parent.from_email +
                "\nDate: " + sdk::isoTimestamp(parent.created_us) + "\nSubject: " + parent.subject +
                "\nTo: " + Poco::cat(std::string(", "), parent.to.begin(), parent.to.end()) +
                "\n\n" + parent.content;
    d.in_reply_to = parent.message_id;
    d.references = parent.references;
    if (!parent.message_id.empty()) d.references.push_back(parent.message_id);
    d.thread_id = parent.thread_id;
    d.attachments = store_->messageAttachments(s, parent.id);
    auto extra = requestedAttachments(r, d.inbox);
    d.attachments.insert(d.attachments.end(), extra.begin(), extra.end());
    return send(d);
  }

  void checkSendingLimit(Poco::Data::Session& s, const std::string& identity) {
    const std::int64_t now_us = sdk::nowMicros();
    for (auto [limit, seconds, what] :
         {std::tuple{per_hour_, 3600, "an hour"}, std::tuple{per_day_, 86400, "a day"}}) {
      if (limit <= 0) continue;
      Poco::Int64 since = now_us - static_cast<std::int64_t>(seconds) * 1000000;
      std::vector<Poco::Int64> times;
      std::string id = identity;
      int n = limit;
      s << "SELECT created_us FROM email_messages WHERE identity_uuid = ? AND direction = "
           "'outgoing' AND created_us > ? ORDER BY created_us DESC LIMIT ?",
          use(id), use(since), use(n), into(times), now;
      if (static_cast<int>(times.size()) >= limit) {
        // The oldest of the last `limit` sends leaves the window first.
        auto wait =
            (times.back() + static_cast<std::int64_t>(seconds) * 1000000 - now_us) / 1000000 + 1;
        throw sdk::RateLimiter::throttled(
            static_cast<int>(wait),
            "messages from this identity (it may send " + std::to_string(limit) + " " + what + ")");
      }
    }
  }

  sdk::Response send(Draft& d) {
    if (sdk::hasControlCharacter(d.subject)) {
      throw sdk::HttpError::invalid("subject", "must be one line without control characters");
    }
    if (d.subject.size() > 998) throw sdk::HttpError::invalid("subject", "at most 998 characters");
    // Deduplicate across to, cc, bcc (the first mention wins) and count.
    std::set<std::string> seen;
    auto dedupe = [&](std::vector<Mailbox>& list) {
      std::vector<Mailbox> out;
      for (auto& m : list) {
        if (seen.insert(Poco::toLower(m.address)).second) out.push_back(m);
      }
      list = out;
    };
    dedupe(d.to);
    dedupe(d.cc);
    dedupe(d.bcc);
    if (seen.size() > kMaxRecipients) {
      throw sdk::HttpError::invalid("to_email", "at most 50 recipients in all (to, cc and bcc)");
    }
    std::int64_t total = 0;
    for (const auto& a : d.attachments) total += a.size;
    if (total > static_cast<std::int64_t>(max_attachment_bytes_)) {
      throw sdk::HttpError(413, "payload_too_large",
                           "The attachments add up to more than the " +
                               std::to_string(max_attachment_bytes_) +
                               " bytes a message may carry.");
    }
    // Which recipients live here, and whether they exist.
    std::vector<std::pair<Mailbox, Inbox>> local;
    std::vector<std::string> remote;
    {
      Poco::Data::Session s = context_->database().session();
      checkSendingLimit(s, d.inbox.identity_uuid);
      for (auto* list : {&d.to, &d.cc, &d.bcc}) {
        const char* field = list == &d.to ? "to_email" : list == &d.cc ? "cc" : "bcc";
        for (const auto& m : *list) {
          if (isLocalDomain(s, domainOf(m.address))) {
            auto inbox = store_->inboxByAddress(s, m.address);
            if (!inbox) {
              throw sdk::HttpError::invalid(field,
                                            "no inbox at this server has the address " + m.address);
            }
            local.emplace_back(m, *inbox);
          } else {
            remote.push_back(m.address);
          }
        }
      }
    }
    if (!remote.empty() && !relay_->configured()) {
      throw sdk::HttpError(
          503, "service_unavailable",
          "This server has no mail relay configured, so it can only deliver to "
          "its own addresses (" +
              Poco::cat(std::string(", "), platform_domains_.begin(), platform_domains_.end()) +
              ").");
    }
    // The bytes, as the relay will send them (and as a local copy would have been received).
    OutgoingMail out;
    out.from = {"", d.inbox.address};
    out.to = d.to;
    out.cc = d.cc;
    out.subject = d.subject;
    out.content = d.content;
    out.message_id = "<" + sdk::newUuid() + "@" + domainOf(d.inbox.address) + ">";
    out.in_reply_to = d.in_reply_to;
    out.references = d.references;
    out.date_us = sdk::nowMicros();
    if (!remote.empty()) {
      for (const auto& a : d.attachments) {
        auto bytes = blobs_->get(a.sha256);
        if (!bytes) throw std::runtime_error("attachment bytes missing for " + a.uuid);
        out.attachments.push_back({a.filename, a.content_type, std::move(*bytes)});
      }
    }
    auto toAddresses = [](const std::vector<Mailbox>& list) {
      std::vector<std::string> v;
      for (const auto& m : list) v.push_back(m.address);
      return v;
    };
    NewMessage sent;
    sent.direction = "outgoing";
    sent.from = out.from;
    sent.to = toAddresses(d.to);
    sent.cc = toAddresses(d.cc);
    sent.bcc = toAddresses(d.bcc);
    sent.subject = d.subject;
    sent.content = d.content;
    sent.message_id = out.message_id;
    sent.in_reply_to = d.in_reply_to;
    sent.references = d.references;
    sent.is_read = true;
    sent.status = remote.empty() ? "sent" : "queued";
    sent.thread_id = d.thread_id;
    sent.attachments = d.attachments;
    sent.created_us = out.date_us;
    MessageRow row;
    context_->database().transaction([&](Poco::Data::Session& tx) {
      row = store_->file(tx, d.inbox, sent);
      std::set<std::string> delivered;
      for (const auto& [mailbox, inbox] : local) {
        if (!delivered.insert(inbox.id).second) continue;
        NewMessage in = sent;
        in.direction = "incoming";
        in.bcc.clear();  // a recipient never learns who else was blind-copied
        in.is_read = false;
        in.status.clear();
        in.thread_id.clear();
        in.created_us = out.date_us;
        in.attachments.clear();
        for (const auto& a : d.attachments) {
          in.attachments.push_back(store_->insertAttachment(tx, inbox.account_id,
                                                            inbox.identity_uuid, a.filename,
                                                            a.content_type, a.size, a.sha256));
        }
        store_->file(tx, inbox, std::move(in));
      }
      if (!remote.empty()) {
        std::string raw = signedMessage(out), id = row.id, sender = d.inbox.address,
                    rcpts = jsonList(remote), empty;
        Poco::Int64 at = out.date_us;
        int zero = 0;
        tx << "INSERT INTO email_outbox (message_id, sender, recipients, raw, attempts, "
              "next_attempt_us, last_error, created_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            use(id), use(sender), use(rcpts), use(raw), use(zero), use(at), use(empty),
            bind(out.date_us), now;
      }
    });
    if (!remote.empty()) relay_->wake();
    Poco::Data::Session s = context_->database().session();
    return sdk::Response::json(201, store_->messageJson(s, row, true));
  }

  std::string signedMessage(const OutgoingMail& out);

  // ---- attachments ----

  sdk::Response upload(sdk::Request& r) {
    Upload u = readUpload(r.header("content-type").value_or(""), r.body,
                          r.queryParam("filename").value_or(""), max_attachment_bytes_);
    auto a = store_->saveAttachment(r.principal.account_id, scopeIdentity(r), u.filename,
                                    u.content_type, u.data);
    return sdk::Response::json(201, MailStore::attachmentJson(a));
  }

  AttachmentRecord visibleAttachment(sdk::Request& r) {
    Poco::Data::Session s = context_->database().session();
    auto a = store_->attachment(s, r.params.at("uuid"));
    if (!a || a->account_id != r.principal.account_id) throw sdk::HttpError::notFound("attachment");
    std::string scope = scopeIdentity(r);
    if (!scope.empty() && !a->identity_uuid.empty() && a->identity_uuid != scope) {
      throw sdk::HttpError::notFound("attachment");
    }
    return *a;
  }

  sdk::Response attachmentRecord(sdk::Request& r) {
    return sdk::Response::json(200, MailStore::attachmentJson(visibleAttachment(r)));
  }

  sdk::Response download(sdk::Request& r) {
    auto a = visibleAttachment(r);
    auto bytes = blobs_->get(a.sha256);
    if (!bytes) throw sdk::HttpError(500, "server_error", "The attachment's bytes are missing.");
    sdk::Response resp;
    resp.status = 200;
    resp.content_type = a.content_type;
    resp.body = std::move(*bytes);
    // Never rendered in the API's origin: downloaded, not sniffed, sandboxed if opened.
    std::string ascii;
    for (char c : a.filename) ascii += (static_cast<unsigned char>(c) < 0x80 && c != '"') ? c : '_';
    std::string encoded;
    static const char* hex = "0123456789ABCDEF";
    for (unsigned char c : a.filename) {
      if (std::isalnum(c) || c == '.' || c == '-' || c == '_') {
        encoded += static_cast<char>(c);
      } else {
        encoded += '%';
        encoded += hex[c >> 4];
        encoded += hex[c & 15];
      }
    }
    resp.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + ascii +
                                                         "\"; filename*=UTF-8''" + encoded);
    resp.headers.emplace_back("X-Content-Type-Options", "nosniff");
    resp.headers.emplace_back("Content-Security-Policy", "sandbox; default-src 'none'");
    return resp;
  }

  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  std::vector<std::string> platform_domains_;
  SmtpConfig smtp_;
  RelayConfig relay_config_;
  std::string dkim_selector_, dkim_key_file_, dns_server_;
  std::size_t max_attachment_bytes_ = 26214400;
  int per_hour_ = 60, per_day_ = 500;
  long exact_count_limit_ = 10000;
  std::unique_ptr<BlobStore> blobs_;
  std::unique_ptr<MailStore> store_;
  std::unique_ptr<Relay> relay_;
  std::unique_ptr<SmtpServer> smtp_server_;
  std::unique_ptr<DkimSigner> dkim_;
  std::unique_ptr<Spool> spool_;
  std::string spool_dir_, unfiled_dir_;
  std::uint64_t max_backlog_bytes_ = 1073741824;
  std::mutex known_mutex_;
  std::unordered_set<std::string> known_addresses_;
  std::shared_ptr<sdk::PlanService> plans_;
};

std::string EmailPlugin::signedMessage(const OutgoingMail& out) {
  std::string raw = buildMessage(out);
  if (!dkim_) return raw;
  return dkim_->sign(raw, domainOf(out.from.address), out.date_us / 1000000);
}

sdk::InboxAddress Provisioning::createPrimary(
    Poco::Data::Session& tx, const std::string& account_id, const std::string& identity_uuid,
    const std::string& identity_name, const std::string& local_part, const std::string& domain) {
  return plugin_.provisionPrimary(tx, account_id, identity_uuid, identity_name, local_part, domain);
}

std::map<std::string, sdk::InboxAddress> Provisioning::primaryInboxes(
    const std::vector<std::string>& identity_uuids) {
  return plugin_.primaries(identity_uuids);
}

}  // namespace svc::plugins::email

SVC_PLUGIN(svc::plugins::email::EmailPlugin)
