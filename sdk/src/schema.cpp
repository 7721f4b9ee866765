#include <svc/sdk/addresses.h>
#include <svc/sdk/http.h>
#include <svc/sdk/schema.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/NumberFormatter.h>
#include <Poco/NumberParser.h>
#include <Poco/RegularExpression.h>
#include <Poco/String.h>
#include <Poco/URI.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace svc::sdk {

struct Schema::Node {
  Type type = Type::kAny;
  bool nullable = false;
  std::string name, description;
  std::optional<Poco::Dynamic::Var> example;
  std::vector<std::pair<std::string, std::pair<Schema, bool>>> members;  // name → schema, required
  std::shared_ptr<const Schema> additional;                              // objects: other members
  std::shared_ptr<const Schema> items;                                   // arrays
  std::vector<std::string> values;                                       // strings: the enum
  std::optional<std::size_t> min_length, max_length, min_items, max_items;
  std::optional<double> minimum, maximum;
  std::string pattern, rule, format;
  std::shared_ptr<const Poco::RegularExpression> regex;
};

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

const char* typeName(Schema::Type t) {
  switch (t) {
    case Schema::Type::kString:
      return "string";
    case Schema::Type::kInteger:
      return "integer";
    case Schema::Type::kNumber:
      return "number";
    case Schema::Type::kBoolean:
      return "boolean";
    case Schema::Type::kArray:
      return "array";
    case Schema::Type::kObject:
      return "object";
    case Schema::Type::kAny:
      break;
  }
  return "";
}

