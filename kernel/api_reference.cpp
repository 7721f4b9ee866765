#include "api_reference.h"

#include <svc/sdk/html.h>
#include <svc/sdk/schema.h>

#include <Poco/JSON/Array.h>
#include <Poco/NumberFormatter.h>
#include <Poco/String.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

namespace svc::kernel {

namespace {

using Object = Poco::JSON::Object;
using ObjectPtr = Poco::JSON::Object::Ptr;

// What both renderings show, read once from the document.
struct Field {
  std::string name, type, description;
  bool required = false;
};

struct Operation {
  std::string method, path, summary, auth, body;
  std::vector<Field> params;
  std::vector<std::pair<std::string, std::string>> answers;  // status, what it carries
  std::string example;
};

struct Shape {
  std::string name, description;
  std::vector<Field> fields;
  std::string other;  // what an object takes besides its fields, or the type of a non-object
};

struct Section {
  std::string name, description;
  std::vector<Operation> operations;
};

struct Reference {
  std::string title, version, intro, base_url;
  std::vector<Section> sections;
  std::vector<std::pair<std::string, std::string>> events;  // type, summary and shape
  std::vector<Shape> shapes;
};

std::string refName(const ObjectPtr& schema) {
  if (!schema || !schema->has("$ref")) return "";
  const std::string ref = schema->getValue<std::string>("$ref");
  return ref.substr(ref.rfind('/') + 1);
}

std::string join(const std::vector<std::string>& parts, const std::string& by) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : by) + p;
  return out;
}

std::string number(const Poco::Dynamic::Var& v) {
  const double d = v.convert<double>();
  return d == static_cast<double>(static_cast<long long>(d))
             ? std::to_string(static_cast<long long>(d))
             : Poco::NumberFormatter::format(d);
}

// A schema in a few words: `string (uuid)`, `one of "a", "b"`, `array of Thing`.
std::string typeOf(const ObjectPtr& s) {
  if (!s) return "any";
  if (auto name = refName(s); !name.empty()) return name;
  if (s->isArray("anyOf")) {
    std::vector<std::string> alternatives;
    for (const auto& a : *s->getArray("anyOf")) {
      alternatives.push_back(a.type() == typeid(ObjectPtr) ? typeOf(a.extract<ObjectPtr>())
                                                           : "any");
    }
    return join(alternatives, " or ");
  }
  std::vector<std::string> types;
  if (s->isArray("type")) {
    for (const auto& t : *s->getArray("type")) types.push_back(t.toString());
  } else if (s->has("type")) {
    types.push_back(s->getValue<std::string>("type"));
  }
  const bool nullable = std::find(types.begin(), types.end(), "null") != types.end();
  types.erase(std::remove(types.begin(), types.end(), "null"), types.end());
  std::string base = types.empty() ? "any" : types.front();
  std::vector<std::string> notes;
  if (s->isArray("enum")) {
    std::vector<std::string> values;
    for (const auto& v : *s->getArray("enum")) {
      if (!v.isEmpty()) values.push_back("\"" + v.toString() + "\"");
    }
    base = "one of " + join(values, ", ");
  } else if (base == "array") {
    base = "array of " + typeOf(s->getObject("items"));
  } else if (base == "object" && s->has("properties")) {
    std::vector<std::string> names;
    std::vector<std::string> required;
    if (s->isArray("required")) {
      for (const auto& r : *s->getArray("required")) required.push_back(r.toString());
    }
    for (const auto& [name, _] : *s->getObject("properties")) {
      const bool must = std::find(required.begin(), required.end(), name) != required.end();
      names.push_back(name + (must ? "" : "?"));
    }
    base = "{" + join(names, ", ") + "}";
  } else if (base == "object" && s->isObject("additionalProperties")) {
    base = "map of " + typeOf(s->getObject("additionalProperties"));
  }
  if (s->has("format")) notes.push_back(s->getValue<std::string>("format"));
  if (s->has("minLength") || s->has("maxLength")) {
    const std::string lo = s->has("minLength") ? number(s->get("minLength")) : "0";
    notes.push_back(s->has("maxLength") ? lo + "-" + number(s->get("maxLength")) + " characters"
                                        : "at least " + lo + " characters");
  }
  if (s->has("minimum") || s->has("maximum")) {
    const std::string lo = s->has("minimum") ? number(s->get("minimum")) : "";
    const std::string hi = s->has("maximum") ? number(s->get("maximum")) : "";
    notes.push_back(!lo.empty() && !hi.empty() ? lo + "-" + hi
                    : !lo.empty()              ? "at least " + lo
                                               : "at most " + hi);
  }
  if (s->has("minItems") || s->has("maxItems")) {
    const std::string lo = s->has("minItems") ? number(s->get("minItems")) : "0";
    notes.push_back(lo + "-" + (s->has("maxItems") ? number(s->get("maxItems")) : "") + " items");
  }
  if (s->has("pattern")) notes.push_back("matching " + s->getValue<std::string>("pattern"));
  std::string out = base + (notes.empty() ? "" : " (" + join(notes, ", ") + ")");
  return nullable ? out + " or null" : out;
}

