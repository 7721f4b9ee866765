#include "email_config.h"

#include "mime.h"

#include <svc/sdk/addresses.h>

#include <Poco/AutoPtr.h>
#include <Poco/String.h>
#include <Poco/StringTokenizer.h>
#include <Poco/Util/MapConfiguration.h>

#include <stdexcept>

namespace svc::plugins::email {

const std::vector<sdk::ConfigKey>& emailConfigKeys() {
  static const std::vector<sdk::ConfigKey> keys = {
      {"email.domains", "mail.localhost",
       "comma list of platform domains this server receives mail for; the first is the default"},
      {"email.smtp.listen", "127.0.0.1:2525", "host:port of the SMTP listener"},
      {"email.smtp.hostname", "", "the name the SMTP listener greets with (default: first domain)"},
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
      {"email.relay.verp", "true",
       "send relayed mail from a VERP envelope sender (bounces+token@domain) so reports name "
       "their message; false: the sender's own address (relays such as Exchange/Office 365 "
       "that require the logged-in mailbox)"},
      {"email.dkim.selector", "", "DKIM selector (with email.dkim.key_file: sign outgoing mail)"},
      {"email.dkim.key_file", "", "PEM RSA private key for DKIM"},
      {"email.attachments.max_bytes", "26214400", "largest attachment accepted"},
      {"email.send.per_hour", "60", "messages an identity may send per hour"},
      {"email.send.per_day", "500", "messages an identity may send per day"},
      {"email.messages.exact_count", "10000",
       "message lists count matches exactly up to this many; beyond, count is a lower bound "
       "(count_is_exact: false)"},
      {"email.dns.server", "",
       "host:port of the DNS server for domain verification and the SPF, DKIM and DMARC checks "
       "of inbound mail (empty: the system's resolver)"},
      {"email.inbound.verify", "true",
       "check SPF, DKIM and DMARC on mail arriving over SMTP (false: verdict none, not checked)"},
      {"email.inbound.dmarc_enforce", "true",
       "refuse (550 5.7.1) mail failing DMARC under p=reject and quarantine it under "
       "p=quarantine (false: store it with its verdict alone)"},
  };
  return keys;
}

EmailConfig EmailConfig::read(const Poco::Util::AbstractConfiguration& c) {
  EmailConfig out;
  for (const auto& d : Poco::StringTokenizer(
           c.getString("email.domains"), ",",
           Poco::StringTokenizer::TOK_TRIM | Poco::StringTokenizer::TOK_IGNORE_EMPTY)) {
    std::string domain = Poco::toLower(d);
    if (!sdk::isValidDomain(domain))
      throw std::runtime_error("email.domains: '" + d + "' is not a domain");
    out.platform_domains.push_back(domain);
  }
  if (out.platform_domains.empty()) throw std::runtime_error("email.domains names no domain");
  SmtpConfig& smtp = out.smtp;
  smtp.listen = c.getString("email.smtp.listen");
  smtp.hostname = c.getString("email.smtp.hostname");
  if (smtp.hostname.empty()) smtp.hostname = out.platform_domains.front();
  smtp.max_message_bytes = static_cast<std::size_t>(c.getInt64("email.smtp.max_message_bytes"));
  smtp.max_recipients = c.getInt("email.smtp.max_recipients");
  smtp.timeout_seconds = c.getInt("email.smtp.timeout_seconds");
  smtp.idle_timeout_seconds = c.getInt("email.smtp.idle_timeout_seconds");
  smtp.max_connections = c.getInt("email.smtp.max_connections");
  smtp.max_connections_per_address = c.getInt("email.smtp.max_connections_per_address");
  const Poco::Int64 buffered = c.getInt64("email.smtp.max_buffered_bytes");
  if (buffered <= 0) throw std::runtime_error("email.smtp.max_buffered_bytes must be positive");
  smtp.max_buffered_bytes = static_cast<std::size_t>(buffered);
  const Poco::Int64 backlog_bytes = c.getInt64("email.smtp.max_backlog_bytes");
  if (backlog_bytes < 0) throw std::runtime_error("email.smtp.max_backlog_bytes is negative");
  out.max_backlog_bytes = static_cast<std::uint64_t>(backlog_bytes);
  smtp.tls_cert_file = c.getString("email.smtp.tls_cert_file");
  smtp.tls_key_file = c.getString("email.smtp.tls_key_file");
  RelayConfig& relay = out.relay;
  relay.host = c.getString("email.relay.host");
  relay.port = c.getInt("email.relay.port");
  relay.username = c.getString("email.relay.username");
  relay.password = c.getString("email.relay.password");
  relay.starttls = c.getBool("email.relay.starttls");
  relay.tls_ca_file = c.getString("email.relay.tls_ca_file");
  relay.verp = c.getBool("email.relay.verp");
  relay.helo = smtp.hostname;
  out.dkim_selector = c.getString("email.dkim.selector");
  out.dkim_key_file = c.getString("email.dkim.key_file");
  if (out.dkim_selector.empty() != out.dkim_key_file.empty()) {
    throw std::runtime_error("set both email.dkim.selector and email.dkim.key_file, or neither");
  }
  out.max_attachment_bytes = static_cast<std::size_t>(c.getInt64("email.attachments.max_bytes"));
  out.sending.per_hour = c.getInt("email.send.per_hour");
  out.sending.per_day = c.getInt("email.send.per_day");
  out.dns_server = c.getString("email.dns.server");
  out.inbound_verify = c.getBool("email.inbound.verify");
  out.dmarc_enforce = c.getBool("email.inbound.dmarc_enforce");
  out.exact_count_limit = c.getInt("email.messages.exact_count");
  if (out.exact_count_limit < 0) throw std::runtime_error("email.messages.exact_count is negative");
  return out;
}

EmailConfig EmailConfig::defaults() {
  Poco::AutoPtr<Poco::Util::MapConfiguration> declared(new Poco::Util::MapConfiguration);
  for (const auto& key : emailConfigKeys()) declared->setString(key.key, key.default_value);
  return read(*declared);
}

}  // namespace svc::plugins::email
