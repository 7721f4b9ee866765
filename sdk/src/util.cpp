#include <svc/sdk/util.h>

#include <Poco/Ascii.h>
#include <Poco/DateTimeFormat.h>
#include <Poco/DateTimeParser.h>
#include <Poco/DigestEngine.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <regex>
#include <vector>

namespace svc::sdk {

// OpenSSL's DRBG: random bytes without a system call (Poco's generator opens /dev/urandom for
// each id, which showed up as the largest cost of a request).
std::string newUuid() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw std::runtime_error("RAND_bytes failed");
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 15]);
  }
  return out;
}

bool isUuid(std::string_view text) {
  if (text.size() != 36) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

namespace {
std::atomic<std::int64_t> clock_offset_us{0};
}

std::int64_t nowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count() +
         clock_offset_us.load(std::memory_order_relaxed);
}

void advanceClockForTesting(std::int64_t micros) {
  clock_offset_us.fetch_add(micros);
}

std::string isoTimestamp(std::int64_t micros) {
  std::int64_t secs = micros / 1000000;
  std::int64_t frac = micros % 1000000;
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(frac));
  return buf;
}

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (no overlongs, no surrogates, nothing
// beyond U+10FFFF), with its code point in cp; 0 when the bytes there are not one.
std::size_t utf8Sequence(std::string_view s, std::size_t i, unsigned& cp) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  std::size_t len;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

// C0 and C1 controls, DEL, and the bidirectional overrides and isolates (which can make an echoed
// value read differently from what it is).
bool unsafeToShow(unsigned cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

bool hasControlCharacter(std::string_view text, bool allow_tab) {
  return std::any_of(text.begin(), text.end(), [allow_tab](char c) {
    auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && !(allow_tab && c == '\t')) || u == 0x7f;
  });
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

bool isValidUtf8(std::string_view s) {
  unsigned cp;
  for (std::size_t i = 0, len; i < s.size(); i += len) {
    // Every request body passes here: ASCII, the common case, takes the short way.
    len = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : utf8Sequence(s, i, cp);
    if (len == 0) return false;
  }
  return true;
}

namespace {

std::string replaceUnsafe(std::string_view input, std::size_t max, bool keep_lines) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(std::min(input.size(), 4 * max) + 3);
  std::size_t shown = 0;
  for (std::size_t i = 0; i < input.size(); ++shown) {
    if (shown == max) {
      out += "\xE2\x80\xA6";  // U+2026, the ellipsis: more followed
      break;
    }
    unsigned cp;
    std::size_t len = utf8Sequence(input, i, cp);
    if (len == 0) {
      out += kReplacement;  // one per byte that is not part of a well-formed sequence
      ++i;
    } else {
      if (unsafeToShow(cp) && !(keep_lines && (cp == '\n' || cp == '\t'))) {
        out += kReplacement;
      } else {
        out.append(input.substr(i, len));
      }
      i += len;
    }
  }
  return out;
}

}  // namespace

std::string quoteForDetail(std::string_view input, std::size_t max) {
  return replaceUnsafe(input, max, false);
}

std::string safeForTerminal(std::string_view input) {
  return replaceUnsafe(input, std::string_view::npos, true);
}

std::string truncateUtf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t end = max_bytes;
  // Back over continuation bytes (10xxxxxx) to the start of the character cut in two.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

namespace {

// Padded base64 on one line, by OpenSSL's block encoder: a stream encoder costs microseconds of
// set-up a call, and the spool's records encode several strings a message.
std::string encodeBase64(std::string_view bytes) {
  // In pieces a multiple of 3 long (so only the last is padded): EVP_EncodeBlock counts in int.
  constexpr std::size_t kPiece = 3u << 20;
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  std::size_t written = 0;
  for (std::size_t at = 0; at < bytes.size(); at += kPiece) {
    const std::size_t n = std::min(kPiece, bytes.size() - at);
    written += static_cast<std::size_t>(EVP_EncodeBlock(
        reinterpret_cast<unsigned char*>(out.data() + written),
        reinterpret_cast<const unsigned char*>(bytes.data() + at), static_cast<int>(n)));
  }
  out.resize(written);
  return out;
}

}  // namespace

std::string base64url(std::string_view bytes) {
  std::string out = encodeBase64(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

std::optional<std::string> base64urlDecode(std::string_view text) {
  std::string padded;
  padded.reserve(text.size() + 3);
  for (char c : text) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (c == '=') break;
    if (!ok) return std::nullopt;
    padded.push_back(c == '-' ? '+' : c == '_' ? '/' : c);
  }
  if (padded.size() % 4 == 1) return std::nullopt;
  while (padded.size() % 4) padded.push_back('=');
  return base64Decode(padded);
}

std::string base64(std::string_view bytes) {
  return encodeBase64(bytes);
}

std::optional<std::string> base64Decode(std::string_view text) {
  // White space is skipped; only whole groups of four are base64, with '=' only as the padding
  // at the end. OpenSSL's block decoder (no stream: DKIM decodes a signature per message).
  std::string clean;
  clean.reserve(text.size());
  for (char c : text) {
    if (!(c == ' ' || c == '\t' || c == '\r' || c == '\n')) clean += c;
  }
  if (clean.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  while (pad < 2 && pad < clean.size() && clean[clean.size() - 1 - pad] == '=') ++pad;
  const auto alphabet = [](char c) {
    return Poco::Ascii::isAlphaNumeric(c) || c == '+' || c == '/';
  };
  if (!std::all_of(clean.begin(), clean.end() - static_cast<std::ptrdiff_t>(pad), alphabet)) {
    return std::nullopt;  // OpenSSL's decoder would end quietly at some of these
  }
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0 || static_cast<std::size_t>(n) < pad) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

std::string hexEncode(std::string_view bytes) {
  std::vector<unsigned char> digest(bytes.begin(), bytes.end());
  return Poco::DigestEngine::digestToHex(digest);
}

std::string sha256Hex(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return hexEncode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

bool constantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string randomToken(std::size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return base64url(raw);
}

std::string privateFileProblem(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::string("cannot be examined: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (st.st_uid != ::geteuid()) return "belongs to another user than svcd's";
  if ((st.st_mode & 077) != 0) return "other users may read it; make it mode 0600 (chmod 600)";
  return "";
}

}  // namespace svc::sdk
