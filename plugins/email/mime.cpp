#include "mime.h"

#include <Poco/DateTime.h>
#include <Poco/DateTimeFormat.h>
#include <Poco/DateTimeFormatter.h>
#include <Poco/String.h>
#include <Poco/Timestamp.h>

#include <iconv.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace svc::plugins::email {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool validUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || (n == 1 && c < 0xC2) || (n == 3 && c > 0xF4)) return false;
    if (i + static_cast<std::size_t>(n) >= s.size() && n > 0) return false;
    std::uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

// Replaces every byte that does not start or continue a valid sequence with U+FFFD.
std::string repairUtf8(std::string_view s) {
  if (validUtf8(s)) return std::string(s);
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n >= 0 && i + n < s.size() && validUtf8(s.substr(i, n + 1))) {
      out.append(s.substr(i, n + 1));
      i += n + 1;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string latin1ToUtf8(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

std::optional<std::string> iconvToUtf8(std::string_view bytes, const std::string& charset) {
  iconv_t cd = iconv_open("UTF-8", charset.c_str());
  if (cd == reinterpret_cast<iconv_t>(-1)) return std::nullopt;
  std::string out;
  out.resize(bytes.size() * 4 + 16);
  char* in = const_cast<char*>(bytes.data());
  std::size_t in_left = bytes.size();
  char* dst = out.data();
  std::size_t out_left = out.size();
  while (in_left > 0) {
    std::size_t r = iconv(cd, &in, &in_left, &dst, &out_left);
    if (r != static_cast<std::size_t>(-1)) break;
    if (errno == E2BIG) {
      std::size_t used = out.size() - out_left;
      out.resize(out.size() * 2);
      dst = out.data() + used;
      out_left = out.size() - used;
    } else {  // EILSEQ / EINVAL: one bad byte becomes U+FFFD, then go on
      if (out_left < 3) {
        std::size_t used = out.size() - out_left;
        out.resize(out.size() * 2);
        dst = out.data() + used;
        out_left = out.size() - used;
      }
      std::memcpy(dst, "\xEF\xBF\xBD", 3);
      dst += 3;
      out_left -= 3;
      ++in;
      --in_left;
    }
  }
  out.resize(out.size() - out_left);
  iconv_close(cd);
  return out;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Quoted-printable (RFC 2045 section 6.7); in_header: `_` is a space (RFC 2047 Q).
std::string decodeQuotedPrintable(std::string_view s, bool in_header) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '=') {
      if (i + 1 < s.size() && s[i + 1] == '\n') {  // soft break (LF)
        i += 1;
        continue;
      }
      if (i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') {  // soft break
        i += 2;
        continue;
      }
      if (i + 2 < s.size() && hexValue(s[i + 1]) >= 0 && hexValue(s[i + 2]) >= 0) {
        out += static_cast<char>(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2]));
        i += 2;
        continue;
      }
      // Soft break followed by trailing spaces, or a stray '=': keep it as it is.
      std::size_t j = i + 1;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j < s.size() && (s[j] == '\r' || s[j] == '\n')) {
        i = (s[j] == '\r' && j + 1 < s.size() && s[j + 1] == '\n') ? j + 1 : j;
        continue;
      }
      out += c;
    } else if (in_header && c == '_') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// Base64 that skips whitespace; other foreign characters are skipped and reported.
std::string decodeBase64(std::string_view s, bool* bad) {
  std::string out;
  out.reserve(s.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=' || c == '\r' || c == '\n' || c == ' ' || c == '\t') {
      continue;
    } else {
      if (bad) *bad = true;
      continue;
    }
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// A header's value split into the main token and its `; name=value` parameters (RFC 2045),
// with RFC 2231 `name*=charset''percent-encoded` and continuations `name*0*=` joined.
struct HeaderParams {
  std::string value;
  std::vector<std::pair<std::string, std::string>> params;
  std::string get(const std::string& name) const {
    for (const auto& [k, v] : params) {
      if (k == name) return v;
    }
    return {};
  }
};

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

struct Part {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view raw;  // the whole part, headers and body: a view into the message
  std::string_view body;
  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers) {
      if (Poco::icompare(k, name) == 0) return v;
    }
    return {};
  }
};

