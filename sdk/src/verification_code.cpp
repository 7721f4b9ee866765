#include <svc/sdk/verification_code.h>

#include "verification_words.h"

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <string_view>
#include <vector>

// One pass splits the text into tokens (runs of letters and digits; URLs and e-mail addresses
// left out), a second marks the words that name a code, a third groups adjacent numbers (so a
// date, a phone number or a price is seen whole) and scores what could be a code. See the header
// for the rules; the corpus in tests/unit/sdk/verification_codes.txt is what they were tuned on.

namespace svc::sdk {

namespace {

using namespace code_words;

enum class Kind { kWord, kDigits, kAlnum };

struct Token {
  std::size_t begin = 0, end = 0;  // bytes of the text
  Kind kind = Kind::kWord;
  std::string lower;  // ASCII, Latin-1 and Cyrillic letters lowered
  bool all_upper = false;
  int line = 0;
  bool keyword = false;
};

// The code point at s[i] and its length; a byte that starts no well-formed sequence is U+FFFD.
std::size_t decode(std::string_view s, std::size_t i, unsigned& cp) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (len == 0 || i + len > s.size()) {
    cp = 0xFFFD;
    return 1;
  }
  cp = len == 1 ? c : c & (0xFF >> (len + 1));
  for (std::size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) {
      cp = 0xFFFD;
      return 1;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  return len;
}

void appendUtf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

enum Class { kSeparator, kDigit, kAsciiLetter, kOtherLetter };

// Letters of any script count as letters; Latin-1 symbols (NBSP, currency, quotes), general
// punctuation, currency and other symbols, CJK and full-width punctuation and emoji separate.
Class classOf(unsigned cp) {
  if (cp < 0x80) {
    if (cp >= '0' && cp <= '9') return kDigit;
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return kAsciiLetter;
    return kSeparator;
  }
  if (cp <= 0xBF || cp == 0xD7 || cp == 0xF7 || (cp >= 0x2000 && cp <= 0x2BFF) ||
      (cp >= 0x3000 && cp <= 0x303F) || (cp >= 0xFE00 && cp <= 0xFE4F) ||
      (cp >= 0xFF00 && cp <= 0xFF0F) || (cp >= 0xFF1A && cp <= 0xFF20) ||
      (cp >= 0xFF3B && cp <= 0xFF40) || (cp >= 0xFF5B && cp <= 0xFF65) || cp == 0xFFFD ||
      cp >= 0x1F000) {
    return kSeparator;
  }
  return kOtherLetter;
}

unsigned lowerOf(unsigned cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 0x20;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20;  // Latin-1
  if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;              // Cyrillic А-Я
  if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50;              // Ѐ-Џ
  return cp;
}

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// A whitespace-delimited chunk that is a URL (with a scheme, www., or host.tld/path) or holds an
// e-mail address (or an Apple-style `@domain` line): its tokens are neither codes nor keywords.
bool isLinkOrAddress(std::string_view chunk) {
  if (chunk.find('@') != std::string_view::npos) return true;
  if (chunk.find("://") != std::string_view::npos) return true;
  std::string lower;
  for (char c : chunk.substr(0, 4))
    lower += static_cast<char>(lowerOf(static_cast<unsigned char>(c)));
  if (lower == "www.") return true;
  const std::size_t slash = chunk.find('/');
  if (slash == std::string_view::npos) return false;
  const std::size_t dot = chunk.substr(0, slash).rfind('.');
  return dot != std::string_view::npos && dot + 1 < slash &&
         classOf(static_cast<unsigned char>(chunk[dot + 1])) == kAsciiLetter;
}

std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  int line = 0;
  while (i < text.size()) {
    // One whitespace-delimited chunk at a time.
    while (i < text.size() && isSpace(text[i])) {
      if (text[i] == '\n') ++line;
      ++i;
    }
    std::size_t chunk_end = i;
    while (chunk_end < text.size() && !isSpace(text[chunk_end])) ++chunk_end;
    if (isLinkOrAddress(text.substr(i, chunk_end - i))) {
      i = chunk_end;
      continue;
    }
    while (i < chunk_end) {
      unsigned cp;
      std::size_t len = decode(text, i, cp);
      Class cls = classOf(cp);
      if (cls == kSeparator) {
        i += len;
        continue;
      }
      Token t;
      t.begin = i;
      t.line = line;
      bool digit = false, ascii = false, other = false, lower = false;
      Class previous = kSeparator;
      while (i < chunk_end) {
        len = decode(text, i, cp);
        cls = classOf(cp);
        if (cls == kSeparator) break;
        // Scripts written without spaces put digits right beside words: split them there.
        if ((previous == kDigit && cls == kOtherLetter) ||
            (previous == kOtherLetter && cls == kDigit)) {
          break;
        }
        digit |= cls == kDigit;
        ascii |= cls == kAsciiLetter;
        other |= cls == kOtherLetter;
        lower |= cp >= 'a' && cp <= 'z';
        appendUtf8(t.lower, lowerOf(cp));
        previous = cls;
        i += len;
      }
      t.end = i;
      t.kind = other || !digit ? Kind::kWord : ascii ? Kind::kAlnum : Kind::kDigits;
      t.all_upper = ascii && !lower;
      tokens.push_back(std::move(t));
    }
  }
  return tokens;
}

// The words that name a one-time code (see the header for the languages), by how they are
// matched. namesCode() reads them; mayNameCode() rules most words out from the same lists.
constexpr std::string_view kCodeEndings[] = {"code", "codes", "codice", "codici"};
constexpr std::string_view kCodeStems[] = {"código", "codigo", "kod", "kód", "код"};
constexpr std::string_view kCodeWords[] = {
    "koodi",  "tan",     "pin",     "pins",     "totp", "2fa",   "mfa", "mtan",
    "smstan", "pushtan", "chiptan", "phototan", "itan", "passe", "time"};  // time: one-time
constexpr std::string_view kCodePrefixes[] = {
    "otp",      "verif",    "vérif",      "authent",   "autent",     "password",
    "passwort", "kennwort", "wachtwoord", "senha",     "contraseña", "contrasena",
    "clave",    "einmal",   "hasło",      "doğrulama", "пароль"};
constexpr std::string_view kCodeInWords[] = {"码",   "碼",   "認証", "コード",
                                             "인증", "验证", "驗證", "暗証"};

template <std::size_t N>
bool anyEndsWith(std::string_view w, const std::string_view (&list)[N]) {
  return std::any_of(std::begin(list), std::end(list),
                     [&](std::string_view e) { return endsWith(w, e); });
}
template <std::size_t N>
bool anyStartsWith(std::string_view w, const std::string_view (&list)[N]) {
  return std::any_of(std::begin(list), std::end(list),
                     [&](std::string_view p) { return startsWith(w, p); });
}
template <std::size_t N>
bool anyIs(std::string_view w, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), w) != std::end(list);
}