std::string describe(const ObjectPtr& s) {
  return s && s->has("description") ? s->getValue<std::string>("description") : "";
}

ObjectPtr resolve(const ObjectPtr& schema, const ObjectPtr& components) {
  const std::string name = refName(schema);
  return name.empty() || !components || !components->has(name) ? schema
                                                               : components->getObject(name);
}

// A value that fits the schema, for the example call: its own example, else a plausible one.
Poco::Dynamic::Var exampleOf(const ObjectPtr& ref, const ObjectPtr& components, int depth = 0) {
  const ObjectPtr s = resolve(ref, components);
  if (!s || depth > 4) return Poco::Dynamic::Var();
  if (s->isArray("examples") && s->getArray("examples")->size() > 0) {
    return s->getArray("examples")->get(0);
  }
  if (s->isArray("enum") && s->getArray("enum")->size() > 0) return s->getArray("enum")->get(0);
  std::string type = s->has("type") && !s->isArray("type") ? s->getValue<std::string>("type") : "";
  if (s->isArray("type")) type = s->getArray("type")->get(0).toString();
  const std::string format = s->has("format") ? s->getValue<std::string>("format") : "";
  if (type == "string") {
    const std::string fits = sdk::formatExample(format);
    return fits.empty() ? std::string("text") : fits;
  }
  if (type == "integer" || type == "number") {
    return s->has("minimum") ? s->get("minimum") : Poco::Dynamic::Var(1);
  }
  if (type == "boolean") return true;
  if (type == "array") {
    Poco::JSON::Array::Ptr a = new Poco::JSON::Array;
    a->add(exampleOf(s->getObject("items"), components, depth + 1));
    return a;
  }
  if (type == "object") {
    ObjectPtr o = new Object(Poco::JSON_PRESERVE_KEY_ORDER);
    if (s->isArray("required") && s->isObject("properties")) {
      const ObjectPtr props = s->getObject("properties");
      for (const auto& name : *s->getArray("required")) {
        o->set(name.toString(),
               exampleOf(props->getObject(name.toString()), components, depth + 1));
      }
    }
    return o;
  }
  return Poco::Dynamic::Var();
}

