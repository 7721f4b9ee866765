// Delivery status notifications (RFC 3464): what a report says about each recipient of a message,
// read from a message the MIME parser has already taken apart (a multipart/report whose parts it
// kept as attachments). Reading never throws; whatever cannot be read is left out.
#pragma once

#include "mime.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::email {

/// What a report says about one recipient.
struct RecipientReport {
  std::string final_recipient;     ///< Lower case, without its type (`rfc822;`); "" if invalid.
  std::string original_recipient;  ///< The address as first given to the reporter, or "".
  std::string action;              ///< failed, delayed, delivered, relayed, expanded (lower case).
  std::string status;              ///< RFC 3463 code (`5.1.1`), or "" when absent or malformed.
  std::string diagnostic;          ///< Diagnostic-Code without its type (`smtp;`): one UTF-8 line.
  std::string remote_mta;          ///< Remote-MTA without its type, or "".
  /// @return true when the message will not reach this recipient: Action failed, or (no Action,
  /// which RFC 3464 requires, but some reporters leave out) a 5.x.x status.
  bool failed() const;
};

/// A delivery status notification.
struct DeliveryReport {
  std::string reporting_mta;
  /// The Message-ID (`<...>`) of the message reported on, from the returned message or its
  /// headers, else the per-message X-Original-Message-ID (Gmail's); "" when it has none.
  std::string original_message_id;
  std::vector<RecipientReport> recipients;
};

/// At most this many recipients are read from one report (our messages have at most 50).
constexpr std::size_t kMaxReportedRecipients = 100;

/// @param headers a message's header fields. @return true when its Content-Type says it is a
/// delivery report (multipart/report with report-type delivery-status), whatever its parts.
bool claimsDeliveryReport(const std::vector<std::pair<std::string, std::string>>& headers);

/// @param message a parsed message. @return its delivery report when it is one (Content-Type
/// multipart/report with report-type delivery-status, and a message/delivery-status or
/// message/global-delivery-status part); nullopt for any other message.
std::optional<DeliveryReport> parseDeliveryReport(const ParsedMessage& message);

/// @param body a message/delivery-status part's body: groups of fields separated by blank
/// lines, per message first, then one group per recipient. @return what it says.
DeliveryReport parseDeliveryStatus(std::string_view body);

/// @param reply an SMTP reply (`550 5.1.1 <a@b>: User unknown`). @return the RFC 3463 code at
/// the start of its text, else one made from the reply's class (`5.0.0`, `4.0.0`); "" when the
/// reply has no code.
std::string enhancedStatus(std::string_view reply);

/// @param status an RFC 3463 code. @return a few words saying what it means (`5.1.1`: "bad
/// destination mailbox address"), or "" when it is not one of the common ones.
std::string statusMeaning(const std::string& status);

}  // namespace svc::plugins::email