// False only for a word namesCode() is sure to refuse, at the cost of a few byte compares: most
// words of a message. Every word it looks for is 3 bytes or more; those matched from their start
// are known by their first two bytes (a bitmap built from the lists), the endings are few, and a
// word with a byte past ASCII (where the CJK words can sit anywhere) is looked at in full.
bool mayNameCode(std::string_view w) {
  static const std::vector<bool> first_two = [] {
    std::vector<bool> bits(1 << 16);
    auto add = [&](std::string_view k) {
      bits[static_cast<unsigned char>(k[0]) << 8 | static_cast<unsigned char>(k[1])] = true;
    };
    for (auto k : kCodeStems) add(k);
    for (auto k : kCodeWords) add(k);
    for (auto k : kCodePrefixes) add(k);
    return bits;
  }();
  if (w.size() < 3) return false;
  if (first_two[static_cast<unsigned char>(w[0]) << 8 | static_cast<unsigned char>(w[1])]) {
    return true;
  }
  if (anyEndsWith(w, kCodeEndings)) return true;
  return std::any_of(w.begin(), w.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

// Whether tokens[i] names a one-time code.
bool namesCode(const std::vector<Token>& tokens, std::size_t i) {
  const std::string& w = tokens[i].lower;
  if (!mayNameCode(w)) return false;
  const std::string_view previous = i > 0 ? std::string_view(tokens[i - 1].lower) : "";
  auto next = [&](std::size_t k) {
    // The k-th word after w, past the little words that join "code" to what kind it is.
    std::size_t j = i + 1;
    while (j < tokens.size() && oneOf(tokens[j].lower, {"de", "of", "di", "du", "da", "do"})) ++j;
    j += k;
    return j < tokens.size() ? std::string_view(tokens[j].lower) : std::string_view();
  };
  if (anyEndsWith(w, kCodeEndings) || anyStartsWith(w, kCodeStems) || w == "koodi") {
    if ((endsWith(w, "code") || endsWith(w, "codes")) && isOtherCodeCompound(w)) return false;
    return !namesOtherCodeBefore(previous) && !namesOtherCodeAfter(next(0));
  }
  if (w == "tan") return tokens[i].all_upper;  // the German banks' TAN, not the colour
  if (w == "time") return previous == "one";   // one-time, one time
  if (anyIs(w, kCodeWords)) return true;
  if (anyStartsWith(w, kCodePrefixes)) return true;
  return std::any_of(std::begin(kCodeInWords), std::end(kCodeInWords),
                     [&](std::string_view k) { return w.find(k) != std::string::npos; });
}

std::string_view withoutOneSpace(std::string_view s, bool at_end) {
  for (std::string_view space : {" ", "\xc2\xa0"}) {
    if (at_end && endsWith(s, space)) return s.substr(0, s.size() - space.size());
    if (!at_end && startsWith(s, space)) return s.substr(space.size());
  }
  return s;
}

// Whether text[from, to) holds no letter or digit (only spaces and punctuation).
bool onlyPunctuation(std::string_view text, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to;) {
    unsigned cp;
    i += decode(text, i, cp);
    if (classOf(cp) != kSeparator) return false;
  }
  return true;
}

struct Candidate {
  std::string value;
  std::size_t first = 0, last = 0;  // token indices
  bool digits = true, joined = false;
};

// A run of letters and digits that reads as a random code, not a word with a number (SAVE20,
// COVID19, 1080p, 14h30) or a masked number (XX1234).
bool looksRandom(std::string_view s) {
  int letters = 0, digits = 0, run = 0, longest_run = 0, changes = 0;
  bool upper = false, lower = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool digit = s[i] >= '0' && s[i] <= '9';
    digits += digit;
    letters += !digit;
    upper |= s[i] >= 'A' && s[i] <= 'Z';
    lower |= s[i] >= 'a' && s[i] <= 'z';
    run = digit ? 0 : run + 1;
    longest_run = std::max(longest_run, run);
    if (i > 0 && digit != (s[i - 1] >= '0' && s[i - 1] <= '9')) ++changes;
  }
  if (letters < 2 || digits < 2 || (upper && lower) || longest_run >= 4) return false;
  if ((s[0] == 'x' || s[0] == 'X') && (s[1] == 'x' || s[1] == 'X')) return false;
  return changes >= 2;
}

