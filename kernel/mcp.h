// A Model Context Protocol server at /mcp (Streamable HTTP transport, JSON-RPC 2.0): every
// declared route of every enabled plugin is a tool, its input schema made of the route's path
// parameters, query parameters and body. A call runs the route through the pipeline with the
// caller's own credential, so an identity key reaches exactly what it reaches over REST, and a
// route that holds its answer (a wait) holds the tool call the same way: no thread.
//
// Stateless: no session id, no server-to-client stream (GET answers 405, which the transport
// allows).
#pragma once

#include "openapi.h"
#include "router.h"
#include "runtime.h"

#include <svc/sdk/http.h>

#include <Poco/JSON/Object.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace svc::kernel {

class McpServer {
 public:
  /// @param router the API's routes (read when tools are first listed). @param info the server.
  McpServer(const Router& router, ApiInfo info);
  /// @param runtime the API listener's runtime, which tool calls are dispatched through.
  void setRuntime(Runtime* runtime) { runtime_ = runtime; }
  /// POST /mcp: one JSON-RPC message.
  sdk::Response handle(sdk::Request& r);

  struct Tool {
    std::string name;
    const RouteEntry* entry = nullptr;
    std::vector<std::string> path_params, query_params;
    Poco::JSON::Object::Ptr json;  ///< as tools/list shows it
  };

 private:
  const std::vector<Tool>& tools();
  /// tools/call: runs the tool's route. @return the JSON-RPC answer, or a held one.
  sdk::Response call(const Poco::JSON::Object::Ptr& params, sdk::Request& outer,
                     const Poco::Dynamic::Var& id);

  const Router& router_;
  ApiInfo info_;
  Runtime* runtime_ = nullptr;
  std::once_flag tools_once_;
  std::vector<Tool> tools_;
};

/// Adds POST and GET /mcp/ to router; mcp must outlive it.
void addMcpRoutes(Router& router, McpServer& mcp);

}  // namespace svc::kernel
