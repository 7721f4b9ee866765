#include "mime_header.h"

#include "mime.h"
#include "mime_text.h"

#include <Poco/String.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace svc::plugins::email {

HeaderParams parseParams(std::string_view raw) {
  HeaderParams out;
  std::size_t i = 0;
  auto skipSpace = [&] {
    while (i < raw.size() && std::isspace(static_cast<unsigned char>(raw[i]))) ++i;
  };
  std::size_t semi = raw.find(';');
  out.value = lower(trim(raw.substr(0, semi)));
  if (semi == std::string_view::npos) return out;
  i = semi + 1;
  std::vector<std::pair<std::string, std::string>> extended;  // name*N* parts
  while (i < raw.size()) {
    skipSpace();
    std::size_t start = i;
    while (i < raw.size() && raw[i] != '=' && raw[i] != ';') ++i;
    std::string name = lower(trim(raw.substr(start, i - start)));
    std::string value;
    if (i < raw.size() && raw[i] == '=') {
      ++i;
      skipSpace();
      if (i < raw.size() && raw[i] == '"') {
        ++i;
        while (i < raw.size() && raw[i] != '"') {
          if (raw[i] == '\\' && i + 1 < raw.size()) ++i;
          value += raw[i++];
        }
        if (i < raw.size()) ++i;
        while (i < raw.size() && raw[i] != ';') ++i;
      } else {
        start = i;
        while (i < raw.size() && raw[i] != ';') ++i;
        value = std::string(trim(raw.substr(start, i - start)));
      }
    }
    if (i < raw.size() && raw[i] == ';') ++i;
    if (name.empty()) continue;
    if (name.find('*') != std::string::npos) {
      extended.emplace_back(name, value);
    } else {
      out.params.emplace_back(name, value);
    }
  }
  // RFC 2231: join name*0*, name*1, ... (in order of appearance) and decode the charset form.
  std::vector<std::string> names;
  for (const auto& [k, v] : extended) {
    std::string base = k.substr(0, k.find('*'));
    if (std::find(names.begin(), names.end(), base) == names.end()) names.push_back(base);
  }
  for (const auto& base : names) {
    std::string joined;
    std::string charset;
    bool first = true;
    for (const auto& [k, v] : extended) {
      if (k.substr(0, k.find('*')) != base) continue;
      bool encoded = k.back() == '*';
      std::string part = v;
      if (encoded && first) {
        std::size_t q1 = part.find('\'');
        std::size_t q2 = q1 == std::string::npos ? q1 : part.find('\'', q1 + 1);
        if (q2 != std::string::npos) {
          charset = part.substr(0, q1);
          part = part.substr(q2 + 1);
        }
      }
      if (encoded) {
        std::string decoded;
        for (std::size_t j = 0; j < part.size(); ++j) {
          if (part[j] == '%' && j + 2 < part.size() && hexValue(part[j + 1]) >= 0 &&
              hexValue(part[j + 2]) >= 0) {
            decoded += static_cast<char>(hexValue(part[j + 1]) * 16 + hexValue(part[j + 2]));
            j += 2;
          } else {
            decoded += part[j];
          }
        }
        part = decoded;
      }
      joined += part;
      first = false;
    }
    out.params.insert(out.params.begin(), {base, toUtf8(joined, charset)});
  }
  return out;
}