std::vector<Candidate> candidates(std::string_view text, const std::vector<Token>& tokens) {
  std::vector<Candidate> out;
  auto gap = [&](std::size_t a) {  // between tokens a and a + 1
    return text.substr(tokens[a].end, tokens[a + 1].begin - tokens[a].end);
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind == Kind::kWord) continue;
    // The group of numbers written together: 482 913, 2026-11-25, 1.234,56, (555) 010-0199.
    std::size_t j = i;
    bool all_digits = tokens[i].kind == Kind::kDigits;
    while (j + 1 < tokens.size() && tokens[j + 1].kind != Kind::kWord) {
      const bool digits = all_digits && tokens[j + 1].kind == Kind::kDigits;
      const std::string_view g = gap(j);
      const bool joins = oneOf(g, {"-", ".", ",", "/", ":", "'"}) ||
                         (digits && oneOf(g, {" ", "\xc2\xa0", ") ", ")-"}));
      if (!joins) break;
      all_digits = digits;
      ++j;
    }
    const std::size_t first = i;
    i = j;
    std::string value;
    std::vector<std::size_t> sizes;
    for (std::size_t k = first; k <= j; ++k) {
      value += text.substr(tokens[k].begin, tokens[k].end - tokens[k].begin);
      sizes.push_back(tokens[k].end - tokens[k].begin);
    }
    bool same_gaps = true, same_sizes = true;
    for (std::size_t k = first; k < j; ++k) {
      same_gaps &= gap(k) == gap(first) && oneOf(gap(k), {" ", "-", "\xc2\xa0"});
      same_sizes &= sizes[k - first] == sizes.front() && sizes[k - first + 1] == sizes.front();
    }
    Candidate c{value, first, j, all_digits, j > first};
    if (all_digits) {
      // Groups of 2 to 5 digits (482 913), or single digits a space apart, as mail that draws a
      // box around each digit reads as text (4 8 2 9 1 3).
      const bool grouped = same_gaps && same_sizes &&
                           ((sizes.size() <= 4 && sizes.front() >= 2 && sizes.front() <= 5) ||
                            (sizes.front() == 1 && sizes.size() >= 4 && gap(first) == " "));
      if ((j == first || grouped) && value.size() >= 4 && value.size() <= 10) out.push_back(c);
    } else if (value.size() >= 4 && value.size() <= 10 && looksRandom(value)) {
      const bool grouped = j == first + 1 && gap(first) == "-" && same_sizes && sizes.front() >= 3;
      if (j == first || grouped) out.push_back(c);
    }
  }
  return out;
}

