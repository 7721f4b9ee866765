#include "password_generator.h"

#include <svc/sdk/http.h>

#include <openssl/rand.h>

#include <stdexcept>
#include <utility>

namespace svc::plugins::passwords {

namespace {

std::string without(std::string_view set, const std::string& excluded) {
  std::string out;
  for (char c : set) {
    if (excluded.find(c) == std::string::npos) out.push_back(c);
  }
  return out;
}

}  // namespace

GeneratorOptions generatorOptions(const sdk::Request& r) {
  // Each parameter's form and bounds are the route's declaration's (generatorParams()); what is
  // left is whether they can be met together.
  GeneratorOptions o;
  sdk::FieldErrors errors;
  if (auto raw = r.queryParam("length")) o.length = std::stoi(*raw);
  const std::pair<const char*, bool*> flags[] = {{"digits", &o.digits},
                                                 {"lowercase", &o.lowercase},
                                                 {"uppercase", &o.uppercase},
                                                 {"special", &o.special}};
  for (const auto& flag : flags) {
    if (auto v = r.boolQuery(flag.first)) *flag.second = *v;
  }
  o.exclude_chars = r.queryParam("exclude_chars").value_or("");
  if (!o.digits && !o.lowercase && !o.uppercase && !o.special) {
    // Under each flag, for clients that read errors by field; the detail says it once.
    for (const auto& flag : flags) {
      errors.add(flag.first, "at least one of the character classes must be true");
    }
  }
  const std::vector<std::string> classes = characterClasses(o);
  std::size_t i = 0;  // characterClasses() keeps the enabled classes in this order
  for (const auto& flag : flags) {
    if (!*flag.second) continue;
    if (classes[i++].empty()) {
      errors.add("exclude_chars", "excludes every character of " + std::string(flag.first) +
                                      "; set " + flag.first + "=false or exclude fewer");
    }
  }
  if (static_cast<std::size_t>(o.length) < classes.size()) {
    errors.add("length", "must be at least the number of enabled character classes");
  }
  errors.throwIfAny();
  return o;
}

std::vector<std::string> characterClasses(const GeneratorOptions& o) {
  std::vector<std::string> classes;
  if (o.digits) classes.push_back(without("0123456789", o.exclude_chars));
  if (o.lowercase) classes.push_back(without("abcdefghijklmnopqrstuvwxyz", o.exclude_chars));
  if (o.uppercase) classes.push_back(without("ABCDEFGHIJKLMNOPQRSTUVWXYZ", o.exclude_chars));
  if (o.special) classes.push_back(without(kSpecialCharacters, o.exclude_chars));
  return classes;
}

std::uint32_t randomBelow(std::uint32_t n) {
  if (n == 0) throw std::invalid_argument("randomBelow(0)");
  // The largest multiple of n that fits in 2^32: draws at or above it are thrown away, so every
  // residue is equally likely.
  const std::uint64_t limit = (std::uint64_t{1} << 32) - ((std::uint64_t{1} << 32) % n);
  while (true) {
    unsigned char b[4];
    if (RAND_bytes(b, sizeof b) != 1) throw std::runtime_error("RAND_bytes failed");
    const std::uint32_t x = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                            (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
    if (x < limit) return x % n;
  }
}

std::string generatePassword(const GeneratorOptions& o) {
  const std::vector<std::string> classes = characterClasses(o);
  std::string pool;
  for (const auto& c : classes) {
    if (c.empty()) throw std::invalid_argument("a character class is empty");
    pool += c;
  }
  if (pool.empty() || static_cast<std::size_t>(o.length) < classes.size()) {
    throw std::invalid_argument("impossible password constraints");
  }
  std::string out;
  out.reserve(static_cast<std::size_t>(o.length));
  for (const auto& c : classes) out.push_back(c[randomBelow(static_cast<std::uint32_t>(c.size()))]);
  while (out.size() < static_cast<std::size_t>(o.length)) {
    out.push_back(pool[randomBelow(static_cast<std::uint32_t>(pool.size()))]);
  }
  // Fisher-Yates: the required characters land on uniformly random positions.
  for (std::size_t i = out.size() - 1; i > 0; --i) {
    std::swap(out[i], out[randomBelow(static_cast<std::uint32_t>(i + 1))]);
  }
  return out;
}

}  // namespace svc::plugins::passwords