const char* typeRule(Schema::Type t) {
  switch (t) {
    case Schema::Type::kString:
      return "a string";
    case Schema::Type::kInteger:
      return "an integer";
    case Schema::Type::kNumber:
      return "a number";
    case Schema::Type::kBoolean:
      return "true or false";
    case Schema::Type::kArray:
      return "an array";
    case Schema::Type::kObject:
      return "an object";
    case Schema::Type::kAny:
      break;
  }
  return "a value";
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string numberText(double n) {
  return std::floor(n) == n && std::fabs(n) < 1e15 ? std::to_string(static_cast<long long>(n))
                                                   : Poco::NumberFormatter::format(n);
}

std::size_t codePoints(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool isAbsoluteUrl(const std::string& text) {
  try {
    Poco::URI uri(text);
    return (uri.getScheme() == "https" || uri.getScheme() == "http") && !uri.getHost().empty();
  } catch (const Poco::Exception&) {
    return false;
  }
}

// @return the rule a string breaks under format, or nullopt.
std::optional<std::string> formatProblem(const std::string& format, const std::string& s) {
  if (format == "uuid" && !isUuid(s)) return "must be a UUID";
  if (format == "email" && !isValidEmailAddress(s)) return "must be an email address";
  if (format == "date-time" && !parseIsoMicros(s)) {
    return "must be a date and time (RFC 3339, for example 2026-01-31T12:00:00Z)";
  }
  if (format == "uri" && !isAbsoluteUrl(s)) return "must be an absolute http or https URL";
  if (format == "e164" && !normalizeE164(s)) {
    return "must be a phone number in E.164 form (+ and up to 15 digits)";
  }
  return std::nullopt;
}

// Problems of one check, capped.
struct Problems {
  FieldErrors& errors;
  std::size_t count = 0;
  bool full() const { return count >= Schema::kMaxProblems; }
  void add(const std::string& at, const std::string& message) {
    if (full()) return;
    errors.add(at.empty() ? "body" : at, message);
    ++count;
  }
};

bool hasType(const Poco::Dynamic::Var& v, Schema::Type t) {
  switch (t) {
    case Schema::Type::kAny:
      return true;
    case Schema::Type::kString:
      return v.isString();
    case Schema::Type::kBoolean:
      return v.isBoolean();
    case Schema::Type::kInteger:
      return !v.isBoolean() && v.isInteger();
    case Schema::Type::kNumber:
      return !v.isBoolean() && v.isNumeric();
    case Schema::Type::kArray:
      return v.type() == typeid(Poco::JSON::Array::Ptr);
    case Schema::Type::kObject:
      return v.type() == typeid(Poco::JSON::Object::Ptr);
  }
  return false;
}

std::string child(const std::string& at, const std::string& name) {
  return at.empty() ? name : at + "." + name;
}

}  // namespace

Schema::Schema(Type type) : node_(std::make_shared<Node>()) {
  node_->type = type;
}

Schema::Node& Schema::edit() {
  if (node_.use_count() > 1) node_ = std::make_shared<Node>(*node_);
  return *node_;
}

Schema Schema::any() {
  return Schema(Type::kAny);
}
Schema Schema::string() {
  return Schema(Type::kString);
}
Schema Schema::integer() {
  return Schema(Type::kInteger);
}
Schema Schema::number() {
  return Schema(Type::kNumber);
}
Schema Schema::boolean() {
  return Schema(Type::kBoolean);
}

Schema Schema::array(Schema items) {
  Schema s(Type::kArray);
  s.node_->items = std::make_shared<const Schema>(std::move(items));
  return s;
}

Schema Schema::object(std::string name) {
  Schema s(Type::kObject);
  s.node_->name = std::move(name);
  return s;
}

Schema Schema::oneOf(std::vector<std::string> values) {
  Schema s(Type::kString);
  s.node_->values = std::move(values);
  return s;
}

Schema& Schema::required(const std::string& name, Schema schema) {
  edit().members.push_back({name, {std::move(schema), true}});
  return *this;
}

Schema& Schema::optional(const std::string& name, Schema schema) {
  edit().members.push_back({name, {std::move(schema), false}});
  return *this;
}

Schema& Schema::additional(Schema schema) {
  edit().additional = std::make_shared<const Schema>(std::move(schema));
  return *this;
}

Schema Schema::partial(std::string name) const {
  Schema copy = *this;
  Node& n = copy.edit();
  n.name = std::move(name);
  for (auto& member : n.members) member.second.second = false;
  return copy;
}

Schema& Schema::nullable() {
  edit().nullable = true;
  return *this;
}
Schema& Schema::minLength(std::size_t n) {
  edit().min_length = n;
  return *this;
}
Schema& Schema::maxLength(std::size_t n) {
  edit().max_length = n;
  return *this;
}
Schema& Schema::pattern(const std::string& regex, std::string rule) {
  Node& n = edit();
  n.pattern = regex;
  n.rule = std::move(rule);
  // `$` ends the string, as in ECMA-262 (JSON Schema's dialect), not before a last line break
  // too, as PCRE has it by default: `^[^\x00-\x1f]*$` must refuse "a\n".
  n.regex = std::make_shared<const Poco::RegularExpression>(
      regex, Poco::RegularExpression::RE_UTF8 | Poco::RegularExpression::RE_DOLLAR_ENDONLY);
  return *this;
}
Schema& Schema::format(std::string format) {
  edit().format = std::move(format);
  return *this;
}
Schema& Schema::minimum(double n) {
  edit().minimum = n;
  return *this;
}
Schema& Schema::maximum(double n) {
  edit().maximum = n;
  return *this;
}
Schema& Schema::minItems(std::size_t n) {
  edit().min_items = n;
  return *this;
}
Schema& Schema::maxItems(std::size_t n) {
  edit().max_items = n;
  return *this;
}
Schema& Schema::describe(std::string text) {
  edit().description = std::move(text);
  return *this;
}
Schema& Schema::example(Poco::Dynamic::Var value) {
  edit().example = std::move(value);
  return *this;
}

Schema::Type Schema::type() const {
  return node_->type;
}
const std::string& Schema::name() const {
  return node_->name;
}

std::vector<std::pair<std::string, bool>> Schema::members() const {
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& [name, member] : node_->members) out.emplace_back(name, member.second);
  return out;
}