std::string shellQuoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Operation readOperation(const std::string& method, const std::string& path, const ObjectPtr& op,
                        const ObjectPtr& components) {
  Operation o;
  o.method = Poco::toUpper(method);
  o.path = path;
  o.summary = op->has("summary") ? op->getValue<std::string>("summary") : "";
  const bool open = op->isArray("security") && op->getArray("security")->size() == 0;
  o.auth = open ? "none" : "Bearer key or token";
  std::string query;
  bool identity = false;
  if (op->isArray("parameters")) {
    for (const auto& p : *op->getArray("parameters")) {
      ObjectPtr param = p.extract<ObjectPtr>();
      if (auto name = refName(param); !name.empty()) {
        identity = identity || name == "Identity";
        continue;
      }
      Field f;
      f.name =
          param->getValue<std::string>("name") + " (" + param->getValue<std::string>("in") + ")";
      f.type = typeOf(param->getObject("schema"));
      f.required = param->has("required") && param->getValue<bool>("required");
      f.description = describe(param);
      o.params.push_back(f);
    }
  }
  if (identity) o.auth += "; names its identity with ?identity= or X-Svc-Identity";
  std::string body;
  if (op->isObject("requestBody")) {
    const ObjectPtr schema = op->getObject("requestBody")
                                 ->getObject("content")
                                 ->getObject("application/json")
                                 ->getObject("schema");
    o.body = typeOf(schema);
    std::ostringstream json;
    Poco::JSON::Stringifier::condense(exampleOf(schema, components), json);
    body = json.str();
  }
  if (op->isObject("responses")) {
    for (const auto& [status, r] : *op->getObject("responses")) {
      const ObjectPtr answer = r.extract<ObjectPtr>();
      std::string what = describe(answer);
      if (answer->isObject("content") && status.front() == '2') {
        const ObjectPtr content = answer->getObject("content");
        if (content->isObject("application/json")) {
          what = typeOf(content->getObject("application/json")->getObject("schema"));
        } else if (content->size() > 0) {  // bytes of another media type: a download, TwiML
          what = content->begin()->first + " bytes";
        }
      }
      o.answers.emplace_back(status, what);
    }
  }
  std::string target = path;
  for (std::size_t at; (at = target.find('{')) != std::string::npos;) {
    target.replace(at, target.find('}', at) - at + 1, sdk::formatExample("uuid"));
  }
  o.example = "curl";
  if (o.method != "GET") o.example += " -X " + o.method;
  o.example += " \"$SVC_URL" + target + "/\"";
  if (!open) o.example += " -H \"Authorization: Bearer $SVC_KEY\"";
  if (!body.empty()) {
    o.example += " -H 'Content-Type: application/json' -d " + shellQuoted(body);
  }
  return o;
}

Reference read(const ObjectPtr& doc) {
  Reference ref;
  const ObjectPtr info = doc->getObject("info");
  ref.title = info->getValue<std::string>("title");
  ref.version = info->getValue<std::string>("version");
  ref.intro = describe(info);
  if (doc->isArray("servers") && doc->getArray("servers")->size() > 0) {
    ref.base_url = doc->getArray("servers")->getObject(0)->getValue<std::string>("url");
  }
  const ObjectPtr components = doc->getObject("components");
  const ObjectPtr schemas = components ? components->getObject("schemas") : nullptr;
  std::map<std::string, std::size_t> by_tag;
  if (doc->isArray("tags")) {
    for (const auto& t : *doc->getArray("tags")) {
      const ObjectPtr tag = t.extract<ObjectPtr>();
      if (tag->getValue<std::string>("name") == "events") continue;
      by_tag[tag->getValue<std::string>("name")] = ref.sections.size();
      ref.sections.push_back({tag->getValue<std::string>("name"), describe(tag), {}});
    }
  }
  for (const auto& [path, item] : *doc->getObject("paths")) {
    for (const auto& [method, op] : *item.extract<ObjectPtr>()) {
      const ObjectPtr operation = op.extract<ObjectPtr>();
      const std::string tag =
          operation->isArray("tags") ? operation->getArray("tags")->get(0).toString() : "";
      if (!by_tag.count(tag)) {
        by_tag[tag] = ref.sections.size();
        ref.sections.push_back({tag, "", {}});
      }
      ref.sections[by_tag[tag]].operations.push_back(
          readOperation(method, path, operation, schemas));
    }
  }
  if (doc->isObject("webhooks")) {
    for (const auto& [type, item] : *doc->getObject("webhooks")) {
      const ObjectPtr post = item.extract<ObjectPtr>()->getObject("post");
      const ObjectPtr schema = post->getObject("requestBody")
                                   ->getObject("content")
                                   ->getObject("application/json")
                                   ->getObject("schema");
      ref.events.emplace_back(type,
                              post->getValue<std::string>("summary") + " (" + typeOf(schema) + ")");
    }
  }
  if (schemas) {
    for (const auto& [name, value] : *schemas) {
      const ObjectPtr s = value.extract<ObjectPtr>();
      Shape shape{name, describe(s), {}, ""};
      if (s->isObject("properties")) {
        std::vector<std::string> required;
        if (s->isArray("required")) {
          for (const auto& r : *s->getArray("required")) required.push_back(r.toString());
        }
        for (const auto& [field, fs] : *s->getObject("properties")) {
          const ObjectPtr f = fs.extract<ObjectPtr>();
          shape.fields.push_back(
              {field, typeOf(f), describe(f),
               std::find(required.begin(), required.end(), field) != required.end()});
        }
        if (s->isObject("additionalProperties")) {
          shape.other = "other members: " + typeOf(s->getObject("additionalProperties"));
        }
      } else {
        shape.other = typeOf(s);
      }
      ref.shapes.push_back(shape);
    }
  }
  return ref;
}

