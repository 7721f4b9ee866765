#include "mcp.h"

#include "pipeline.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/JSON/Stringifier.h>
#include <Poco/String.h>
#include <Poco/URI.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <sstream>

namespace svc::kernel {

namespace {

using Object = Poco::JSON::Object;
using ObjectPtr = Poco::JSON::Object::Ptr;
using Poco::JSON::Array;

// The protocol revisions this server speaks (all the same here: tools over one POST each).
const char* const kVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

// JSON-RPC 2.0 error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;

sdk::Response rpcResult(const Poco::Dynamic::Var& id, const Poco::Dynamic::Var& result) {
  ObjectPtr o = new Object;
  o->set("jsonrpc", "2.0");
  o->set("id", id);
  o->set("result", result);
  return sdk::Response::json(200, o);
}

sdk::Response rpcError(const Poco::Dynamic::Var& id, int code, const std::string& message,
                       int status = 200) {
  ObjectPtr error = new Object;
  error->set("code", code);
  error->set("message", message);
  ObjectPtr o = new Object;
  o->set("jsonrpc", "2.0");
  o->set("id", id);
  o->set("error", error);
  return sdk::Response::json(status, o);
}

// A tool's result: the route's answer as text (and as structured content when it is a JSON
// object), an error when the route answered one, so the model reads what went wrong. `held`:
// the route held the call (a wait), so an empty answer means its timeout passed with nothing.
ObjectPtr toolResult(const sdk::Response& answer, bool held = false) {
  std::string text = answer.body;
  ObjectPtr structured;
  if (held && answer.status == 204) {
    text = "Nothing arrived within the timeout (204). Call again to keep waiting.";
  } else if (answer.status == 204 || answer.body.empty()) {
    text = "Done (" + std::to_string(answer.status) + ", no content).";
  } else if (answer.content_type.rfind("application/json", 0) == 0) {
    try {
      Poco::JSON::Parser parser;
      const Poco::Dynamic::Var parsed = parser.parse(answer.body);
      if (parsed.type() == typeid(ObjectPtr)) structured = parsed.extract<ObjectPtr>();
    } catch (const Poco::Exception&) {
    }
  } else if (answer.content_type.rfind("text/", 0) != 0) {
    text = "(" + std::to_string(answer.body.size()) + " bytes of " + answer.content_type +
           "; fetch it over HTTP)";
  }
  ObjectPtr part = new Object;
  part->set("type", "text");
  part->set("text", text);
  Poco::JSON::Array::Ptr content = new Array;
  content->add(part);
  ObjectPtr result = new Object;
  result->set("content", content);
  if (structured) result->set("structuredContent", structured);
  result->set("isError", answer.status >= 400);
  return result;
}

ObjectPtr toolError(const std::string& text) {
  sdk::Response r = sdk::Response::text(400, text);
  return toolResult(r);
}

// A held route's Stream, seen from the route: its one answer becomes the tool call's result on
// the held MCP request. Streams that write a body (the event stream) are not tools. It refers to
// the hub's stream weakly: the hub owns that one, and that one's close callback owns this.
class ToolCallStream : public sdk::Stream {
 public:
  /// @param record records the route's answer in the access log and metrics (once).
  ToolCallStream(const std::shared_ptr<sdk::Stream>& outer, Poco::Dynamic::Var id,
                 std::function<void(int)> record)
      : outer_(outer), id_(std::move(id)), request_id_(outer->requestId()), record_(record) {}
  bool respond(const sdk::Response& response) override {
    auto outer = outer_.lock();
    if (!outer || !outer->respond(rpcResult(id_, toolResult(response, true)))) return false;
    recordOnce(response.status);
    return true;
  }
  bool begin(int status, const std::string&,
             const std::vector<std::pair<std::string, std::string>>&) override {
    if (auto outer = outer_.lock()) {
      if (outer->respond(rpcResult(id_, toolError("This route streams; call it over HTTP."))))
        recordOnce(status);
    }
    return false;
  }
  bool write(const std::string&) override { return false; }
  void finish() override {}
  bool isOpen() const override {
    auto outer = outer_.lock();
    return outer && outer->isOpen();
  }
  void onClose(std::function<void()> fn) override {
    if (auto outer = outer_.lock()) {
      outer->onClose(std::move(fn));
    } else {
      fn();
    }
  }
  void expireAfter(std::chrono::milliseconds delay, std::function<void()> fn) override {
    if (auto outer = outer_.lock()) outer->expireAfter(delay, std::move(fn));
  }
  const std::string& requestId() const override { return request_id_; }
  std::size_t queued() const override {
    auto outer = outer_.lock();
    return outer ? outer->queued() : 0;
  }