// Splits at the first empty line; unfolds headers. Header lines without a colon are skipped.
Part splitPart(std::string_view raw, std::size_t max_headers, std::vector<std::string>& problems) {
  Part part;
  part.raw = raw;
  std::size_t pos = 0;
  std::string current;
  auto flush = [&] {
    if (current.empty()) return;
    std::size_t colon = current.find(':');
    if (colon == std::string::npos || colon == 0) {
      problems.push_back("a header line without a name was skipped");
    } else if (part.headers.size() < max_headers) {
      std::string name(trim(std::string_view(current).substr(0, colon)));
      std::string value(trim(std::string_view(current).substr(colon + 1)));
      part.headers.emplace_back(std::move(name), std::move(value));
    }
    current.clear();
  };
  while (pos < raw.size()) {
    std::size_t eol = raw.find('\n', pos);
    std::string_view line =
        raw.substr(pos, eol == std::string_view::npos ? raw.size() - pos : eol - pos);
    std::size_t next = eol == std::string_view::npos ? raw.size() : eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      flush();
      part.body = raw.substr(next);
      return part;
    }
    if ((line[0] == ' ' || line[0] == '\t') && !current.empty()) {
      current += ' ';
      current += trim(line);
    } else {
      flush();
      current = std::string(line);
    }
    pos = next;
  }
  flush();
  part.body = std::string_view();
  return part;
}

std::string extensionFor(const std::string& type) {
  if (type == "text/plain") return ".txt";
  if (type == "text/html") return ".html";
  if (type == "image/png") return ".png";
  if (type == "image/jpeg") return ".jpg";
  if (type == "application/pdf") return ".pdf";
  if (type == "message/rfc822") return ".eml";
  return ".bin";
}

std::string safeFilename(std::string name) {
  name = repairUtf8(name);
  // Path separators and control characters have no place in a file name a client will save.
  std::string out;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') {
      out += '_';
    } else {
      out += static_cast<char>(c);
    }
  }
  std::string_view t = trim(out);
  if (t == "." || t == "..") return "_";
  // At most 255 bytes, cut before a character, never inside one.
  std::size_t cut = std::min<std::size_t>(t.size(), 255);
  while (cut < t.size() && cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
  return std::string(trim(t.substr(0, cut)));  // the cut may leave spaces at the end
}

class Parser {
 public:
  Parser(ParsedMessage& msg, const MimeLimits& limits, std::string_view message)
      : msg_(msg), limits_(limits), message_(message) {}

  void walk(const Part& part, int depth, const std::string& default_type) {
    if (truncated_) return;
    if (++parts_ > limits_.max_parts) {
      keepRemainder(part);
      return;
    }
    HeaderParams ct = parseParams(part.header("Content-Type"));
    std::string type =
        ct.value.empty() || ct.value.find('/') == std::string::npos ? default_type : ct.value;
    if (type.rfind("multipart/", 0) == 0) {
      std::string boundary = ct.get("boundary");
      if (boundary.empty() || boundary.size() > 200) {
        msg_.problems.push_back("a multipart without a usable boundary was read as text");
        leaf(part, "text/plain", ct);
        return;
      }
      if (depth >= limits_.max_depth) {
        msg_.problems.push_back("multiparts nested too deep were kept as an attachment");
        keepAttachment(part, "application/octet-stream", "nested-parts.bin",
                       std::string(part.body));
        return;
      }
      std::string child_default = type == "multipart/digest" ? "message/rfc822" : "text/plain";
      auto children = splitMultipart(part.body, boundary);
      if (children.empty()) {
        msg_.problems.push_back("a multipart without parts was read as text");
        leaf(part, "text/plain", ct);
        return;
      }
      for (std::string_view child : children) {
        if (truncated_) return;  // the rest is in truncated-parts already
        walk(splitPart(child, limits_.max_headers, msg_.problems), depth + 1, child_default);
      }
      return;
    }
    leaf(part, type, ct);
  }

 private:
  std::vector<std::string_view> splitMultipart(std::string_view body, const std::string& boundary) {
    std::vector<std::string_view> parts;
    const std::string dash = "--" + boundary;
    std::size_t pos = 0;
    std::optional<std::size_t> start;
    bool closed = false;
    while (pos <= body.size()) {
      std::size_t eol = body.find('\n', pos);
      std::size_t line_end = eol == std::string_view::npos ? body.size() : eol;
      std::string_view line = body.substr(pos, line_end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.size() >= dash.size() && line.compare(0, dash.size(), dash) == 0) {
        std::string_view rest = trim(line.substr(dash.size()));
        if (rest.empty() || rest == "--") {
          if (start) {
            // The part ends before the line break that precedes the boundary line.
            std::size_t end = pos;
            if (end > *start && body[end - 1] == '\n') --end;
            if (end > *start && body[end - 1] == '\r') --end;
            parts.push_back(body.substr(*start, end - *start));
          }
          if (rest == "--") {
            closed = true;
            break;
          }
          start = eol == std::string_view::npos ? body.size() : eol + 1;
        }
      }
      if (eol == std::string_view::npos) break;
      pos = eol + 1;
    }
    if (!closed) {
      if (start && *start < body.size()) parts.push_back(body.substr(*start));
      msg_.problems.push_back("a multipart was not closed");
    }
    return parts;
  }

