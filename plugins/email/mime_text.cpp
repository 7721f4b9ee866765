#include "mime_text.h"

#include "mime.h"

#include <svc/sdk/util.h>

#include <iconv.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

namespace svc::plugins::email {

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

// Replaces every byte that does not start or continue a valid sequence with U+FFFD.
std::string repairUtf8(std::string_view s) {
  if (sdk::isValidUtf8(s)) return std::string(s);
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n >= 0 && i + n < s.size() && sdk::isValidUtf8(s.substr(i, n + 1))) {
      out.append(s.substr(i, n + 1));
      i += n + 1;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

namespace {

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

}  // namespace

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

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

std::string decodeBase64Lenient(std::string_view s, bool* bad) {
  // Only the alphabet is kept: the rest is one continuous stream of 6-bit groups, which
  // sdk::base64Decode reads once it is padded to whole groups (a lone sixth bit makes no byte).
  std::string clean;
  clean.reserve(s.size());
  for (char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
        c == '/') {
      clean += c;
    } else if (!(c == '=' || c == '\r' || c == '\n' || c == ' ' || c == '\t') && bad) {
      *bad = true;
    }
  }
  if (clean.size() % 4 == 1) clean.pop_back();
  while (clean.size() % 4) clean += '=';
  return sdk::base64Decode(clean).value_or(std::string());
}

// Header values may be raw 8-bit (RFC 6532 allows UTF-8); anything else is read as Latin-1.
std::string headerText(std::string_view value) {
  if (sdk::isValidUtf8(value)) return std::string(value);
  return latin1ToUtf8(value);
}

std::string toUtf8(std::string_view bytes, std::string_view charset_in) {
  std::string charset = lower(trim(charset_in));
  if (charset.empty() || charset == "us-ascii" || charset == "ascii" || charset == "utf-8" ||
      charset == "utf8") {
    if (sdk::isValidUtf8(bytes)) return std::string(bytes);
    if (charset.empty() || charset == "us-ascii" || charset == "ascii") {
      return latin1ToUtf8(bytes);  // undeclared 8-bit text is most often Latin-1
    }
    return repairUtf8(bytes);
  }
  if (charset == "iso-8859-1" || charset == "latin1") return latin1ToUtf8(bytes);
  if (auto converted = iconvToUtf8(bytes, charset)) return repairUtf8(*converted);
  return repairUtf8(bytes);  // an unknown charset: keep what is readable
}

}  // namespace svc::plugins::email
