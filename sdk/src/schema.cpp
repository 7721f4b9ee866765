#include <svc/sdk/addresses.h>
#include <svc/sdk/http.h>
#include <svc/sdk/schema.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/NumberFormatter.h>
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
  std::vector<Schema> any_of;                                            // alternatives
  std::optional<std::size_t> min_length, max_length, min_items, max_items;
  std::optional<double> minimum, maximum;
  std::string pattern, rule, format;
  std::shared_ptr<const Poco::RegularExpression> regex;
  std::string media_type;        // bytes(): a non-JSON answer
  std::function<Schema()> late;  // late(): what it is, asked each time
};

namespace {

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

Schema Schema::anyOf(std::vector<Schema> alternatives) {
  Schema s(Type::kAny);
  s.node_->any_of = std::move(alternatives);
  return s;
}

Schema Schema::bytes(std::string media_type) {
  Schema s(Type::kAny);
  s.node_->media_type = std::move(media_type);
  return s;
}

Schema Schema::late(std::function<Schema()> make) {
  Schema s(Type::kAny);
  s.node_->late = std::move(make);
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
  return node_->late ? node_->late().type() : node_->type;
}
const std::string& Schema::name() const {
  // A late schema's parts live in the schema its maker keeps (see late()).
  if (node_->late) return node_->late().name();
  return node_->name;
}
const std::string& Schema::mediaType() const {
  return node_->media_type;
}

std::vector<std::pair<std::string, bool>> Schema::members() const {
  if (node_->late) return node_->late().members();
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& [name, member] : node_->members) out.emplace_back(name, member.second);
  return out;
}

const Schema* Schema::member(const std::string& name) const {
  if (node_->late) return node_->late().member(name);
  for (const auto& [n, member] : node_->members) {
    if (n == name) return &member.first;
  }
  return nullptr;
}

Poco::JSON::Object::Ptr Schema::json(
    std::map<std::string, Poco::JSON::Object::Ptr>* components) const {
  if (node_->late) return node_->late().json(components);
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
  if (!n.media_type.empty()) {
    o->set("type", std::string("string"));
    if (n.media_type != "*/*") o->set("contentMediaType", n.media_type);
  }
  if (!n.description.empty()) o->set("description", n.description);
  if (!n.any_of.empty()) {
    Poco::JSON::Array::Ptr alternatives = new Poco::JSON::Array;
    for (const auto& a : n.any_of) alternatives->add(a.json(components));
    if (n.nullable) {
      Poco::JSON::Object::Ptr null_type = new Poco::JSON::Object;
      null_type->set("type", std::string("null"));
      alternatives->add(null_type);
    }
    o->set("anyOf", alternatives);
  }
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
      if (n.late) return (*this)(n.late(), v, at);
      if (!n.any_of.empty()) {
        // The alternative of the value's type judges it.
        std::string rule;
        for (const auto& a : n.any_of) {
          if (!v.isEmpty() && hasType(v, a.node_->type)) return (*this)(a, v, at);
          rule += std::string(rule.empty() ? "" : " or ") + typeRule(a.node_->type);
        }
        if (v.isEmpty() && n.nullable) return;
        p.add(at, "must be " + rule + (n.nullable ? " or null" : ""));
        return;
      }
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

}  // namespace svc::sdk