std::string decodeHeaderWords(std::string_view value) {
  std::string out;
  std::size_t i = 0;
  bool last_was_word = false;
  std::string pending_space;
  while (i < value.size()) {
    if (value.compare(i, 2, "=?") == 0) {
      std::size_t q1 = value.find('?', i + 2);
      std::size_t q2 = q1 == std::string_view::npos ? q1 : value.find('?', q1 + 1);
      std::size_t end = q2 == std::string_view::npos ? q2 : value.find("?=", q2 + 1);
      if (end != std::string_view::npos && q2 == q1 + 2) {
        std::string charset(value.substr(i + 2, q1 - i - 2));
        charset = charset.substr(0, charset.find('*'));  // RFC 2231 language suffix
        char encoding = static_cast<char>(std::toupper(static_cast<unsigned char>(value[q1 + 1])));
        std::string_view text = value.substr(q2 + 1, end - q2 - 1);
        std::optional<std::string> bytes;
        if (encoding == 'B') {
          bytes = decodeBase64Lenient(text, nullptr);
        } else if (encoding == 'Q') {
          bytes = decodeQuotedPrintable(text, true);
        }
        if (bytes) {
          // Whitespace between two encoded words is not part of the text (RFC 2047 section 6.2).
          if (!last_was_word) out += pending_space;
          pending_space.clear();
          out += toUtf8(*bytes, charset);
          last_was_word = true;
          i = end + 2;
          continue;
        }
      }
    }
    char c = value[i];
    if (c == ' ' || c == '\t') {
      pending_space += c;
      ++i;
      continue;
    }
    out += pending_space;
    pending_space.clear();
    std::size_t start = i;
    while (i < value.size() && value[i] != ' ' && value[i] != '\t' &&
           value.compare(i, 2, "=?") != 0) {
      ++i;
    }
    if (i == start) ++i;
    out += headerText(value.substr(start, i - start));
    last_was_word = false;
  }
  out += pending_space;
  // A decoded word may carry CR, LF or NUL; a subject or name is one line of text.
  for (char& c : out) {
    if (c == '\r' || c == '\n' || c == '\0') c = ' ';
  }
  return out;
}

std::vector<Mailbox> parseAddressList(std::string_view value) {
  std::vector<Mailbox> out;
  std::string phrase, address;
  bool in_angle = false, have_angle = false;
  auto flush = [&] {
    std::string candidate = have_angle ? address : phrase;
    std::string name = have_angle ? phrase : std::string();
    std::string_view a = trim(candidate);
    std::size_t at = a.rfind('@');
    if (at != std::string_view::npos && at > 0 && at + 1 < a.size()) {
      Mailbox m;
      std::string local(a.substr(0, at));
      local.erase(
          std::remove_if(local.begin(), local.end(), [](char c) { return c == ' ' || c == '\t'; }),
          local.end());
      m.address = local + "@" + lower(a.substr(at + 1));
      m.name = decodeHeaderWords(trim(name));
      out.push_back(std::move(m));
    }
    phrase.clear();
    address.clear();
    in_angle = have_angle = false;
  };
  for (std::size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (c == '"') {  // quoted string: copied without the quotes
      std::string& target = in_angle ? address : phrase;
      if (in_angle) target += c;
      for (++i; i < value.size() && value[i] != '"'; ++i) {
        if (value[i] == '\\' && i + 1 < value.size()) ++i;
        target += value[i];
      }
      if (in_angle) target += '"';
    } else if (c == '(') {  // comment, possibly nested: skipped
      int level = 1;
      for (++i; i < value.size() && level > 0; ++i) {
        if (value[i] == '\\') {
          ++i;
        } else if (value[i] == '(') {
          ++level;
        } else if (value[i] == ')') {
          --level;
        }
      }
      --i;
    } else if (c == '<') {
      in_angle = have_angle = true;
      address.clear();
    } else if (c == '>') {
      in_angle = false;
    } else if (c == ',' && !in_angle) {
      flush();
    } else if (c == ':' && !in_angle) {  // group name: what came before is not an address
      phrase.clear();
    } else if (c == ';' && !in_angle) {
      flush();
    } else {
      (in_angle ? address : phrase) += c;
    }
  }
  flush();
  return out;
}

std::vector<std::string> parseMessageIds(std::string_view value) {
  std::vector<std::string> ids;
  std::size_t pos = 0;
  while ((pos = value.find('<', pos)) != std::string_view::npos) {
    std::size_t end = value.find('>', pos);
    if (end == std::string_view::npos) break;
    std::string_view id = value.substr(pos, end - pos + 1);
    if (id.size() > 2 && id.size() <= 998 && id.find_first_of(" \t\r\n<", 1) == std::string::npos)
      ids.emplace_back(id);
    pos = end + 1;
  }
  return ids;
}

std::string authorAddress(const std::vector<std::pair<std::string, std::string>>& headers) {
  const std::string* from = nullptr;
  for (const auto& [name, value] : headers) {
    if (Poco::icompare(name, "from") != 0) continue;
    if (from) return "";  // two From fields: whose would it be?
    from = &value;
  }
  if (!from) return "";
  const auto boxes = parseAddressList(*from);
  return boxes.size() == 1 ? boxes.front().address : "";
}

}  // namespace svc::plugins::email
