#include "openapi.h"

#include "response_check.h"

#include <Poco/Ascii.h>
#include <Poco/JSON/Array.h>
#include <Poco/String.h>

#include <map>
#include <set>

namespace svc::kernel {

namespace {

using Components = std::map<std::string, Poco::JSON::Object::Ptr>;
using Object = Poco::JSON::Object;
using ObjectPtr = Poco::JSON::Object::Ptr;

ObjectPtr object() {
  return new Object(Poco::JSON_PRESERVE_KEY_ORDER);
}

ObjectPtr ref(const std::string& where) {
  ObjectPtr o = object();
  o->set("$ref", where);
  return o;
}

ObjectPtr jsonContent(const ObjectPtr& schema, const std::string& media_type = "") {
  ObjectPtr media = object();
  media->set("schema", schema);
  ObjectPtr content = object();
  content->set(media_type.empty() ? "application/json" : media_type, media);
  return content;
}

// The kernel's own errors a route may answer, by what it declares and needs.
std::map<int, std::string> kernelErrors(const sdk::Route& route, bool has_path_params) {
  std::map<int, std::string> out;
  if (route.request || route.query || route.body != sdk::BodyKind::kAny) {
    out[400] = "`invalid`: a field or parameter does not fit (all named in `errors`)";
  }
  if (route.auth != sdk::AuthNeed::kNone) {
    out[401] = "`not_authenticated`: no accepted credential";
  }
  if (route.auth == sdk::AuthNeed::kAccount || route.auth == sdk::AuthNeed::kUser) {
    out[403] = "`permission_denied`: needs the account's key, not an identity's";
  }
  if (has_path_params || route.auth == sdk::AuthNeed::kAnyKey ||
      route.auth == sdk::AuthNeed::kIdentity) {
    out[404] = "`not_found`: no such resource in this account";
  }
  if (route.method != "GET" && route.method != "DELETE") {
    out[413] = "`payload_too_large`: the body is over the route's limit";
  }
  return out;
}

std::string describedPath(const std::string& pattern) {
  return pattern.size() > 1 && pattern.back() == '/' ? pattern.substr(0, pattern.size() - 1)
                                                     : pattern;
}

ObjectPtr parameter(const std::string& name, const std::string& in, bool required,
                    const std::string& description, const ObjectPtr& schema) {
  ObjectPtr p = object();
  p->set("name", name);
  p->set("in", in);
  p->set("required", required);
  if (!description.empty()) p->set("description", description);
  p->set("schema", schema);
  return p;
}

ObjectPtr operation(const RouteEntry& entry, Components& schemas) {
  const sdk::Route& route = entry.route;
  ObjectPtr op = object();
  op->set("operationId", operationId(route.method, route.pattern));
  op->set("summary", route.summary.empty() ? route.method + " " + route.pattern : route.summary);
  Poco::JSON::Array::Ptr tags = new Poco::JSON::Array;
  tags->add(entry.plugin);
  op->set("tags", tags);

  Poco::JSON::Array::Ptr params = new Poco::JSON::Array;
  const auto in_path = pathParams(route.pattern);
  for (const auto& name : in_path) {
    params->add(parameter(
        name, "path", true, "",
        (name == "uuid" ? sdk::Schema::string().format("uuid") : sdk::Schema::string()).json()));
  }
  if (route.auth == sdk::AuthNeed::kAnyKey || route.auth == sdk::AuthNeed::kIdentity) {
    params->add(ref("#/components/parameters/Identity"));
    params->add(ref("#/components/parameters/IdentityHeader"));
  }
  if (route.query) {
    for (const auto& p : *route.query) {
      params->add(parameter(p.name, "query", p.required, p.description, p.schema.json(&schemas)));
    }
  }
  if (params->size() > 0) op->set("parameters", params);

  if (route.request) {
    ObjectPtr body = object();
    body->set("required", true);
    body->set("content", jsonContent(route.request->json(&schemas)));
    op->set("requestBody", body);
  }

  ObjectPtr responses = object();
  for (const auto& [status, schema] : route.responses) {
    ObjectPtr r = object();
    r->set("description", status == 201   ? "Created."
                          : status == 204 ? "No content."
                          : status < 300  ? "OK."
                                          : "Failed: the body says why.");
    if (status != 204) r->set("content", jsonContent(schema.json(&schemas), schema.mediaType()));
    responses->set(std::to_string(status), r);
  }
  if (route.responses.empty()) {
    ObjectPtr r = object();
    r->set("description", "OK.");
    responses->set("200", r);
  }
  std::map<int, std::string> errors = kernelErrors(route, !in_path.empty());
  for (const auto& e : route.errors) {
    std::string& line = errors[e.status];
    line += (line.empty() ? "" : "; ") + ("`" + e.code + "`: " + e.when);
  }
  for (const auto& [status, text] : errors) {
    // A route that declares its own body for an error status (OAuth's shape) keeps it.
    const auto own = route.responses.find(status);
    ObjectPtr r = object();
    r->set("description", text);
    r->set("content",
           jsonContent(own != route.responses.end() ? own->second.json(&schemas)
                                                    : ref("#/components/schemas/Error")));
    responses->set(std::to_string(status), r);
  }
  op->set("responses", responses);

  Poco::JSON::Array::Ptr security = new Poco::JSON::Array;
  if (route.auth != sdk::AuthNeed::kNone) {
    ObjectPtr bearer = object();
    bearer->set("bearer", Poco::JSON::Array::Ptr(new Poco::JSON::Array));
    security->add(bearer);
  }
  op->set("security", security);
  return op;
}

ObjectPtr components(Components& schemas) {
  ObjectPtr c = object();
  ObjectPtr bearer = object();
  bearer->set("type", "http");
  bearer->set("scheme", "bearer");
  bearer->set("description",
              "A management key (`svc_mgmt_...`, the whole account), an identity key "
              "(`svc_id_...`, one identity), or an access token from the device login.");
  ObjectPtr schemes = object();
  schemes->set("bearer", bearer);
  c->set("securitySchemes", schemes);

  ObjectPtr parameters = object();
  const auto uuid = sdk::Schema::string().format("uuid").json();
  parameters->set("Identity",
                  parameter("identity", "query", false,
                            "The identity a management key acts for (an identity key is bound to "
                            "its own).",
                            uuid));
  parameters->set("IdentityHeader",
                  parameter("X-Svc-Identity", "header", false,
                            "The identity, as a header instead of `identity`.", uuid));
  c->set("parameters", parameters);

  ObjectPtr all = object();
  for (const auto& [name, schema] : schemas) all->set(name, schema);
  c->set("schemas", all);
  return c;
}

// An event of one type: the envelope, with `type` fixed and `object` as the type declares it.
sdk::Schema eventSchema(const std::string& name, const sdk::EventType* type) {
  std::string component;
  bool upper = true;
  for (const char c : name) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (word) component += upper ? static_cast<char>(Poco::Ascii::toUpper(c)) : c;
    upper = !word;
  }
  const sdk::Schema object =
      type && type->object ? *type->object
                           : sdk::Schema::object()
                                 .additional(sdk::Schema::any())
                                 .describe("The resource as its GET shows it, minus secrets.");
  return sdk::Schema::object(component + "Event")
      .required("id", sdk::Schema::string().format("uuid").describe("The event's id."))
      .required("type", sdk::Schema::oneOf({name}))
      .required("created_dt", sdk::Schema::string().format("date-time"))
      .required("account", sdk::Schema::string().format("uuid"))
      .required("identity", sdk::Schema::string().format("uuid").nullable())
      .required("object", object);
}

}  // namespace