 private:
  void recordOnce(int status) {
    if (!recorded_.exchange(true) && record_) record_(status);
  }

  std::weak_ptr<sdk::Stream> outer_;
  Poco::Dynamic::Var id_;
  std::string request_id_;
  std::function<void(int)> record_;
  std::atomic<bool> recorded_{false};
};

bool takesBody(const sdk::Route& route) {
  return route.request ||
         (route.body != sdk::BodyKind::kAny && route.method != "GET" && route.method != "DELETE");
}

McpServer::Tool makeTool(const RouteEntry& entry) {
  const sdk::Route& route = entry.route;
  McpServer::Tool tool;
  tool.name = operationId(route.method, route.pattern);
  tool.entry = &entry;
  ObjectPtr properties = new Object(Poco::JSON_PRESERVE_KEY_ORDER);
  Poco::JSON::Array::Ptr required = new Array;
  for (const auto& name : pathParams(route.pattern)) {
    tool.path_params.push_back(name);
    sdk::Schema s = name == "uuid" ? sdk::Schema::string().format("uuid") : sdk::Schema::string();
    properties->set(name, s.minLength(1).describe("In the path.").json());
    required->add(name);
  }
  if (route.auth == sdk::AuthNeed::kAnyKey || route.auth == sdk::AuthNeed::kIdentity) {
    properties->set("identity",
                    sdk::Schema::string()
                        .format("uuid")
                        .describe("The identity to act for (a management key); an identity key "
                                  "acts for its own.")
                        .json());
  }
  if (route.query) {
    for (const auto& p : *route.query) {
      tool.query_params.push_back(p.name);
      sdk::Schema s = p.schema;
      if (!p.description.empty()) s.describe(p.description);
      properties->set(p.name, s.json());
      if (p.required) required->add(p.name);
    }
  }
  if (takesBody(route)) {
    // An undeclared body (a plugin's route not yet declared) is described as any object.
    properties->set("body", route.request
                                ? route.request->json()
                                : sdk::Schema::object().additional(sdk::Schema::any()).json());
    required->add(std::string("body"));
  }
  ObjectPtr input = new Object(Poco::JSON_PRESERVE_KEY_ORDER);
  input->set("type", "object");
  input->set("properties", properties);
  if (required->size() > 0) input->set("required", required);
  input->set("additionalProperties", false);

  ObjectPtr annotations = new Object;
  annotations->set("readOnlyHint", route.method == "GET");
  annotations->set("destructiveHint", route.method == "DELETE");
  annotations->set("idempotentHint", route.method != "POST" && route.method != "PATCH");
  annotations->set("openWorldHint", false);

  tool.json = new Object(Poco::JSON_PRESERVE_KEY_ORDER);
  tool.json->set("name", tool.name);
  tool.json->set("description", (route.summary.empty() ? std::string() : route.summary + " ") +
                                    "(" + route.method + " " + route.pattern + ")");
  tool.json->set("inputSchema", input);
  tool.json->set("annotations", annotations);
  return tool;
}

std::string queryText(const Poco::Dynamic::Var& v) {
  if (v.isBoolean()) return v.convert<bool>() ? "true" : "false";
  return v.convert<std::string>();
}

}  // namespace

McpServer::McpServer(const Router& router, ApiInfo info)
    : router_(router), info_(std::move(info)) {}

const std::vector<McpServer::Tool>& McpServer::tools() {
  // Routes are fixed once svcd serves.
  std::call_once(tools_once_, [this] {
    for (const auto& entry : router_.routes()) {
      const sdk::Route& route = entry->route;
      // The kernel's own routes (description, health, the event stream) are not tools.
      const bool tool = route.described && entry->plugin != "kernel" &&
                        route.auth != sdk::AuthNeed::kNone &&
                        route.auth != sdk::AuthNeed::kOperator;
      if (tool) tools_.push_back(makeTool(*entry));
    }
  });
  return tools_;
}

sdk::Response McpServer::handle(sdk::Request& r) {
  // The route takes the body unparsed, so that every malformed message is answered in
  // JSON-RPC's shape rather than the REST API's.
  if (r.content_type != "application/json") {
    return rpcError(Poco::Dynamic::Var(), kInvalidRequest,
                    "Send one JSON-RPC message as application/json.", 415);
  }
  Poco::Dynamic::Var parsed;
  try {
    if (!sdk::isValidUtf8(r.body)) throw Poco::DataFormatException("not UTF-8");
    // Poco's parser takes only an object or an array as the whole text: wrapped in an array, a
    // scalar (`null`, `1`) parses too, and is then refused as a request rather than as JSON.
    Poco::JSON::Parser parser;
    parser.setDepth(65);
    const auto wrapped = parser.parse("[" + r.body + "]").extract<Poco::JSON::Array::Ptr>();
    if (!wrapped || wrapped->size() != 1) throw Poco::DataFormatException("not one JSON text");
    parsed = wrapped->get(0);
  } catch (const Poco::Exception&) {
    return rpcError(Poco::Dynamic::Var(), kParseError, "The body is not valid JSON.", 400);
  }
  if (parsed.type() == typeid(Poco::JSON::Array::Ptr)) {
    return rpcError(Poco::Dynamic::Var(), kInvalidRequest,
                    "Batches are not supported (protocol 2025-06-18 and later): send one message "
                    "per request.",
                    400);
  }
  const ObjectPtr m =
      parsed.type() == typeid(ObjectPtr) ? parsed.extract<ObjectPtr>() : ObjectPtr();
  Poco::Dynamic::Var id;
  if (m && m->has("id")) {
    id = m->get("id");
    // A request's id is a string or a number (JSON-RPC 2.0); anything else is answered with null.
    if (!id.isString() && !id.isNumeric()) id = Poco::Dynamic::Var();
  }
  const auto text = [&](const char* field) { return m->has(field) && m->get(field).isString(); };
  if (!m || !text("jsonrpc") || m->getValue<std::string>("jsonrpc") != "2.0" || !text("method") ||
      (m->has("id") && id.isEmpty())) {
    return rpcError(id, kInvalidRequest, "Not a JSON-RPC 2.0 request.", 400);
  }
  const std::string method = m->getValue<std::string>("method");
  // A notification (no id) or a client's answer: accepted, nothing to say.
  if (!m->has("id")) return sdk::Response::text(202, "", "application/json");
  if (method == "tools/call" && m->has("params") && !m->isObject("params")) {
    return rpcError(id, kInvalidParams, "tools/call takes `params` as an object.");
  }
  const ObjectPtr params =
      m->has("params") && m->isObject("params") ? m->getObject("params") : ObjectPtr(new Object);
  if (method == "initialize") {
    std::string version = "2025-06-18";
    const std::string asked = params->optValue<std::string>("protocolVersion", "");
    if (std::find(std::begin(kVersions), std::end(kVersions), asked) != std::end(kVersions)) {
      version = asked;
    }
    ObjectPtr tools = new Object;
    tools->set("listChanged", false);
    ObjectPtr capabilities = new Object;
    capabilities->set("tools", tools);
    ObjectPtr server = new Object;
    server->set("name", "svc");
    server->set("version", info_.version);
    ObjectPtr result = new Object;
    result->set("protocolVersion", version);
    result->set("capabilities", capabilities);
    result->set("serverInfo", server);
    result->set("instructions",
                "Each tool is one route of this server's REST API (its name is the route's "
                "operationId in " +
                    info_.base_url +
                    "/api/schema/). A management key acts for the whole account: pass "
                    "`identity` to act for one identity. An identity key acts for its own.");
    return rpcResult(id, result);
  }
  if (method == "ping") return rpcResult(id, ObjectPtr(new Object));
  if (method == "tools/list") {
    Poco::JSON::Array::Ptr list = new Array;
    for (const auto& t : tools()) list->add(t.json);
    ObjectPtr result = new Object;
    result->set("tools", list);
    return rpcResult(id, result);
  }
  if (method == "tools/call") return call(params, r, id);
  return rpcError(id, kMethodNotFound,
                  "No method '" + method.substr(0, 64) +
                      "'; this server offers initialize, ping, tools/list "
                      "and tools/call.");
}

sdk::Response McpServer::call(const ObjectPtr& params, sdk::Request& outer,
                              const Poco::Dynamic::Var& id) {
  const std::string name = params->optValue<std::string>("name", "");
  const auto& all = tools();
  auto tool = std::find_if(all.begin(), all.end(), [&](const Tool& t) { return t.name == name; });
  if (tool == all.end()) {
    return rpcError(id, kInvalidParams, "No tool '" + name.substr(0, 64) + "' (tools/list).");
  }
  if (!runtime_) return rpcError(id, kInternalError, "The server is not ready.");
  // Absent: the tool takes no arguments. Anything but an object is refused before the tool
  // runs, never read as `{}`.
  if (params->has("arguments") && !params->isObject("arguments")) {
    return rpcError(id, kInvalidParams, "`arguments` must be an object of the tool's arguments.");
  }
  const ObjectPtr args =
      params->has("arguments") ? params->getObject("arguments") : ObjectPtr(new Object);
  const sdk::Route& route = tool->entry->route;
  sdk::Request req;
  req.method = route.method;
  req.path = route.pattern;
  std::vector<std::string> unknown;  // every one is named at once, as REST names every field
  for (const auto& [key, value] : *args) {
    const bool in_path = std::find(tool->path_params.begin(), tool->path_params.end(), key) !=
                         tool->path_params.end();
    const bool in_query =
        key == "identity" || std::find(tool->query_params.begin(), tool->query_params.end(), key) !=
                                 tool->query_params.end();
    if (in_path) {
      if (!value.isString() || value.toString().empty()) {
        return rpcResult(id, toolError("`" + key + "` must be a non-empty string."));
      }
      std::string encoded;
      Poco::URI::encode(value.toString(), "/?#%", encoded);
      const std::string placeholder = "{" + key + "}";
      req.path.replace(req.path.find(placeholder), placeholder.size(), encoded);
    } else if (in_query) {
      if (!value.isEmpty()) req.query.emplace(key, queryText(value));
    } else if (key == "body" && takesBody(route)) {
      std::ostringstream text;
      Poco::JSON::Stringifier::condense(value, text);
      req.body = text.str();
      req.content_type = "application/json";
    } else {
      unknown.push_back("`" + key.substr(0, 64) + "`");
    }
  }
  if (!unknown.empty()) {
    std::string named;
    for (std::size_t i = 0; i < unknown.size() && i < 20; ++i) {
      named += (i == 0 ? "" : ", ") + unknown[i];
    }
    if (unknown.size() > 20) named += " and " + std::to_string(unknown.size() - 20) + " more";
    return rpcResult(id, toolError(std::string(unknown.size() == 1 ? "Unknown argument "
                                                                   : "Unknown arguments ") +
                                   named + "; this tool takes what its inputSchema lists."));
  }
  if (req.path.find('{') != std::string::npos) {
    return rpcResult(id, toolError("Missing a path argument: " + route.pattern + "."));
  }
  for (const char* header : {"authorization", "x-svc-identity"}) {
    if (auto v = outer.header(header)) req.headers[header] = *v;
  }
  req.request_id = outer.request_id;
  req.client_address = outer.client_address;
  req.base_url = outer.base_url;
  std::function<void(int)> record;
  sdk::Response answer = Pipeline(*runtime_).dispatchInner(req, record);
  if (answer.on_hold) {
    // A route that holds its answer (a wait) holds the tool call: no thread waits for it.
    return sdk::Response::hold(
        [inner = std::move(answer.on_hold), id, record](std::shared_ptr<sdk::Stream> stream) {
          auto tool = std::make_shared<ToolCallStream>(stream, id, record);
          stream->onClose([tool] {});  // lives as long as the held request
          try {
            inner(tool);
          } catch (const std::exception&) {
            tool->respond(sdk::Response::text(500, "The server failed to answer this tool call."));
          }
        });
  }
  sdk::Response result = rpcResult(id, toolResult(answer));
  // What the route keeps from caches (a password, a secret, a key) its tool result carries too.
  const bool no_store =
      std::any_of(answer.headers.begin(), answer.headers.end(), [](const auto& h) {
        return Poco::icompare(h.first, "Cache-Control") == 0 &&
               h.second.find("no-store") != std::string::npos;
      });
  return no_store ? sdk::Response::noStore(std::move(result)) : result;
}

void addMcpRoutes(Router& router, McpServer& mcp) {
  sdk::Route route{"POST",
                   "/mcp/",
                   sdk::AuthNeed::kAnyKey,
                   sdk::BodyKind::kAny,
                   0,
                   "Model Context Protocol (Streamable HTTP): every route as a tool.",
                   [&mcp](sdk::Request& r) { return mcp.handle(r); }};
  route.described = false;  // JSON-RPC, described by the protocol, not by OpenAPI
  router.add(std::move(route), "kernel");
}

}  // namespace svc::kernel
