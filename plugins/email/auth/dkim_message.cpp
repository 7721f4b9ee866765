#include "auth/dkim_message.h"

#include "dkim.h"

#include <cctype>

namespace svc::plugins::email {

namespace {

bool isWsp(char c) {
  return c == ' ' || c == '\t';
}

}  // namespace

DkimMessage::DkimMessage(std::string_view message, std::size_t max_fields) {
  std::size_t pos = 0;
  while (pos < message.size()) {
    if (message.compare(pos, 2, "\r\n") == 0) {  // the blank line: the body follows
      body_ = message.substr(pos + 2);
      return;
    }
    if (fields_.size() == max_fields) {
      too_many_fields_ = true;
      return;
    }
    // A field runs to the first CRLF not followed by a space or tab (RFC 5322 2.2.3).
    std::size_t end = message.find("\r\n", pos);
    while (end != std::string_view::npos && end + 2 < message.size() && isWsp(message[end + 2])) {
      end = message.find("\r\n", end + 2);
    }
    const std::string_view text =
        message.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? message.size() : end + 2;
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) continue;  // not a field: nothing can sign it
    Field f{text, text.substr(0, colon), text.substr(colon + 1), {}};
    std::size_t len = f.name.size();
    while (len > 0 && isWsp(f.name[len - 1])) --len;
    f.key.reserve(len);
    for (std::size_t i = 0; i < len; ++i) {
      f.key += static_cast<char>(std::tolower(static_cast<unsigned char>(f.name[i])));
    }
    fields_.push_back(std::move(f));
  }
}

const std::string& DkimMessage::canonicalBody(bool relaxed) {
  if (relaxed) {
    if (!relaxed_) relaxed_ = relaxedBody(body_);
    return *relaxed_;
  }
  if (!simple_) {
    // 3.4.3: empty lines at the end go; the body ends with one CRLF (an empty body is CRLF).
    std::string_view b = body_;
    while (b.size() >= 2 && b.compare(b.size() - 2, 2, "\r\n") == 0) b.remove_suffix(2);
    simple_ = std::string(b) + "\r\n";
  }
  return *simple_;
}

std::string DkimMessage::canonicalField(const Field& field, std::string_view value, bool relaxed) {
  if (relaxed) {
    std::string out = relaxedHeader(field.name, value);
    out += "\r\n";
    return out;
  }
  std::string out(field.name);
  out += ':';
  out += value;
  out += "\r\n";
  return out;
}

}  // namespace svc::plugins::email
