#include "contact_search.h"

#include "contact_fields.h"

#include <algorithm>

namespace svc::plugins::contacts {

namespace {

std::int64_t gramKey(std::string_view account, std::string_view gram) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a, 64 bits
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ULL;
  };
  for (unsigned char c : account) mix(c);
  mix(0x1F);  // a separator no account id holds
  for (unsigned char c : gram) mix(c);
  return static_cast<std::int64_t>(h & 0x7FFFFFFFFFFFFFFFULL);  // positive in a signed BIGINT
}

}  // namespace

std::string searchText(const std::vector<std::string>& fields) {
  std::string out;
  for (const auto& f : fields) {
    if (f.empty()) continue;
    if (!out.empty()) out += '\n';
    out += foldCase(f);
  }
  return out;
}

std::vector<std::int64_t> gramKeys(std::string_view account, std::string_view folded) {
  std::vector<std::int64_t> keys;
  std::size_t line = 0;
  while (line <= folded.size()) {
    std::size_t end = folded.find('\n', line);
    if (end == std::string_view::npos) end = folded.size();
    // Where each character of the line starts.
    std::vector<std::size_t> starts;
    for (std::size_t i = line; i < end; ++i) {
      if ((static_cast<unsigned char>(folded[i]) & 0xC0) != 0x80) starts.push_back(i);
    }
    starts.push_back(end);
    for (std::size_t k = 0; k + 3 < starts.size(); ++k) {
      keys.push_back(gramKey(account, folded.substr(starts[k], starts[k + 3] - starts[k])));
    }
    line = end + 1;
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::size_t characterCount(std::string_view folded) {
  std::size_t n = 0;
  for (unsigned char c : folded) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace svc::plugins::contacts