  std::string decodeBody(const Part& part) {
    std::string cte = lower(trim(part.header("Content-Transfer-Encoding")));
    if (cte == "base64") {
      bool bad = false;
      std::string out = decodeBase64(part.body, &bad);
      if (bad) msg_.problems.push_back("invalid characters in base64 were skipped");
      return out;
    }
    if (cte == "quoted-printable") return decodeQuotedPrintable(part.body, false);
    return std::string(part.body);
  }

  void leaf(const Part& part, const std::string& type, const HeaderParams& ct) {
    HeaderParams disposition = parseParams(part.header("Content-Disposition"));
    std::string filename = disposition.get("filename");
    if (filename.empty()) filename = ct.get("name");
    filename = decodeHeaderWords(filename);
    bool attachment = disposition.value == "attachment" || !filename.empty();
    std::string data = decodeBody(part);
    if (!attachment && (type == "text/plain" || type == "text/html")) {
      std::string text = toUtf8(data, ct.get("charset"));
      std::string& slot = type == "text/plain" ? msg_.text : msg_.html;
      if (slot.empty()) {
        slot = std::move(text);
        return;
      }
    }
    if (filename.empty())
      filename = "attachment-" + std::to_string(msg_.attachments.size() + 1) + extensionFor(type);
    keepAttachment(part, type, filename, std::move(data));
  }

  void keepAttachment(const Part&, const std::string& type, const std::string& filename,
                      std::string data) {
    ParsedAttachment a;
    a.filename = safeFilename(filename);
    if (a.filename.empty()) a.filename = "attachment" + extensionFor(type);
    a.content_type = type.size() > 127 ? "application/octet-stream" : type;
    a.data = std::move(data);
    msg_.attachments.push_back(std::move(a));
  }

  // Parts beyond the limit are not read, but they were received: everything from the first of
  // them to the end of the message is kept, unparsed, as one attachment. The parts are views into
  // the message in document order, so that remainder is also every later sibling of every
  // enclosing multipart; the walk stops there.
  void keepRemainder(const Part& first_unread) {
    truncated_ = true;
    std::string_view rest = first_unread.raw;
    const char* begin = message_.data();
    const char* at = first_unread.raw.data();
    if (at >= begin && at <= begin + message_.size()) rest = message_.substr(at - begin);
    msg_.problems.push_back("more than " + std::to_string(limits_.max_parts) +
                            " MIME parts: the rest is kept unread as truncated-parts");
    ParsedAttachment a;
    a.filename = "truncated-parts";
    a.content_type = "application/octet-stream";
    a.data = std::string(rest);
    msg_.attachments.push_back(std::move(a));
  }

  ParsedMessage& msg_;
  const MimeLimits& limits_;
  std::string_view message_;
  int parts_ = 0;
  bool truncated_ = false;
};

// Header values may be raw 8-bit (RFC 6532 allows UTF-8); anything else is read as Latin-1.
std::string headerText(std::string_view value) {
  if (validUtf8(value)) return std::string(value);
  return latin1ToUtf8(value);
}

}  // namespace

