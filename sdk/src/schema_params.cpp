// Query parameters and the shapes every list shares: the text of a parameter read as the JSON
// value it stands for, then checked by its schema.
#include <svc/sdk/http.h>
#include <svc/sdk/schema.h>
#include <svc/sdk/util.h>

#include <Poco/NumberParser.h>
#include <Poco/String.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace svc::sdk {

namespace {

// A query parameter's text as JSON writes a number: an optional minus, digits and, for a
// fraction, one point and an exponent. Nothing else (no `+`, spaces, separators or hex).
bool isPlainNumber(const std::string& text, bool fraction) {
  if (text.empty()) return false;
  std::size_t i = text[0] == '-' ? 1 : 0;
  const std::size_t digits_start = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == digits_start || text.size() > 40) return false;
  if (!fraction) return i == text.size();
  if (i < text.size() && text[i] == '.') {
    const std::size_t start = ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    const std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) return false;
  }
  return i == text.size();
}

}  // namespace

std::vector<Param> pageParams() {
  return {
      {"limit",
       Schema::integer().minimum(1).describe("page size: default 50, larger than 200 is 200"),
       false, "How many items a page holds (default 50; values above 200 are clamped to 200)."},
      {"offset", Schema::integer().minimum(0), false, "How many items to skip (default 0)."},
  };
}

Schema pageOf(const Schema& item, std::string name) {
  return Schema::object(std::move(name))
      .required("count", Schema::integer().minimum(0).describe("how many items match in all"))
      .optional("count_is_exact",
                Schema::boolean().describe("false: there are at least `count` (a capped count)"))
      .required("next", Schema::string().format("uri").nullable().describe("the next page"))
      .required("previous", Schema::string().format("uri").nullable().describe("the previous page"))
      .required("results", Schema::array(item));
}

void validateQuery(const std::vector<Param>& declared,
                   const std::multimap<std::string, std::string>& query, FieldErrors& errors) {
  std::size_t problems = 0;
  auto add = [&](const std::string& name, const std::string& message) {
    if (problems++ < Schema::kMaxProblems) errors.add(name, message);
  };
  std::vector<std::string> names;
  for (const auto& p : declared) names.push_back(p.name);
  for (auto it = query.begin(); it != query.end(); it = query.upper_bound(it->first)) {
    const std::string& name = it->first;
    const auto param = std::find_if(declared.begin(), declared.end(),
                                    [&](const Param& p) { return p.name == name; });
    if (param == declared.end()) {
      add(quoteForDetail(name, 40),
          names.empty() ? std::string("unknown parameter; this route takes none")
                        : "unknown parameter; this route takes: " +
                              Poco::cat(std::string(", "), names.begin(), names.end()));
      continue;
    }
    if (query.count(name) > 1) {
      add(name, "given more than once");
      continue;
    }
    // The text as the JSON value it stands for, then the schema's own check.
    const std::string& text = it->second;
    Poco::Dynamic::Var value = text;
    switch (param->schema.type()) {
      case Schema::Type::kBoolean: {
        const std::string lower = Poco::toLower(text);
        if (lower == "true" || lower == "1") {
          value = true;
        } else if (lower == "false" || lower == "0") {
          value = false;
        } else {
          add(name, "must be true or false");
          continue;
        }
        break;
      }
      case Schema::Type::kInteger: {
        Poco::Int64 n = 0;
        // Digits only: Poco's parser also takes thousands separators (`0,120` as 120).
        if (!isPlainNumber(text, false) || !Poco::NumberParser::tryParse64(text, n)) {
          add(name, "must be an integer");
          continue;
        }
        value = n;
        break;
      }
      case Schema::Type::kNumber: {
        double n = 0;
        if (!isPlainNumber(text, true) || !Poco::NumberParser::tryParseFloat(text, n) ||
            !std::isfinite(n)) {
          add(name, "must be a number");
          continue;
        }
        value = n;
        break;
      }
      default:
        break;
    }
    param->schema.validate(value, name, errors);
  }
  for (const auto& p : declared) {
    if (p.required && !query.count(p.name)) add(p.name, "this parameter is required");
  }
}

std::string formatExample(const std::string& format) {
  static const std::map<std::string, std::string> examples = {
      {"uuid", "0b6f1c8e-8a55-4f7e-9f63-2d1d4c1a9e70"},
      {"email", "agent@example.com"},
      {"date-time", "2026-01-01T00:00:00Z"},
      {"uri", "https://example.com/"},
      {"e164", "+15555550100"}};
  auto it = examples.find(format);
  return it == examples.end() ? std::string() : it->second;
}

}  // namespace svc::sdk
