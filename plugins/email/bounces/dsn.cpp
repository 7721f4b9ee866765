#include "bounces/dsn.h"

#include "mime_header.h"
#include "mime_text.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/util.h>

#include <Poco/String.h>

#include <cctype>

namespace svc::plugins::email {

namespace {

// Longest diagnostic kept, in bytes: a reason, not a transcript.
constexpr std::size_t kMaxDiagnostic = 1000;

using Fields = std::vector<std::pair<std::string, std::string>>;

std::string field(const Fields& fields, const char* name) {
  for (const auto& [k, v] : fields) {
    if (Poco::icompare(k, name) == 0) return v;
  }
  return {};
}

// One line of valid UTF-8: control characters become spaces, runs of space one, at most max
// bytes (cut before a character, never inside one).
std::string oneLine(std::string_view raw, std::size_t max) {
  std::string text = repairUtf8(raw), out;
  bool space = false;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += static_cast<char>(c);
  }
  if (out.size() > max) {
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
  }
  return out;
}

// `type; value` (RFC 3464 section 2.1.2): the value, trimmed; the whole text when it has no type.
std::string_view typedValue(std::string_view v) {
  std::size_t semi = v.find(';');
  return trim(semi == std::string_view::npos ? v : v.substr(semi + 1));
}

// An address field: lower case, angle brackets dropped; "" when it is not a valid address.
std::string address(std::string_view v) {
  std::string a(typedValue(v));
  if (a.size() >= 2 && a.front() == '<' && a.back() == '>') a = a.substr(1, a.size() - 2);
  a = Poco::toLower(a);
  return sdk::isValidEmailAddress(a) ? a : std::string();
}

// `5.1.1`: a class of 2, 4 or 5, then two numbers of 1-3 digits.
bool isStatusCode(std::string_view s) {
  if (s.size() < 5 || (s[0] != '2' && s[0] != '4' && s[0] != '5') || s[1] != '.') return false;
  std::size_t i = 2;
  for (int part = 0; part < 2; ++part) {
    std::size_t digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && digits < 4) {
      ++i;
      ++digits;
    }
    if (digits == 0 || digits > 3) return false;
    if (part == 0) {
      if (i >= s.size() || s[i] != '.') return false;
      ++i;
    }
  }
  return i == s.size();
}

std::string firstWord(std::string_view v) {
  v = trim(v);
  std::size_t end = 0;
  while (end < v.size() && v[end] != ' ' && v[end] != '\t' && v[end] != '(' && v[end] != ';') ++end;
  return std::string(v.substr(0, end));
}

// Splits a delivery-status body into its groups of unfolded fields.
std::vector<Fields> fieldGroups(std::string_view body) {
  std::vector<Fields> groups(1);
  std::string current;
  auto flush = [&] {
    std::size_t colon = current.find(':');
    if (colon != std::string::npos && colon > 0 && groups.back().size() < 100) {
      groups.back().emplace_back(std::string(trim(std::string_view(current).substr(0, colon))),
                                 std::string(trim(std::string_view(current).substr(colon + 1))));
    }
    current.clear();
  };
  std::size_t pos = 0;
  while (pos < body.size() && groups.size() <= kMaxReportedRecipients + 1) {
    std::size_t eol = body.find('\n', pos);
    std::string_view line =
        body.substr(pos, eol == std::string_view::npos ? body.size() - pos : eol - pos);
    pos = eol == std::string_view::npos ? body.size() : eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) {
      flush();
      if (!groups.back().empty()) groups.emplace_back();
      continue;
    }
    if ((line[0] == ' ' || line[0] == '\t') && !current.empty()) {
      if (current.size() < 4 * kMaxDiagnostic) {
        current += ' ';
        current += trim(line);
      }
      continue;
    }
    flush();
    current = std::string(line.substr(0, 4 * kMaxDiagnostic));
  }
  flush();
  if (groups.back().empty()) groups.pop_back();
  return groups;
}

}  // namespace

bool RecipientReport::failed() const {
  if (!action.empty()) return action == "failed";
  return !status.empty() && status[0] == '5';
}