std::string toUtf8(std::string_view bytes, std::string_view charset_in) {
  std::string charset = lower(trim(charset_in));
  if (charset.empty() || charset == "us-ascii" || charset == "ascii" || charset == "utf-8" ||
      charset == "utf8") {
    if (validUtf8(bytes)) return std::string(bytes);
    if (charset.empty() || charset == "us-ascii" || charset == "ascii") {
      return latin1ToUtf8(bytes);  // undeclared 8-bit text is most often Latin-1
    }
    return repairUtf8(bytes);
  }
  if (charset == "iso-8859-1" || charset == "latin1") return latin1ToUtf8(bytes);
  if (auto converted = iconvToUtf8(bytes, charset)) return repairUtf8(*converted);
  return repairUtf8(bytes);  // an unknown charset: keep what is readable
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
          bytes = decodeBase64(text, nullptr);
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

bool isValidDomain(std::string_view domain) {
  if (domain.empty() || domain.size() > 253) return false;
  int labels = 0;
  std::size_t start = 0;
  while (start <= domain.size()) {
    std::size_t dot = domain.find('.', start);
    std::string_view label =
        domain.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    ++labels;
    if (dot == std::string_view::npos) {
      // The top-level label is not all digits (that would be an IP address).
      if (std::all_of(label.begin(), label.end(),
                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return false;
      break;
    }
    start = dot + 1;
  }
  return labels >= 2;
}

bool isDotAtomLocalPart(std::string_view local) {
  if (local.empty() || local.size() > 64) return false;
  if (local.front() == '.' || local.back() == '.' || local.find("..") != std::string_view::npos)
    return false;
  static const std::string atext = "!#$%&'*+-/=?^_`{|}~.";
  for (char c : local) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && atext.find(c) == std::string::npos)
      return false;
  }
  return true;
}

bool isValidAddress(std::string_view address) {
  if (address.size() > 254) return false;
  std::size_t at = address.rfind('@');
  if (at == std::string_view::npos) return false;
  return isDotAtomLocalPart(address.substr(0, at)) && isValidDomain(address.substr(at + 1));
}

std::string htmlToText(std::string_view html) {
  std::string out;
  out.reserve(html.size());
  std::size_t i = 0;
  auto startsWithTag = [&](std::size_t at, const char* tag) {
    std::size_t n = std::strlen(tag);
    return html.size() - at >= n && Poco::icompare(std::string(html.substr(at, n)), tag) == 0;
  };
  while (i < html.size()) {
    char c = html[i];
    if (c == '<') {
      // Script and style content is not text.
      for (const char* block : {"<script", "<style"}) {
        if (startsWithTag(i, block)) {
          // Searched in place, case-insensitively: copying and lowering the rest of the page at
          // every <script made a page of them cost quadratic time (5.8 s for 272 KB).
          const std::string close = std::string("</") + (block + 1);
          auto end = std::search(
              html.begin() + static_cast<std::ptrdiff_t>(i), html.end(), close.begin(), close.end(),
              [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
          i = static_cast<std::size_t>(end - html.begin());
          break;
        }
      }
      if (i >= html.size()) break;
      bool breaks = startsWithTag(i, "<br") || startsWithTag(i, "<p") || startsWithTag(i, "</p") ||
                    startsWithTag(i, "<div") || startsWithTag(i, "</div") ||
                    startsWithTag(i, "<tr") || startsWithTag(i, "<li");
      std::size_t end = html.find('>', i);
      i = end == std::string_view::npos ? html.size() : end + 1;
      if (breaks && !out.empty() && out.back() != '\n') out += '\n';
      continue;
    }
    if (c == '&') {
      static const std::pair<const char*, const char*> entities[] = {
          {"&amp;", "&"}, {"&lt;", "<"},   {"&gt;", ">"},  {"&quot;", "\""},
          {"&#39;", "'"}, {"&nbsp;", " "}, {"&apos;", "'"}};
      bool done = false;
      for (const auto& [name, text] : entities) {
        if (startsWithTag(i, name)) {
          out += text;
          i += std::strlen(name);
          done = true;
          break;
        }
      }
      if (done) continue;
    }
    if (c == '\r') {
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  // Collapse runs of blank space left by markup.
  std::string collapsed;
  int newlines = 0;
  bool space = false;
  for (char c : out) {
    if (c == '\n') {
      if (++newlines <= 2) collapsed += '\n';
      space = false;
    } else if (c == ' ' || c == '\t') {
      space = true;
    } else {
      if (space && !collapsed.empty() && collapsed.back() != '\n') collapsed += ' ';
      space = false;
      newlines = 0;
      collapsed += c;
    }
  }
  return std::string(trim(collapsed));
}

ParsedMessage parseMessage(std::string_view raw, const MimeLimits& limits) {
  ParsedMessage msg;
  Part top = splitPart(raw, limits.max_headers, msg.problems);
  for (const auto& [name, value] : top.headers) msg.headers.emplace_back(name, headerText(value));
  msg.from = parseAddressList(top.header("From"));
  msg.to = parseAddressList(top.header("To"));
  msg.cc = parseAddressList(top.header("Cc"));
  msg.reply_to = parseAddressList(top.header("Reply-To"));
  msg.subject = decodeHeaderWords(top.header("Subject"));
  auto ids = parseMessageIds(top.header("Message-ID"));
  if (!ids.empty()) msg.message_id = ids.front();
  ids = parseMessageIds(top.header("In-Reply-To"));
  if (!ids.empty()) msg.in_reply_to = ids.front();
  msg.references = parseMessageIds(top.header("References"));
  Parser parser(msg, limits, raw);
  parser.walk(top, 0, "text/plain");
  if (msg.text.empty() && !msg.html.empty()) msg.text = htmlToText(msg.html);
  return msg;
}

namespace {

std::string base64Encode(std::string_view in) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size())
      n |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += i + 1 < in.size() ? table[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? table[n & 63] : '=';
  }
  return out;
}

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
    out += "=?UTF-8?B?" + base64Encode(text.substr(i, n)) + "?=";
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
  static const char* hex = "0123456789ABCDEF";
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
      put(std::string{'=', hex[c >> 4], hex[c & 15]});
    }
  }
  return out;
}

std::string base64Lines(std::string_view data) {
  const std::string flat = base64Encode(data);
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