std::string fieldLine(const Field& f) {
  return f.name + ": " + f.type + (f.required ? ", required" : "") +
         (f.description.empty() ? "" : ". " + f.description);
}

std::string anchor(const std::string& text) {
  std::string out;
  for (const char c : text) {
    out += (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '-';
  }
  return out;
}

}  // namespace

std::string textReference(const ObjectPtr& openapi) {
  const Reference ref = read(openapi);
  std::ostringstream out;
  out << ref.title << ", version " << ref.version << "\n"
      << "Base URL: " << ref.base_url << "\n\n"
      << ref.intro << "\n"
      << "Authenticate with `Authorization: Bearer <key>`. Routes that act for one identity take "
         "it "
         "from an identity key, or from ?identity=<uuid> or the X-Svc-Identity header with a "
         "management key. Unknown fields and parameters are refused (400 `invalid`, every problem "
         "in `errors`). The same description as OpenAPI 3.1: /api/schema/; as a web page: "
         "/api/docs/.\n";
  for (const auto& section : ref.sections) {
    out << "\n## " << section.name;
    if (!section.description.empty()) out << ": " << section.description;
    out << "\n";
    for (const auto& op : section.operations) {
      out << "\n"
          << op.method << " " << op.path << "/\n  " << op.summary << "\n  auth: " << op.auth
          << "\n";
      for (const auto& p : op.params) out << "  param " << fieldLine(p) << "\n";
      if (!op.body.empty()) out << "  body: " << op.body << "\n";
      for (const auto& [status, what] : op.answers) out << "  " << status << ": " << what << "\n";
      out << "  example: " << op.example << "\n";
    }
  }
  out << "\n## Events (the event stream's and webhooks' `data`)\n\n";
  for (const auto& [type, what] : ref.events) out << type << ": " << what << "\n";
  out << "\n## Shapes\n";
  for (const auto& shape : ref.shapes) {
    out << "\n"
        << shape.name << (shape.description.empty() ? "" : ": " + shape.description) << "\n";
    for (const auto& f : shape.fields) out << "  " << fieldLine(f) << "\n";
    if (!shape.other.empty()) out << "  " << shape.other << "\n";
  }
  return out.str();
}

