// The email plugin's configuration: its keys as declared (with their defaults, which live only
// there) and the values read from them once, at configure time.
#pragma once

#include "relay.h"
#include "smtp_server.h"

#include <svc/sdk/plugin.h>

#include <Poco/Util/AbstractConfiguration.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// @return the keys the plugin reads, each with its default and one line of description.
const std::vector<sdk::ConfigKey>& emailConfigKeys();

/// How many messages one identity may send (0 or less: no limit).
struct SendingLimits {
  int per_hour = 0;
  int per_day = 0;
};

/// Every value the plugin reads, checked.
struct EmailConfig {
  std::vector<std::string> platform_domains;  ///< Lower case; the first is the default.
  SmtpConfig smtp;                            ///< The listener (hostname: first domain if unset).
  std::uint64_t max_backlog_bytes = 0;        ///< Spooled mail not yet filed, before 451.
  RelayConfig relay;                          ///< helo is the SMTP hostname.
  std::string dkim_selector, dkim_key_file;   ///< Both or neither.
  std::size_t max_attachment_bytes = 0;
  SendingLimits sending;
  long exact_count_limit = 0;  ///< Message lists count exactly up to this many.
  std::string dns_server;      ///< host:port for domain verification and inbound checks.
  bool inbound_verify = true;  ///< SPF, DKIM and DMARC on inbound SMTP mail.
  bool dmarc_enforce = true;   ///< Reject or quarantine as a failing domain's DMARC policy asks.

  /// @param config the plugin's configuration, where every key of emailConfigKeys() is set (the
  /// kernel sets the declared defaults). @return the values.
  /// @throws std::runtime_error naming the key when a value is not usable.
  static EmailConfig read(const Poco::Util::AbstractConfiguration& config);
  /// @return the values of the declared defaults alone (tests start from them).
  static EmailConfig defaults();
};

}  // namespace svc::plugins::email
