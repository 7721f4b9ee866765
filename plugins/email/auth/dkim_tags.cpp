#include "auth/dkim_tags.h"

#include <svc/sdk/util.h>

#include <Poco/Ascii.h>

#include <algorithm>
#include <cctype>

namespace svc::plugins::email {

namespace {

bool isFws(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::string withoutFws(std::string_view s) {
  std::string out(s.size(), '\0');
  std::size_t n = 0;
  for (char c : s) {
    if (!isFws(c)) out[n++] = c;
  }
  out.resize(n);
  return out;
}

bool validName(std::string_view name) {
  if (name.empty() || !Poco::Ascii::isAlpha(name[0])) return false;
  for (char c : name) {
    if (!Poco::Ascii::isAlphaNumeric(c) && c != '_') return false;
  }
  return true;
}

// @return the `;`-separated spec of text that starts at `at`, which moves past it.
std::string_view nextSpec(std::string_view text, std::size_t& at) {
  std::size_t end = text.find(';', at);
  if (end == std::string_view::npos) end = text.size();
  const std::string_view spec = text.substr(at, end - at);
  at = end + 1;
  return spec;
}

// @return s without the FWS around it.
std::string_view trimmedFws(std::string_view s) {
  while (!s.empty() && isFws(s.front())) s.remove_prefix(1);
  while (!s.empty() && isFws(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<DkimTags> DkimTags::parse(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x7f || (u < 0x20 && !isFws(c))) return std::nullopt;
  }
  DkimTags out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::string_view spec = nextSpec(text, at);
    if (std::all_of(spec.begin(), spec.end(), isFws)) continue;  // after the last `;`, or `;;`
    const std::size_t eq = spec.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    // FWS may surround the name, not split it ("a b=1" is no tag).
    const std::string_view name = trimmedFws(spec.substr(0, eq));
    if (!validName(name)) return std::nullopt;
    out.tags_.emplace_back(name, withoutFws(spec.substr(eq + 1)));
  }
  std::sort(out.tags_.begin(), out.tags_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto twice =
      std::adjacent_find(out.tags_.begin(), out.tags_.end(),
                         [](const auto& a, const auto& b) { return a.first == b.first; });
  if (twice != out.tags_.end()) return std::nullopt;  // a name given twice
  return out;
}

std::optional<std::string> DkimTags::peek(std::string_view text, std::string_view name) {
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::string_view spec = nextSpec(text, at);
    const std::size_t eq = spec.find('=');
    if (eq != std::string_view::npos && trimmedFws(spec.substr(0, eq)) == name) {
      return withoutFws(spec.substr(eq + 1));
    }
  }
  return std::nullopt;
}

const std::string* DkimTags::find(std::string_view name) const {
  const auto it =
      std::lower_bound(tags_.begin(), tags_.end(), name,
                       [](const auto& tag, std::string_view n) { return tag.first < n; });
  return it == tags_.end() || it->first != name ? nullptr : &it->second;
}

std::optional<std::string> decodeDkimBase64(std::string_view text) {
  std::string clean = withoutFws(text);
  std::size_t pad = 0;
  while (!clean.empty() && clean.back() == '=' && pad < 2) {
    clean.pop_back();
    ++pad;
  }
  for (char c : clean) {
    if (!Poco::Ascii::isAlphaNumeric(c) && c != '+' && c != '/') return std::nullopt;
  }
  if (clean.size() % 4 == 1) return std::nullopt;
  clean.append((4 - clean.size() % 4) % 4, '=');
  return sdk::base64Decode(clean);
}

std::vector<std::string> splitDkimList(const std::string& list) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t end = list.find(':', at);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(at, end - at);
    for (char& c : item) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!item.empty()) out.push_back(std::move(item));
    at = end + 1;
  }
  return out;
}

}  // namespace svc::plugins::email