std::string htmlReference(const ObjectPtr& openapi) {
  const Reference ref = read(openapi);
  std::ostringstream out;
  out << "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>"
      << sdk::htmlEscape(ref.title)
      << " — API reference</title><style>"
         "body{font:15px/1.5 system-ui,sans-serif;margin:0;display:flex}"
         "nav{width:16rem;height:100vh;overflow:auto;position:sticky;top:0;padding:1rem;"
         "background:#f4f4f6;flex:none}nav a{display:block;color:#333;text-decoration:none}"
         "main{padding:1rem 2rem;max-width:60rem}code,pre{font:13px ui-monospace,monospace}"
         "pre{background:#f4f4f6;padding:.5rem;overflow:auto;white-space:pre-wrap}"
         ".op{border-top:1px solid #ddd;padding:.5rem 0}.m{font-weight:bold;margin-right:.5rem}"
         "table{border-collapse:collapse}td{padding:.1rem .6rem .1rem 0;vertical-align:top}"
         "</style></head><body><nav><strong>"
      << sdk::htmlEscape(ref.title) << "</strong>";
  for (const auto& section : ref.sections) {
    out << "<a href=\"#" << anchor(section.name) << "\">" << sdk::htmlEscape(section.name)
        << "</a>";
  }
  out << "<a href=\"#events\">events</a><a href=\"#shapes\">shapes</a></nav><main><h1>"
      << sdk::htmlEscape(ref.title) << "</h1><p>Version " << sdk::htmlEscape(ref.version)
      << ", base URL <code>" << sdk::htmlEscape(ref.base_url) << "</code>. "
      << sdk::htmlEscape(ref.intro)
      << "</p><p>Machine-readable: <a href=\"/api/schema/\">OpenAPI 3.1</a>, "
         "<a href=\"/api/schema/reference.txt\">plain text</a>.</p>";
  for (const auto& section : ref.sections) {
    out << "<h2 id=\"" << anchor(section.name) << "\">" << sdk::htmlEscape(section.name) << "</h2>";
    if (!section.description.empty())
      out << "<p>" << sdk::htmlEscape(section.description) << "</p>";
    for (const auto& op : section.operations) {
      out << "<div class=\"op\" id=\"" << anchor(op.method + op.path) << "\"><p><span class=\"m\">"
          << sdk::htmlEscape(op.method) << "</span><code>" << sdk::htmlEscape(op.path)
          << "/</code> " << sdk::htmlEscape(op.summary) << "</p><table><tr><td>auth</td><td>"
          << sdk::htmlEscape(op.auth) << "</td></tr>";
      for (const auto& p : op.params) {
        out << "<tr><td>param</td><td>" << sdk::htmlEscape(fieldLine(p)) << "</td></tr>";
      }
      if (!op.body.empty())
        out << "<tr><td>body</td><td>" << sdk::htmlEscape(op.body) << "</td></tr>";
      for (const auto& [status, what] : op.answers) {
        out << "<tr><td>" << sdk::htmlEscape(status) << "</td><td>" << sdk::htmlEscape(what)
            << "</td></tr>";
      }
      out << "</table><pre>" << sdk::htmlEscape(op.example) << "</pre></div>";
    }
  }
  out << "<h2 id=\"events\">events</h2><table>";
  for (const auto& [type, what] : ref.events) {
    out << "<tr><td><code>" << sdk::htmlEscape(type) << "</code></td><td>" << sdk::htmlEscape(what)
        << "</td></tr>";
  }
  out << "</table><h2 id=\"shapes\">shapes</h2>";
  for (const auto& shape : ref.shapes) {
    out << "<h3 id=\"" << anchor(shape.name) << "\">" << sdk::htmlEscape(shape.name) << "</h3>";
    if (!shape.description.empty()) out << "<p>" << sdk::htmlEscape(shape.description) << "</p>";
    out << "<table>";
    for (const auto& f : shape.fields) {
      out << "<tr><td><code>" << sdk::htmlEscape(f.name) << "</code></td><td>"
          << sdk::htmlEscape(f.type + (f.required ? ", required" : "") +
                             (f.description.empty() ? "" : ". " + f.description))
          << "</td></tr>";
    }
    if (!shape.other.empty())
      out << "<tr><td colspan=\"2\">" << sdk::htmlEscape(shape.other) << "</td></tr>";
    out << "</table>";
  }
  out << "</main></body></html>\n";
  return out.str();
}

}  // namespace svc::kernel