// The score of a candidate: what a code looks like, minus what else it looks like, minus its
// distance to the nearest keyword. nullopt when it is plainly not a code.
std::optional<double> score(std::string_view text, const std::vector<Token>& tokens,
                            const std::vector<std::size_t>& keywords, const Candidate& c) {
  const Token& head = tokens[c.first];
  const Token& tail = tokens[c.last];
  const std::string_view before = text.substr(0, head.begin);
  const std::string_view after = text.substr(tail.end);
  const char b1 = before.empty() ? '\n' : before.back();
  const char a1 = after.empty() ? '\n' : after.front();
  const char a2 = after.size() < 2 ? '\n' : after[1];
  const bool emphasis = b1 == '*' && a1 == '*';  // **482913**

  // Attached to something that makes it another thing.
  if (std::string_view("+/\\_@~^|").find(b1) != std::string_view::npos) return std::nullopt;
  if (b1 == '*' && !emphasis) return std::nullopt;  // ****1234
  if (std::string_view("%/\\_@").find(a1) != std::string_view::npos) return std::nullopt;
  if ((a1 == '.' || a1 == '-') && classOf(static_cast<unsigned char>(a2)) != kSeparator) {
    return std::nullopt;  // 4829.pdf, 482913-abc
  }
  if (b1 == '-' && c.first > 0 && tokens[c.first - 1].end + 1 == head.begin) {
    // Attached by a hyphen: only a short prefix such as Google's G-482913 is allowed.
    const Token& p = tokens[c.first - 1];
    if (!(p.kind == Kind::kWord && p.all_upper && p.end - p.begin <= 2)) return std::nullopt;
  }
  if (endsWithCurrencySymbol(withoutOneSpace(before, true)) ||
      startsWithCurrencySymbol(withoutOneSpace(after, false))) {
    return std::nullopt;
  }
  if (!emphasis) {  // masks: **** 1234, •••• 1234, XXXX 1234
    std::string_view m = withoutOneSpace(before, true);
    if (endsWith(m, "**") || endsWith(m, "•") || endsWith(m, "XX") || endsWith(m, "xx")) {
      return std::nullopt;
    }
  }
  const bool has_previous = c.first > 0 && tokens[c.first - 1].line == head.line;
  const bool has_next = c.last + 1 < tokens.size() && tokens[c.last + 1].line == tail.line;
  if (has_previous && namesCurrency(tokens[c.first - 1].lower) &&
      onlyPunctuation(text, tokens[c.first - 1].end, head.begin)) {
    return std::nullopt;  // EUR 1299, R$ 1299
  }
  if (has_next && namesUnit(tokens[c.last + 1].lower)) return std::nullopt;
  if (c.digits && c.value.size() <= 5) {  // house numbers: 1600 Amphitheatre Parkway
    for (std::size_t k = c.last + 1; k <= c.last + 3 && k < tokens.size(); ++k) {
      if (tokens[k].line != tail.line) break;
      if (namesStreet(tokens[k].lower)) return std::nullopt;
    }
  }

  double s = c.digits ? (c.value.size() == 6                          ? 6
                         : c.value.size() >= 4 && c.value.size() <= 8 ? 5
                                                                      : 3)
                      : 4;
  if (c.joined) s += 1;
  // Alone on its line (tokens are letters and digits): how mail and many SMS show a code.
  const bool alone = !has_previous && !has_next;
  if (alone) s += 3;
  if (c.digits && c.value.size() == 4 && c.value >= "1900" && c.value <= "2099") s -= 5;  // year
  if (b1 == '#') {
    // Apple's domain-bound codes (`@example.com #482913`) are codes; order #482913 is not.
    std::size_t k = before.size() - 1;
    while (k > 0 && before[k - 1] == ' ') --k;
    std::size_t chunk = k;
    while (chunk > 0 && k - chunk < 256 && !isSpace(before[chunk - 1])) --chunk;
    if (!(chunk < k && before[chunk] == '@')) s -= 5;
  }
  // Postal codes: "CA 94107", "10115 Berlin" at the start of a line.
  if (c.digits && !c.joined && (c.value.size() == 4 || c.value.size() == 5)) {
    const bool state = has_previous && tokens[c.first - 1].all_upper &&
                       tokens[c.first - 1].end - tokens[c.first - 1].begin == 2;
    const bool city = has_next && !has_previous && text[tokens[c.last + 1].begin] >= 'A' &&
                      text[tokens[c.last + 1].begin] <= 'Z';
    if (state || city) s -= 4;
  }
  // Named as another number just before it, on its line and nearer than any keyword ("card
  // ending 4821 is 739204": the words name the nearer number).
  for (std::size_t k = c.first, seen = 0; k > 0 && seen < 3; --k, ++seen) {
    const Token& p = tokens[k - 1];
    if (p.keyword || p.line != head.line || p.kind != Kind::kWord) break;
    if (namesOtherNumber(p.lower)) {
      // ... unless the word is part of the keyword's label: "code de confirmation".
      std::size_t q = k - 1;
      while (q > 0 && oneOf(tokens[q - 1].lower, {"de", "of", "du", "da", "do", "di"})) --q;
      if (!(q > 0 && tokens[q - 1].keyword && tokens[q - 1].line == head.line)) s -= 8;
      break;
    }
  }
  const std::string_view label = withoutOneSpace(before, true);
  if (c.first > 0 &&
      (isLinkWord(tokens[c.first - 1].lower) || endsWith(label, ":") || endsWith(label, "："))) {
    s += 1;  // "code is 482913", "Code: 482913"
  }

  std::size_t distance = std::string::npos, nearest = 0;
  for (std::size_t k : keywords) {
    const std::size_t d = k < c.first ? c.first - k : k > c.last ? k - c.last + 1 : 0;
    if (d < distance) distance = d, nearest = k;
  }
  const double d = static_cast<double>(std::min<std::size_t>(distance, 200));
  s -= d <= 3 ? 0 : d <= 20 ? (d - 3) * 0.35 : 5.95 + (d - 20) * 0.05;
  // A code shares its keyword's line, or has a line of its own.
  if (!alone && tokens[nearest].line != head.line) s -= 2;
  return s;
}

}  // namespace