const Schema* Schema::member(const std::string& name) const {
  for (const auto& [n, member] : node_->members) {
    if (n == name) return &member.first;
  }
  return nullptr;
}

Poco::JSON::Object::Ptr Schema::json(
    std::map<std::string, Poco::JSON::Object::Ptr>* components) const {
  const Node& n = *node_;
  if (components && !n.name.empty()) {
    auto known = components->find(n.name);
    Schema inline_copy = *this;
    inline_copy.edit().name.clear();
    if (known == components->end()) {
      (*components)[n.name] = nullptr;  // claimed first: a schema that contains itself ends
      (*components)[n.name] = inline_copy.json(components);
    } else if (known->second) {
      // Two routes naming different shapes alike would publish one of them under both.
      std::ostringstream mine, theirs;
      inline_copy.json(components)->stringify(mine);
      known->second->stringify(theirs);
      if (mine.str() != theirs.str()) {
        throw std::logic_error("two different schemas are named '" + n.name + "'");
      }
    }
    Poco::JSON::Object::Ptr ref = new Poco::JSON::Object;
    ref->set("$ref", "#/components/schemas/" + n.name);
    return ref;
  }
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  if (n.type != Type::kAny) {
    if (n.nullable) {
      Poco::JSON::Array::Ptr types = new Poco::JSON::Array;
      types->add(std::string(typeName(n.type)));
      types->add(std::string("null"));
      o->set("type", types);
    } else {
      o->set("type", std::string(typeName(n.type)));
    }
  }
  if (!n.description.empty()) o->set("description", n.description);
  if (!n.values.empty()) {
    Poco::JSON::Array::Ptr values = new Poco::JSON::Array;
    for (const auto& v : n.values) values->add(v);
    if (n.nullable) values->add(Poco::Dynamic::Var());
    o->set("enum", values);
  }
  if (n.min_length) o->set("minLength", static_cast<Poco::UInt64>(*n.min_length));
  if (n.max_length) o->set("maxLength", static_cast<Poco::UInt64>(*n.max_length));
  if (!n.pattern.empty()) o->set("pattern", n.pattern);
  if (!n.format.empty()) o->set("format", n.format);
  if (n.minimum) o->set("minimum", *n.minimum);
  if (n.maximum) o->set("maximum", *n.maximum);
  if (n.items) o->set("items", n.items->json(components));
  if (n.min_items) o->set("minItems", static_cast<Poco::UInt64>(*n.min_items));
  if (n.max_items) o->set("maxItems", static_cast<Poco::UInt64>(*n.max_items));
  if (n.type == Type::kObject) {
    Poco::JSON::Object::Ptr properties = new Poco::JSON::Object(Poco::JSON_PRESERVE_KEY_ORDER);
    Poco::JSON::Array::Ptr required = new Poco::JSON::Array;
    for (const auto& [name, member] : n.members) {
      properties->set(name, member.first.json(components));
      if (member.second) required->add(name);
    }
    if (!n.members.empty()) o->set("properties", properties);
    if (required->size() > 0) o->set("required", required);
    if (n.additional) {
      o->set("additionalProperties", n.additional->json(components));
    } else {
      o->set("additionalProperties", false);
    }
  }
  if (n.example) {
    Poco::JSON::Array::Ptr examples = new Poco::JSON::Array;
    examples->add(*n.example);
    o->set("examples", examples);
  }
  return o;
}