std::string operationId(const std::string& method, const std::string& pattern) {
  std::string id = Poco::toLower(method);
  std::size_t at = 0;
  while (at < pattern.size()) {
    std::size_t end = pattern.find('/', at);
    if (end == std::string::npos) end = pattern.size();
    std::string segment = pattern.substr(at, end - at);
    at = end + 1;
    if (segment.empty() || (segment == "api" && id.find('_') == std::string::npos)) continue;
    if (segment.front() == '{') segment = "by_" + segment.substr(1, segment.size() - 2);
    for (char& c : segment) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) c = '_';
    }
    id += "_" + segment;
  }
  return id;
}

Poco::JSON::Object::Ptr openApiDocument(const Router& router, const EventTypeRegistry& events,
                                        const ApiInfo& info) {
  Components schemas;
  errorSchema().json(&schemas);
  ObjectPtr doc = object();
  doc->set("openapi", "3.1.0");
  ObjectPtr about = object();
  about->set("title", "svc: the agent identity service");
  about->set("version", info.version);
  about->set("description",
             "Every route of every plugin this server has enabled, and the events they publish. "
             "Every error answers the `Error` shape; lists answer `{count, next, previous, "
             "results}`. Every path also answers with a trailing slash, as the contract writes "
             "them.");
  ObjectPtr license = object();
  license->set("name", "Proprietary");
  license->set("identifier", "LicenseRef-Proprietary");
  about->set("license", license);
  doc->set("info", about);
  Poco::JSON::Array::Ptr servers = new Poco::JSON::Array;
  ObjectPtr server = object();
  server->set("url", info.base_url);
  servers->add(server);
  doc->set("servers", servers);

  ObjectPtr paths = object();
  std::set<std::string> plugins;
  for (const auto& entry : router.routes()) {
    const sdk::Route& route = entry->route;
    if (route.auth == sdk::AuthNeed::kOperator || !route.described) continue;
    plugins.insert(entry->plugin);
    // Named without the trailing slash the contract writes: every path answers with or without
    // it, and OpenAPI tools take the slash-less form as the canonical one.
    const std::string path = describedPath(route.pattern);
    ObjectPtr item = paths->has(path) ? paths->getObject(path) : object();
    item->set(Poco::toLower(route.method), operation(*entry, schemas));
    paths->set(path, item);
  }
  doc->set("paths", paths);

  // Every event type, as what a webhook receives (the stream's `data` is the same envelope).
  ObjectPtr hooks = object();
  for (const auto& name : events.names()) {
    const sdk::EventType* type = events.find(name);
    ObjectPtr op = object();
    op->set("operationId", "event_" + operationId("", name).substr(1));
    op->set("summary", type && !type->description.empty() ? type->description : name);
    Poco::JSON::Array::Ptr tags = new Poco::JSON::Array;
    tags->add(std::string("events"));
    op->set("tags", tags);
    ObjectPtr body = object();
    body->set("content", jsonContent(eventSchema(name, type).json(&schemas)));
    op->set("requestBody", body);
    // The receiver checks the delivery's signature, not a bearer credential of this API.
    op->set("security", Poco::JSON::Array::Ptr(new Poco::JSON::Array));
    ObjectPtr ok = object();
    ok->set("description", "Received.");
    ObjectPtr responses = object();
    responses->set("200", ok);
    op->set("responses", responses);
    ObjectPtr item = object();
    item->set("post", op);
    hooks->set(name, item);
  }
  doc->set("webhooks", hooks);

  doc->set("components", components(schemas));
  Poco::JSON::Array::Ptr tags = new Poco::JSON::Array;
  for (const auto& plugin : plugins) {
    ObjectPtr tag = object();
    tag->set("name", plugin);
    tag->set("description", plugin == "kernel" ? std::string("The server itself: health and the "
                                                             "event stream.")
                                               : "Routes of the `" + plugin + "` plugin.");
    tags->add(tag);
  }
  ObjectPtr events_tag = object();
  events_tag->set("name", "events");
  events_tag->set("description", "What the event stream and webhooks deliver.");
  tags->add(events_tag);
  doc->set("tags", tags);
  return doc;
}

std::vector<std::string> pathParams(const std::string& pattern) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = pattern.find('{', at)) != std::string::npos) {
    const std::size_t end = pattern.find('}', at);
    if (end == std::string::npos) break;
    out.push_back(pattern.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  return out;
}

}  // namespace svc::kernel