DeliveryReport parseDeliveryStatus(std::string_view body) {
  DeliveryReport report;
  for (const Fields& group : fieldGroups(body)) {
    const std::string final_recipient = field(group, "Final-Recipient");
    const std::string original = field(group, "Original-Recipient");
    if (final_recipient.empty() && original.empty()) {
      // Per-message fields (a report may also put them after a stray blank line).
      if (std::string mta = field(group, "Reporting-MTA");
          !mta.empty() && report.reporting_mta.empty())
        report.reporting_mta = oneLine(typedValue(mta), 255);
      // Gmail names the message here, besides (or instead of) returning it.
      auto ids = parseMessageIds(field(group, "X-Original-Message-ID"));
      if (!ids.empty() && report.original_message_id.empty()) report.original_message_id = ids[0];
      continue;
    }
    if (report.recipients.size() >= kMaxReportedRecipients) break;
    RecipientReport r;
    r.final_recipient = address(final_recipient);
    r.original_recipient = address(original);
    r.action = Poco::toLower(firstWord(field(group, "Action")));
    std::string status = firstWord(field(group, "Status"));
    r.status = isStatusCode(status) ? status : std::string();
    r.diagnostic = oneLine(typedValue(field(group, "Diagnostic-Code")), kMaxDiagnostic);
    r.remote_mta = oneLine(typedValue(field(group, "Remote-MTA")), 255);
    report.recipients.push_back(std::move(r));
  }
  return report;
}

bool claimsDeliveryReport(const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [name, value] : headers) {
    if (Poco::icompare(name, "Content-Type") != 0) continue;
    const HeaderParams ct = parseParams(value);
    return ct.value == "multipart/report" && lower(ct.get("report-type")) == "delivery-status";
  }
  return false;
}

std::optional<DeliveryReport> parseDeliveryReport(const ParsedMessage& message) {
  if (!claimsDeliveryReport(message.headers)) return std::nullopt;
  std::optional<DeliveryReport> report;
  std::string returned_id;
  for (const auto& part : message.attachments) {
    const std::string& type = part.content_type;
    if (!report &&
        (type == "message/delivery-status" || type == "message/global-delivery-status")) {
      report = parseDeliveryStatus(part.data);
    } else if (returned_id.empty() &&
               (type == "message/rfc822" || type == "text/rfc822-headers" ||
                type == "message/global" || type == "message/global-headers")) {
      // Only the headers are needed: a returned message's body may be large.
      std::string_view data = part.data;
      std::size_t end = data.find("\r\n\r\n");
      if (end == std::string_view::npos) end = data.find("\n\n");
      MimeLimits limits;
      limits.max_parts = 1;
      returned_id = parseMessage(data.substr(0, end), limits).message_id;
    }
  }
  if (report && !returned_id.empty()) report->original_message_id = returned_id;
  return report;
}

std::string enhancedStatus(std::string_view reply) {
  reply = trim(reply);
  if (reply.size() < 3 || !std::isdigit(static_cast<unsigned char>(reply[0]))) return {};
  std::string_view text = trim(reply.substr(3));
  if (!text.empty() && text[0] == '-') text = trim(text.substr(1));  // a multi-line reply
  std::string code = firstWord(text);
  if (isStatusCode(code) && code[0] == reply[0]) return code;
  if (reply[0] == '4' || reply[0] == '5') return std::string(1, reply[0]) + ".0.0";
  return {};
}

std::string statusMeaning(const std::string& status) {
  if (!isStatusCode(status)) return {};
  static const std::pair<const char*, const char*> kMeanings[] = {
      {"1.1", "bad destination mailbox address"},
      {"1.2", "bad destination system address"},
      {"1.3", "bad destination mailbox address syntax"},
      {"1.6", "destination mailbox has moved"},
      {"2.1", "mailbox disabled"},
      {"2.2", "mailbox full"},
      {"2.3", "message length exceeds administrative limit"},
      {"3.4", "message too big for system"},
      {"4.4", "unable to route"},
      {"4.7", "delivery time expired"},
      {"7.1", "delivery not authorized, message refused"},
  };
  const std::string detail = status.substr(2);
  for (const auto& [code, meaning] : kMeanings) {
    if (detail == code) return meaning;
  }
  return status[0] == '5' ? "permanent failure" : status[0] == '4' ? "temporary failure" : "";
}

}  // namespace svc::plugins::email