void Schema::validate(const Poco::Dynamic::Var& value, const std::string& at,
                      FieldErrors& errors) const {
  Problems problems{errors};
  // One recursive walk; `problems` caps what it reports.
  struct Walk {
    Problems& p;
    void operator()(const Schema& s, const Poco::Dynamic::Var& v, const std::string& at) {
      if (p.full()) return;
      const Node& n = *s.node_;
      if (v.isEmpty()) {
        if (!n.nullable && n.type != Type::kAny) {
          p.add(at, std::string("must be ") + typeRule(n.type) + ", not null");
        }
        return;
      }
      if (!hasType(v, n.type)) {
        p.add(at, std::string("must be ") + typeRule(n.type) + (n.nullable ? " or null" : ""));
        return;
      }
      switch (n.type) {
        case Type::kString:
          string(n, v.extract<std::string>(), at);
          break;
        case Type::kInteger:
        case Type::kNumber:
          numeric(n, v.convert<double>(), at);
          break;
        case Type::kArray:
          array(n, v.extract<Poco::JSON::Array::Ptr>(), at);
          break;
        case Type::kObject:
          object(n, v.extract<Poco::JSON::Object::Ptr>(), at);
          break;
        case Type::kBoolean:
        case Type::kAny:
          break;
      }
    }
    void string(const Node& n, const std::string& s, const std::string& at) {
      if (!n.values.empty()) {
        if (std::find(n.values.begin(), n.values.end(), s) == n.values.end()) {
          p.add(at, "must be one of: " + joined(n.values));
        }
        return;
      }
      const std::size_t length = codePoints(s);
      if (n.min_length && length < *n.min_length) {
        p.add(at, *n.min_length == 1
                      ? std::string("must not be empty")
                      : "must be at least " + std::to_string(*n.min_length) + " characters");
        return;
      }
      if (n.max_length && length > *n.max_length) {
        p.add(at, "must be at most " + std::to_string(*n.max_length) + " characters");
        return;
      }
      if (n.regex) {
        Poco::RegularExpression::Match m;
        bool matched = false;
        try {
          matched = n.regex->match(s, 0, m) > 0;
        } catch (const Poco::Exception&) {  // PCRE's match limit: not a match
        }
        if (!matched) {
          p.add(at, n.rule);
          return;
        }
      }
      // "" is no value rather than a bad one (a PATCH that clears); minLength(1) refuses it.
      if (s.empty()) return;
      if (auto why = formatProblem(n.format, s)) p.add(at, *why);
    }
    void numeric(const Node& n, double x, const std::string& at) {
      if (n.minimum && x < *n.minimum) p.add(at, "must be at least " + numberText(*n.minimum));
      if (n.maximum && x > *n.maximum) p.add(at, "must be at most " + numberText(*n.maximum));
    }
    void array(const Node& n, const Poco::JSON::Array::Ptr& a, const std::string& at) {
      if (n.min_items && a->size() < *n.min_items) {
        p.add(at, "must hold at least " + std::to_string(*n.min_items) + " items");
      }
      if (n.max_items && a->size() > *n.max_items) {
        p.add(at, "must hold at most " + std::to_string(*n.max_items) + " items");
        return;
      }
      for (std::size_t i = 0; i < a->size() && !p.full(); ++i) {
        (*this)(*n.items, a->get(static_cast<unsigned>(i)), at + "[" + std::to_string(i) + "]");
      }
    }
    void object(const Node& n, const Poco::JSON::Object::Ptr& o, const std::string& at) {
      std::set<std::string> declared;
      for (const auto& [name, member] : n.members) {
        declared.insert(name);
        if (!o->has(name)) {
          if (member.second) p.add(child(at, name), "this field is required");
          continue;
        }
        (*this)(member.first, o->get(name), child(at, name));
      }
      for (const auto& [name, v] : *o) {
        if (declared.count(name)) continue;
        if (n.additional) {
          (*this)(*n.additional, v, child(at, name));
        } else {
          std::vector<std::string> names;
          for (const auto& member : n.members) names.push_back(member.first);
          p.add(child(at, quoteForDetail(name, 40)),
                names.empty() ? std::string("unknown field; this object takes none")
                              : "unknown field; this object takes: " + joined(names));
        }
      }
    }
  };
  Walk{problems}(*this, value, at);
}

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
      add(quoteForDetail(name, 40), names.empty()
                                        ? std::string("unknown parameter; this route takes none")
                                        : "unknown parameter; this route takes: " + joined(names));
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