std::optional<std::string> extractVerificationCode(std::string_view subject,
                                                   std::string_view body) {
  std::size_t cut = std::min(body.size(), kVerificationCodeScanBytes);
  while (cut < body.size() && cut > 0 && (static_cast<unsigned char>(body[cut]) & 0xC0) == 0x80) {
    --cut;  // not in the middle of a UTF-8 sequence
  }
  std::string text;
  text.reserve(std::min<std::size_t>(subject.size(), 1024) + 1 + cut);
  text.append(subject.substr(0, 1024));
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';  // an unfolded subject is one line
  }
  text += '\n';
  text.append(body.substr(0, cut));

  std::vector<Token> tokens = tokenize(text);
  std::vector<std::size_t> keywords;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (namesCode(tokens, i)) {
      tokens[i].keyword = true;
      keywords.push_back(i);
    }
  }
  if (keywords.empty()) return std::nullopt;  // most messages stop here

  std::optional<std::string> best;
  double best_score = 2;  // what a candidate must reach
  for (const Candidate& c : candidates(text, tokens)) {
    if (tokens[c.first].keyword) continue;
    auto s = score(text, tokens, keywords, c);
    if (!s || *s < best_score || (best && *s == best_score)) continue;
    best_score = *s;
    best = c.value;
  }
  return best;
}

}  // namespace svc::sdk
