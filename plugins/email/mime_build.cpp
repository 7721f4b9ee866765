// Writing an outgoing message: headers (RFC 2047 words where needed), quoted-printable text and
// base64 attachments.
#include "mime.h"

#include <svc/sdk/util.h>

#include <Poco/DateTimeFormatter.h>
#include <Poco/NumberFormatter.h>
#include <Poco/Timestamp.h>

#include <algorithm>

namespace svc::plugins::email {

namespace {

bool needsEncoding(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80 || c < 0x20) return true;
  }
  return s.find("=?") != std::string_view::npos;
}

// RFC 2047 B-words of at most 75 octets, split on UTF-8 character boundaries.
std::string encodeWords(std::string_view text) {
  if (!needsEncoding(text)) return std::string(text);
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t n = std::min<std::size_t>(45, text.size() - i);  // 45 octets -> 60 base64
    while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) --n;
    if (!out.empty()) out += "\r\n ";
    out += "=?UTF-8?B?" + sdk::base64(text.substr(i, n)) + "?=";
    i += n;
  }
  return out;
}

std::string formatMailbox(const Mailbox& m) {
  if (m.name.empty()) return m.address;
  std::string name;
  if (needsEncoding(m.name)) {
    name = encodeWords(m.name);
  } else {
    name = "\"";
    for (char c : m.name) {
      if (c == '"' || c == '\\') name += '\\';
      name += c;
    }
    name += "\"";
  }
  return name + " <" + m.address + ">";
}

std::string addressHeader(const char* name, const std::vector<Mailbox>& list) {
  std::string out = std::string(name) + ": ";
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i) out += ",\r\n ";
    out += formatMailbox(list[i]);
  }
  return out + "\r\n";
}

std::string foldIds(const char* name, const std::vector<std::string>& ids) {
  std::string out = std::string(name) + ":";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "\r\n " : " ") + ids[i];
  return out + "\r\n";
}

std::string quotedPrintable(std::string_view text) {
  std::string out;
  std::size_t line = 0;
  auto put = [&](const std::string& piece) {
    if (line + piece.size() > 75) {
      out += "=\r\n";
      line = 0;
    }
    out += piece;
    line += piece.size();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '\r') continue;
    if (c == '\n') {
      out += "\r\n";
      line = 0;
      continue;
    }
    bool at_eol = i + 1 >= text.size() || text[i + 1] == '\n' || text[i + 1] == '\r';
    bool plain = (c >= 33 && c <= 126 && c != '=') || ((c == ' ' || c == '\t') && !at_eol);
    // A leading dot is encoded so no line of the body can be taken for SMTP's end of data.
    if (c == '.' && line == 0) plain = false;
    if (plain) {
      put(std::string(1, static_cast<char>(c)));
    } else {
      put("=" + Poco::NumberFormatter::formatHex(static_cast<unsigned>(c), 2));
    }
  }
  return out;
}

std::string base64Lines(std::string_view data) {
  const std::string flat = sdk::base64(data);
  std::string out;
  out.reserve(flat.size() + flat.size() / 38 + 2);
  for (std::size_t i = 0; i < flat.size(); i += 76) out += flat.substr(i, 76) + "\r\n";
  return out;
}

std::string quoteParam(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\r' || c == '\n') ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace

std::string buildMessage(const OutgoingMail& mail) {
  std::string out;
  Poco::Timestamp at(mail.date_us);
  out += "Date: " + Poco::DateTimeFormatter::format(at, "%w, %e %b %Y %H:%M:%S +0000") + "\r\n";
  out += addressHeader("From", {mail.from});
  out += addressHeader("To", mail.to);
  if (!mail.cc.empty()) out += addressHeader("Cc", mail.cc);
  out += "Subject: " + encodeWords(mail.subject) + "\r\n";
  out += "Message-ID: " + mail.message_id + "\r\n";
  if (!mail.in_reply_to.empty()) out += "In-Reply-To: " + mail.in_reply_to + "\r\n";
  if (!mail.references.empty()) out += foldIds("References", mail.references);
  out += "MIME-Version: 1.0\r\n";
  const std::string text_headers =
      "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n";
  if (mail.attachments.empty()) {
    out += text_headers + "\r\n" + quotedPrintable(mail.content);
    if (out.size() < 2 || out.compare(out.size() - 2, 2, "\r\n") != 0) out += "\r\n";
    return out;
  }
  const std::string boundary = "=_svc_" + mail.message_id.substr(1, mail.message_id.size() - 2);
  out += "Content-Type: multipart/mixed; boundary=" + quoteParam(boundary) + "\r\n\r\n";
  out += "This is a multi-part message in MIME format.\r\n";
  out += "--" + boundary + "\r\n" + text_headers + "\r\n" + quotedPrintable(mail.content) + "\r\n";
  for (const auto& a : mail.attachments) {
    std::string filename = needsEncoding(a.filename) ? encodeWords(a.filename) : a.filename;
    out += "--" + boundary + "\r\n";
    out += "Content-Type: " + a.content_type + "; name=" + quoteParam(filename) + "\r\n";
    out += "Content-Disposition: attachment; filename=" + quoteParam(filename) + "\r\n";
    out += "Content-Transfer-Encoding: base64\r\n\r\n";
    out += base64Lines(a.data);
  }
  out += "--" + boundary + "--\r\n";
  return out;
}

}  // namespace svc::plugins::email
