// The password generator: its parameters, the classes it guarantees, and its distribution: every
// character of a class equally likely and the required characters on uniformly random positions,
// checked with chi-squared tests at a threshold a fair generator fails less than once in a
// million runs.
#include "password_generator.h"
#include "entry_shapes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace svc::plugins::passwords {
namespace {

// The regularized upper incomplete gamma function Q(a, x), by its series (x < a + 1) or its
// continued fraction (Numerical Recipes, 6.2).
double upperGamma(double a, double x) {
  if (x <= 0) return 1;
  const double front = std::exp(-x + a * std::log(x) - std::lgamma(a));
  if (x < a + 1) {
    double term = 1 / a, sum = term;
    for (int n = 1; n < 1000 && std::fabs(term) > std::fabs(sum) * 1e-16; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return 1 - sum * front;
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-16) break;
  }
  return front * h;
}

// The chi-squared value a fair sample exceeds with probability p: Q(df/2, x/2) = p, by bisection
// (Q falls as x grows). What scipy.stats.chi2.isf(p, df) answers.
double chiSquaredCritical(int df, double p) {
  double lo = 0, hi = 10000;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (upperGamma(df / 2.0, mid / 2) > p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

constexpr double kOnceInAMillion = 1e-6;

double chiSquared(const std::map<char, long>& counts, const std::string& alphabet, long total) {
  const double expected = static_cast<double>(total) / static_cast<double>(alphabet.size());
  double chi = 0;
  for (char c : alphabet) {
    auto it = counts.find(c);
    const double seen = it == counts.end() ? 0 : static_cast<double>(it->second);
    chi += (seen - expected) * (seen - expected) / expected;
  }
  return chi;
}

sdk::Request query(std::multimap<std::string, std::string> params) {
  sdk::Request r;
  r.method = "GET";
  r.query = std::move(params);
  return r;
}

// The declaration's check, as the kernel makes it before the handler runs, then the reader's.
std::map<std::string, std::vector<std::string>> refusal(
    std::multimap<std::string, std::string> params) {
  try {
    sdk::FieldErrors errors;
    sdk::validateQuery(generatorParams(), params, errors);
    errors.throwIfAny();
    generatorOptions(query(std::move(params)));
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "invalid");
    return e.errors();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

TEST(PasswordGenerator, TheQuantileMatchesKnownValues) {
  // df 2 is exponential: Q(1, x/2) = exp(-x/2), so x = 2 ln(1e6).
  EXPECT_NEAR(chiSquaredCritical(2, kOnceInAMillion), 2 * std::log(1e6), 1e-6);
  // Published values (scipy.stats.chi2.isf(1e-6, df)).
  EXPECT_NEAR(chiSquaredCritical(1, kOnceInAMillion), 23.9281, 1e-3);
  EXPECT_NEAR(chiSquaredCritical(10, kOnceInAMillion), 46.8630, 1e-3);
}

TEST(PasswordGenerator, DefaultsAreTheContracts) {
  const GeneratorOptions o = generatorOptions(query({}));
  EXPECT_EQ(o.length, 16);
  EXPECT_TRUE(o.digits && o.lowercase && o.uppercase && o.special);
  EXPECT_EQ(o.exclude_chars, "");
  EXPECT_EQ(generatePassword(o).size(), 16u);
  EXPECT_EQ(kSpecialCharacters.size(), 32u);
  for (char c : kSpecialCharacters) EXPECT_TRUE(std::ispunct(static_cast<unsigned char>(c))) << c;
}

TEST(PasswordGenerator, ParametersAreRead) {
  const GeneratorOptions o = generatorOptions(
      query({{"length", "128"}, {"digits", "false"}, {"special", "0"}, {"exclude_chars", "aB"}}));
  EXPECT_EQ(o.length, 128);
  EXPECT_FALSE(o.digits);
  EXPECT_FALSE(o.special);
  EXPECT_TRUE(o.lowercase && o.uppercase);
  EXPECT_EQ(o.exclude_chars, "aB");
  EXPECT_EQ(generatorOptions(query({{"length", "4"}})).length, 4);
}

TEST(PasswordGenerator, ImpossibleOrMalformedParametersAreRefusedByName) {
  for (const char* bad : {"3", "129", "0", "-5", "16.0", "x", "", "99999"}) {
    auto e = refusal({{"length", bad}});
    EXPECT_EQ(e.count("length"), 1u) << bad;
  }
  EXPECT_EQ(refusal({{"digits", "maybe"}}).count("digits"), 1u);
  auto none = refusal(
      {{"digits", "false"}, {"lowercase", "false"}, {"uppercase", "false"}, {"special", "false"}});
  for (const char* name : {"digits", "lowercase", "uppercase", "special"}) {
    EXPECT_EQ(none.count(name), 1u) << name;
  }
  try {  // the sentence is said once, naming the four flags
    generatorOptions(query(
        {{"digits", "false"}, {"lowercase", "false"}, {"uppercase", "false"}, {"special", "0"}}));
    ADD_FAILURE() << "accepted";
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.detail(),
              "The request is invalid: digits, lowercase, uppercase, special: at least one of the "
              "character classes must be true.");
  }
  auto emptied = refusal({{"exclude_chars", "0123456789"}});
  ASSERT_EQ(emptied.count("exclude_chars"), 1u);
  EXPECT_NE(emptied["exclude_chars"].front().find("digits"), std::string::npos);
  // Every problem at once.
  auto both = refusal({{"length", "2"}, {"special", "yes"}});
  EXPECT_EQ(both.size(), 2u);
  // A class left out may be emptied freely.
  EXPECT_NO_THROW(generatorOptions(query({{"digits", "false"}, {"exclude_chars", "0123456789"}})));
}

TEST(PasswordGenerator, EveryEnabledClassIsPresentAndExcludedCharactersNeverAre) {
  GeneratorOptions o;
  o.length = 4;
  o.exclude_chars = "0Oo1lI|'\"`";
  const auto classes = characterClasses(o);
  ASSERT_EQ(classes.size(), 4u);
  for (int i = 0; i < 2000; ++i) {
    const std::string p = generatePassword(o);
    ASSERT_EQ(p.size(), 4u);
    for (const auto& cls : classes) {
      EXPECT_NE(p.find_first_of(cls), std::string::npos) << p << " lacks one of " << cls;
    }
    EXPECT_EQ(p.find_first_of(o.exclude_chars), std::string::npos) << p;
  }
  o.length = 12;
  o.special = false;
  o.uppercase = false;
  for (int i = 0; i < 500; ++i) {
    const std::string p = generatePassword(o);
    EXPECT_NE(p.find_first_of("23456789"), std::string::npos) << p;
    for (char c : p) EXPECT_TRUE(std::isdigit(c) || std::islower(c)) << p;
    EXPECT_EQ(p.find_first_of(o.exclude_chars), std::string::npos) << p;
  }
}

// 100,000 characters of each class alone (one class enabled: each character is equally likely),
// tested against uniform with a chi-squared test of (class size - 1) degrees of freedom.
TEST(PasswordGenerator, EachClassIsUniform) {
  struct Case {
    const char* name;
    std::string alphabet;
    GeneratorOptions options;
  };
  GeneratorOptions base;
  base.length = 128;
  base.digits = base.lowercase = base.uppercase = base.special = false;
  std::vector<Case> cases;
  for (int i = 0; i < 4; ++i) {
    GeneratorOptions o = base;
    (i == 0 ? o.digits : i == 1 ? o.lowercase : i == 2 ? o.uppercase : o.special) = true;
    cases.push_back({i == 0   ? "digits"
                     : i == 1 ? "lowercase"
                     : i == 2 ? "uppercase"
                              : "special",
                     characterClasses(o).front(), o});
  }
  // And a class with characters excluded: the rest stay uniform.
  GeneratorOptions fewer = base;
  fewer.lowercase = true;
  fewer.exclude_chars = "aeiou";
  cases.push_back({"lowercase without vowels", characterClasses(fewer).front(), fewer});
  constexpr long kCharacters = 100000;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::map<char, long> counts;
    long total = 0;
    while (total < kCharacters) {
      for (char ch : generatePassword(c.options)) {
        if (total == kCharacters) break;
        ++counts[ch];
        ++total;
      }
    }
    for (const auto& [ch, n] : counts) {
      EXPECT_NE(c.alphabet.find(ch), std::string::npos) << "stray character " << ch;
    }
    const int df = static_cast<int>(c.alphabet.size()) - 1;
    const double critical = chiSquaredCritical(df, kOnceInAMillion);
    EXPECT_LT(chiSquared(counts, c.alphabet, total), critical) << "df " << df;
  }
}

// With length 4 and four classes, a password is one character of each class in some order: each
// of the 24 orders is equally likely when the shuffle is fair (so every position is too).
TEST(PasswordGenerator, RequiredCharactersStandOnUniformlyRandomPositions) {
  GeneratorOptions o;
  o.length = 4;
  auto kind = [](char c) -> char {
    if (std::isdigit(static_cast<unsigned char>(c))) return 'd';
    if (std::islower(static_cast<unsigned char>(c))) return 'l';
    if (std::isupper(static_cast<unsigned char>(c))) return 'u';
    return 's';
  };
  std::string orders = "dlsu";
  std::set<std::string> all;
  do all.insert(orders);
  while (std::next_permutation(orders.begin(), orders.end()));
  ASSERT_EQ(all.size(), 24u);
  constexpr long kPasswords = 100000;
  std::map<std::string, long> seen;
  std::map<int, long> digit_at;
  for (long i = 0; i < kPasswords; ++i) {
    std::string p = generatePassword(o), pattern;
    for (char c : p) pattern.push_back(kind(c));
    ++seen[pattern];
    ++digit_at[static_cast<int>(pattern.find('d'))];
  }
  ASSERT_EQ(seen.size(), 24u) << "a password without one of each class";
  const double expected = static_cast<double>(kPasswords) / 24;
  double chi = 0;
  for (const auto& order : all) {
    const double n = static_cast<double>(seen[order]);
    chi += (n - expected) * (n - expected) / expected;
  }
  EXPECT_LT(chi, chiSquaredCritical(23, kOnceInAMillion));
  double chi_digit = 0;
  for (int at = 0; at < 4; ++at) {
    const double n = static_cast<double>(digit_at[at]), e = kPasswords / 4.0;
    chi_digit += (n - e) * (n - e) / e;
  }
  EXPECT_LT(chi_digit, chiSquaredCritical(3, kOnceInAMillion));
}

TEST(PasswordGenerator, RandomBelowIsUniformForSizesThatDoNotDivideTheRange) {
  // 3 divides 2^32 unevenly: a modulo draw would favour 0 (by 1 in 2^32, too little to see);
  // a draw over a byte would be off by 1 in 85. This checks the draw itself is fair.
  std::map<char, long> counts;
  for (int i = 0; i < 300000; ++i) ++counts[static_cast<char>('0' + randomBelow(3))];
  EXPECT_LT(chiSquared(counts, "012", 300000), chiSquaredCritical(2, kOnceInAMillion));
  EXPECT_EQ(randomBelow(1), 0u);
  EXPECT_THROW(randomBelow(0), std::invalid_argument);
}

}  // namespace
}  // namespace svc::plugins::passwords
